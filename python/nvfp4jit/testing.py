"""Test data and references for the torch layer (needs torch; generate_input needs a GPU).

generate_input follows the public problem's description: A and B bytes whose nibbles keep
the sign bit and the two low bits (values 0, +-0.5, +-1, +-1.5), scales drawn from {1, 2},
C filled with random fp16, the scales given both row-major on the CPU and in the blocked
layout as a (32, 4, rest_m, 4, rest_k, 1) view. reference() decodes every value by the data
contract and multiplies in float64 (exact for these ranges), rounding once to fp16.
"""
from __future__ import annotations

import torch

__all__ = ["generate_input", "to_blocked", "reference", "E2M1"]

#: e2m1 code -> value (bit 3 is the sign)
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _cdiv(a, b):
    return -(-a // b)


def to_blocked(sf):
    """Row-major (rows, K/16) scales -> the cuBLAS blocked layout as a flat tensor of
    ceil(rows/128)*128 * ceil(K/64)*4 elements (zero padded):
    ((r/128)*(cols4/4) + j/4)*512 + (r%32)*16 + ((r%128)/32)*4 + j%4."""
    rows, cols = sf.shape
    rp, cp = _cdiv(rows, 128) * 128, _cdiv(cols, 4) * 4
    pad = torch.zeros((rp, cp), dtype=sf.dtype, device=sf.device)
    pad[:rows, :cols] = sf
    # (rb, 4 row quarters, 32 rows, cb, 4 cols) -> (rb, cb, 32, 4 quarters, 4 cols)
    return pad.view(rp // 128, 4, 32, cp // 4, 4).permute(0, 3, 2, 1, 4).reshape(-1)


def _reordered(sf):
    """The blocked layout as the public problem hands it over: a (32, 4, rest, 4, rest_k, 1)
    view of memory ordered (1, rest, rest_k, 32, 4, 4)."""
    rows, cols = sf.shape
    flat = to_blocked(sf)
    return flat.view(1, _cdiv(rows, 128), _cdiv(cols, 4), 32, 4, 4).permute(3, 4, 1, 5, 2, 0)


def generate_input(m, n, k, g, seed, device="cuda"):
    """The public problem's data tuple for groups of sizes (m[i], n[i], k[i])."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    abc, sf, sf_re, sizes = [], [], [], []
    for i in range(g):
        mi, ni, ki = int(m[i]), int(n[i]), int(k[i])

        def fp4(rows):
            x = torch.randint(0, 256, (1, rows, ki // 2), dtype=torch.uint8, generator=gen)
            x = (x & 0b1011_1011).to(device)
            return x.permute(1, 2, 0).view(torch.float4_e2m1fn_x2)

        def scales(rows):
            s = torch.randint(1, 3, (rows, ki // 16), dtype=torch.int8, generator=gen)
            return s.to(torch.float8_e4m3fn)

        a, b = fp4(mi), fp4(ni)
        c = torch.randn((1, mi, ni), generator=gen).to(torch.float16).to(device).permute(1, 2, 0)
        sfa, sfb = scales(mi), scales(ni)
        abc.append((a, b, c))
        sf.append((sfa.unsqueeze(2), sfb.unsqueeze(2)))
        sf_re.append((_reordered(sfa.to(device)), _reordered(sfb.to(device))))
        sizes.append((mi, ni, ki, 1))
    return abc, sf, sf_re, sizes


def _decode(x, sf):
    """(rows, K/2) e2m1 bytes and (rows, K/16) e4m3 scales -> float64 (rows, K)."""
    t = torch.tensor(E2M1, dtype=torch.float64, device=x.device)
    u = x.view(torch.uint8)
    v = torch.stack((t[(u & 15).long()], t[(u >> 4).long()]), dim=-1)
    v = v.reshape(u.shape[0], 2 * u.shape[1])
    s = sf.to(x.device).to(torch.float32).to(torch.float64)
    return v * s.repeat_interleave(16, dim=1)


def reference(data):
    """fp16 outputs of the public problem's data tuple, computed in float64 from the row-major
    scales (the tuple's second element), independent of the blocked layout."""
    abc, sf, _, _ = data
    out = []
    for (a, b, _c), (sfa, sfb) in zip(abc, sf):
        A = _decode(a[:, :, 0], sfa[:, :, 0])
        B = _decode(b[:, :, 0], sfb[:, :, 0])
        out.append((A @ B.T).to(torch.float16))
    return out
