"""The torch layer: grouped_gemm over lists of tensors, Plan for repeated calls, tune, and the
custom ops torch.ops.nvfp4jit.grouped_gemm / grouped_gemm_out (with fake implementations, so
torch.compile traces them). Launches go on torch's current CUDA stream."""
from __future__ import annotations

import array
import ctypes
import weakref
from typing import List

import torch

from . import _lib, Context, Error, _arch, _vformat, _vparse, default_context

__all__ = ["grouped_gemm", "Plan", "tune", "Weights", "MoEPlan"]

_BYTE_DTYPES = {torch.uint8, torch.int8}
for _n in ("float4_e2m1fn_x2", "float8_e4m3fn"):
    if hasattr(torch, _n):
        _BYTE_DTYPES.add(getattr(torch, _n))
_FP16 = (torch.float16,)
# Test hook: False lets CPU tensors through (the tests' CPU simulation of a launch).
_REQUIRE_CUDA = True
_INVALID = 2  # NVFP4JIT_ERR_INVALID_PROBLEM
_ARCH_OF_CC = {(9, 0): 90, (10, 0): 100}


def _bad(g, msg):
    return Error(_INVALID, f"group {g}: {msg}")


def _rows(t, g, name, dtypes):
    """(ptr, rows, cols) of a row-major 2-D tensor, or an (R, C, 1) one as the public problem's
    tensors are; no views are made (this runs per tensor per call)."""
    shape = t.shape
    st = t.stride()
    nd = len(shape)
    if nd == 3 and shape[2] == 1:
        nd = 2
    if nd != 2:
        raise _bad(g, f"{name} has shape {tuple(shape)}; expected (rows, cols) or (rows, cols, 1)")
    if _REQUIRE_CUDA and not t.is_cuda:
        raise _bad(g, f"{name} is not a CUDA tensor")
    if t.dtype not in dtypes:
        raise _bad(g, f"{name} has dtype {t.dtype}")
    r, c = shape[0], shape[1]
    if (c > 1 and st[1] != 1) or (r > 1 and st[0] != c):
        raise _bad(g, f"{name} is not row-major contiguous (strides {tuple(st)})")
    return t.data_ptr(), r, c


def _scales(t, g, name, rows, k):
    """The data pointer of a scale tensor in the blocked layout: any contiguous byte tensor of
    at least ceil(rows/128)*128 * ceil(K/64)*4 bytes (e.g. testing.to_blocked()'s output), or
    the public problem's reordered (32, 4, rest_m, 4, rest_k, 1) view of that same memory
    (strides (16, 4, rest_k*512, 1, 512, any))."""
    rb, cb = -(-rows // 128), -(-k // 64)
    shape = t.shape
    if len(shape) == 6 and shape[0] == 32 and shape[1] == 4 and shape[3] == 4:
        st = t.stride()
        if (shape[2] < rb or shape[4] < cb or shape[5] != 1
                or st[:5] != (16, 4, shape[4] * 512, 1, 512)):
            raise _bad(g, f"{name}: a (32, 4, rest, 4, rest_k, 1) scale view must be the "
                          f"blocked layout of at least {rows} rows and K={k} "
                          f"(got shape {tuple(shape)}, strides {tuple(st)})")
    elif not t.is_contiguous():
        raise _bad(g, f"{name} is not contiguous in the blocked scale layout")
    elif t.numel() < rb * 128 * cb * 4:
        raise _bad(g, f"{name} has {t.numel()} bytes; the blocked layout of {rows} rows and "
                      f"K={k} needs {rb * 128 * cb * 4}")
    if _REQUIRE_CUDA and not t.is_cuda:
        raise _bad(g, f"{name} is not a CUDA tensor")
    if t.dtype not in _BYTE_DTYPES:
        raise _bad(g, f"{name} has dtype {t.dtype}; expected float8_e4m3fn or uint8")
    return t.data_ptr()


def _bucket(m):
    if m <= 0:
        return 0
    if m <= 8:
        return 8
    return 1 << (m - 1).bit_length()


def _groups(a, b, sfa, sfb, out):
    """Validate the lists and make (values for nvfp4jit_group[], shapes, outs). out may be None
    (allocated here, fp16 (M, N))."""
    G = len(a)
    if not (len(b) == G and len(sfa) == G and len(sfb) == G and (out is None or len(out) == G)):
        raise Error(1, f"a, b, sfa, sfb{'' if out is None else ', out'} must be lists of the "
                       f"same length (got {len(a)}, {len(b)}, {len(sfa)}, {len(sfb)}"
                       f"{'' if out is None else ', %d' % len(out)})")
    if G == 0:
        raise Error(_INVALID, "no groups")
    vals, shapes, outs = [], [], []
    for g in range(G):
        pa, m, k2 = _rows(a[g], g, "a", _BYTE_DTYPES)
        pb, n, kb = _rows(b[g], g, "b", _BYTE_DTYPES)
        if kb != k2:
            raise _bad(g, f"a has K/2={k2} bytes per row, b has {kb}")
        k = 2 * k2
        if out is None:
            cg = torch.empty((m, n), dtype=torch.float16, device=a[g].device)
            pc = cg.data_ptr()
        else:
            cg = out[g]
            pc, mc, nc = _rows(cg, g, "out", _FP16)
            if mc != m or nc != n:
                raise _bad(g, f"out has shape {tuple(cg.shape)}; expected ({m}, {n})")
        outs.append(cg)
        if m:
            vals += (m, n, k, pa, pb, _scales(sfa[g], g, "sfa", m, k),
                     _scales(sfb[g], g, "sfb", n, k), pc)
        else:  # M = 0: nothing is read
            vals += (0, n, k, 0, 0, 0, 0, 0)
        shapes.append((m, n, k))
    return vals, shapes, outs


_arch_of_device = {}  # device index -> arch (asked once per device)


def _device_arch(device):
    idx = device.index if isinstance(device, torch.device) else device
    a = _arch_of_device.get(idx) if idx is not None else None
    if a is not None:
        return a
    cc = torch.cuda.get_device_capability(device)
    a = _ARCH_OF_CC.get(cc)
    if a is None:
        raise Error(12, f"device {device} has compute capability {cc[0]}.{cc[1]}; nvfp4jit "
                        "runs on 9.0 (sm_90a) and 10.0 (sm_100a)")
    if idx is not None:
        _arch_of_device[idx] = a
    return a


class Plan:
    """A plan for one problem signature (group count, N and K per group, chosen for the M
    sizes given): choose a variant (tuned entry, forced `variant`, or the heuristic), compile
    it, then run() it as often as needed with other tensors of the same N and K (M may change).
    One launch per run() on torch's current stream (or `stream`); CUDA-graph capturable (each
    capture records its own problem). Runs of one plan must not execute concurrently (one
    stream, or ordered streams); a graph captured from a plan reads copies the plan owns, so
    keep the Plan open while such a graph may be replayed.

    shapes: [(M, N, K), ...] or the a/b tensors are given to run(); arch: None = the device's.
    """

    def __init__(self, shapes, arch=None, variant=None, device=None, ctx: Context = None):
        self._ctx = ctx or default_context()
        self._h = ctypes.c_void_p()
        if arch is None:
            arch = _device_arch(torch.device("cuda", device) if isinstance(device, int)
                                else (device or torch.device("cuda")))
        self.arch = _arch(arch)
        arr = (_lib.Group * len(shapes))()
        for g, s in zip(arr, shapes):
            g.m, g.n, g.k = (int(x) for x in s)
        self.num_groups = len(shapes)
        force = ctypes.byref(_vparse(variant)) if variant else None
        self._ctx._check(_lib.nvfp4jit_plan_create(self._ctx._h, self.arch, arr, len(arr),
                                                   force, ctypes.byref(self._h)))
        ch = ctypes.c_int()
        self.variant = _vformat(_lib.nvfp4jit_plan_variant(self._h, ctypes.byref(ch)).contents)
        self.choice = _lib.CHOICE.get(ch.value, str(ch.value))
        self._run = _lib.nvfp4jit_plan_run
        self._captured = False  # a cached plan run under capture is never closed early
        self._ctx._live_plans.add(self)

    def __repr__(self):
        return f"<nvfp4jit.Plan {self.variant} ({self.choice}), {self.num_groups} groups>"

    def close(self):
        """Free the plan (the caller makes sure no launch of it is still running)."""
        if self._h.value and self._ctx._h.value:  # a closed context took its plans along
            _lib.nvfp4jit_plan_destroy(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def run_groups(self, vals, stream=None):
        """Launch on raw groups: vals is a flat sequence of 8 integers per group (m, n, k, a,
        b, sfa, sfb, c device addresses), as nvfp4jit_group. No tensor checks."""
        buf = vals if isinstance(vals, array.array) else array.array("q", vals)
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        st = self._run(self._h, buf.buffer_info()[0], len(buf) // 8, stream)
        if st:
            self._ctx._check(st)

    def bind(self, a, b, sfa, sfb, out=None):
        """Validate these tensors once and return a launcher: calling it (optionally with a
        stream) launches the plan on them again with no per-tensor work, the cheapest call for
        static buffers that are rewritten in place (an engine's MoE layer, a CUDA graph's
        inputs). The launcher keeps the tensors alive; its .outputs are the outputs."""
        vals, _, outs = _groups(a, b, sfa, sfb, out)
        buf = array.array("q", vals)
        keep = (list(a), list(b), list(sfa), list(sfb), outs)
        addr, n, run, h, current = (buf.buffer_info()[0], len(buf) // 8, self._run, self._h,
                                    torch.cuda.current_stream)

        def launch(stream=None):
            st = run(h, addr, n, current().cuda_stream if stream is None else stream)
            if st:
                self._ctx._check(st)
            return outs

        launch.outputs, launch.plan, launch._keep, launch._buf = outs, self, keep, buf
        return launch

    def run(self, a, b, sfa, sfb, out=None, stream=None):
        """C[g] = A[g] * B[g]^T for every group. a, b: (M, K/2) / (N, K/2) byte tensors
        (uint8, or float4_e2m1fn_x2 views; a trailing dimension of 1 is accepted); sfa, sfb:
        the blocked scale layout (see _scales); out: fp16 (M, N) tensors or None (allocated).
        @return the list of outputs."""
        vals, _, outs = _groups(a, b, sfa, sfb, out)
        self.run_groups(vals, stream)
        return outs


_MAX_PLANS = 64


def _cached_plan(ctx, arch, shapes, variant, device, stream):
    """The context's plan for this key (made on first use; the oldest of more than
    _MAX_PLANS is closed after a device synchronisation)."""
    key = (arch, variant, device.index, stream,
           tuple((_bucket(m), n, k) for (m, n, k) in shapes))
    cache = ctx._plan_cache
    p = cache.get(key)
    if p is None:
        p = Plan(shapes, arch=arch, variant=variant, ctx=ctx)
        cache[key] = p
        if len(cache) > _MAX_PLANS:
            old = cache.pop(next(iter(cache)))
            if not old._captured:  # (a captured one stays pinned on the context)
                torch.cuda.synchronize()  # the evicted plan may still be running
                old.close()
    return p


def _note_capture(ctx, p):
    """A cached plan run on a capturing stream: graphs read copies it owns, so pin it on the
    context (never evicted, never closed by tune())."""
    if not p._captured and torch.cuda.is_current_stream_capturing():
        p._captured = True
        ctx._pinned_plans.append(p)


def grouped_gemm(a, b, sfa, sfb, out=None, *, arch=None, variant=None, ctx: Context = None):
    """One grouped NVFP4 GEMM launch on torch's current stream: out[g] = a[g] @ b[g]^T with
    the block scales (the data contract of nvfp4jit.h). Lists of tensors per group; out None:
    fp16 (M, N) outputs are allocated. Plans are cached per (arch, variant, device, stream,
    signature (bucket(M), N, K) per group) in the context. @return the outputs."""
    ctx = ctx or default_context()
    vals, shapes, outs = _groups(a, b, sfa, sfb, out)
    dev = next((t.device for t in a if t.is_cuda), torch.device("cuda"))
    if arch is None:
        arch = _device_arch(dev)
    if dev.index is not None and dev.index != torch.cuda.current_device():
        with torch.cuda.device(dev):
            return grouped_gemm(a, b, sfa, sfb, out if out is not None else outs, arch=arch,
                                variant=variant, ctx=ctx)
    stream = torch.cuda.current_stream().cuda_stream
    p = _cached_plan(ctx, _arch(arch), shapes, variant, dev, stream)
    p.run_groups(vals, stream)
    _note_capture(ctx, p)
    return outs


class TuneResult:
    """What tune() found: best (variant name), best_us, results (a list of dicts, the
    heuristic's order: variant, heuristic_rank, est_us, median_us, min_us, status, winner)."""

    def __init__(self, best, best_us, results):
        self.best, self.best_us, self.results = best, best_us, results

    def __repr__(self):
        return f"<nvfp4jit.TuneResult {self.best} {self.best_us:.2f} us>"


def tune(a, b, sfa, sfb, out=None, *, arch=None, candidates=0, time_limit_s=0.0, iters=0,
         warmup=0, jobs=0, verbose=False, store=True, ctx: Context = None):
    """Autotune the problem set given by these tensors on the current device (nvfp4jit_tune):
    compile and time the heuristic's best `candidates`, check the winner against the CPU
    reference and (store=True) keep it in the tuning database, so later plans and
    grouped_gemm calls of the same signature use it. out IS OVERWRITTEN. @return TuneResult."""
    ctx = ctx or default_context()
    vals, shapes, outs = _groups(a, b, sfa, sfb, out)
    dev = outs[0].device
    arch = _arch(arch) if arch is not None else _device_arch(dev)
    buf = array.array("q", vals)
    cap = max(int(candidates) or 12, 1) + 4  # + NVFP4JIT_TUNE_MAX_EXTRA (the act16sk twins)
    res = (_lib.TuneResult * cap)()
    count = ctypes.c_size_t()
    opt = _lib.TuneOptions(int(candidates), float(time_limit_s), int(iters), int(warmup),
                           int(jobs), 0, 1 if verbose else 0, 0 if store else 1,
                           ctypes.cast(res, ctypes.POINTER(_lib.TuneResult)), cap,
                           ctypes.pointer(count))
    best, best_us = _lib.Variant(), ctypes.c_double()
    torch.cuda.synchronize(dev)
    with torch.cuda.device(dev):
        ctx._check(_lib.nvfp4jit_tune(ctx._h, arch, buf.buffer_info()[0], len(shapes),
                                      ctypes.byref(opt), ctypes.byref(best),
                                      ctypes.byref(best_us)))
    results = [dict(variant=_vformat(r.variant), heuristic_rank=r.heuristic_rank,
                    est_us=r.est_us, median_us=r.median_us, min_us=r.min_us,
                    status=_lib.STATUS.get(r.status, r.status), winner=bool(r.winner))
               for r in res[:min(count.value, cap)]]
    # cached plans of this context may have another variant now (other contexts keep theirs)
    torch.cuda.synchronize(dev)
    for p in ctx._plan_cache.values():
        if not p._captured:
            p.close()
    ctx._plan_cache.clear()
    return TuneResult(_vformat(best), best_us.value, results)


# ---- custom ops (torch.compile traces them through their fake implementations) ----------------
@torch.library.custom_op("nvfp4jit::grouped_gemm", mutates_args=())
def _op_grouped_gemm(a: List[torch.Tensor], b: List[torch.Tensor], sfa: List[torch.Tensor],
                     sfb: List[torch.Tensor]) -> List[torch.Tensor]:
    return grouped_gemm(a, b, sfa, sfb)


@_op_grouped_gemm.register_fake
def _(a, b, sfa, sfb):
    return [x.new_empty((x.shape[0], y.shape[0]), dtype=torch.float16) for x, y in zip(a, b)]


@torch.library.custom_op("nvfp4jit::grouped_gemm_out", mutates_args=("out",))
def _op_grouped_gemm_out(a: List[torch.Tensor], b: List[torch.Tensor], sfa: List[torch.Tensor],
                         sfb: List[torch.Tensor], out: List[torch.Tensor]) -> None:
    grouped_gemm(a, b, sfa, sfb, out)


@_op_grouped_gemm_out.register_fake
def _(a, b, sfa, sfb, out):
    return None


# ---- MoE layers: weights registered once, expert offsets on the device (issue 12) ----------------
def _moe_check():
    if not hasattr(_lib, "nvfp4jit_moe_run"):
        raise Error(14, f"{_lib.library_path} has no MoE API (older library)")


def _int32_vec(t, name, need):
    if _REQUIRE_CUDA and not t.is_cuda:
        raise Error(_INVALID, f"{name} is not a CUDA tensor")
    if t.dtype != torch.int32 or not t.is_contiguous() or t.numel() < need:
        raise Error(_INVALID, f"{name} must be a contiguous int32 tensor of at least {need} "
                              f"elements (got {t.dtype}, {tuple(t.shape)})")
    return t.data_ptr()


class Weights:
    """The expert weights of one MoE layer, registered once (nvfp4jit_weights): E experts of
    N x K in the format of a group's B and SFB. b: a stacked (E, N, K/2) byte tensor, or a list
    of E (N, K/2) tensors; sfb: stacked, a contiguous byte tensor holding the E blocked-layout
    scale blocks back to back (scale_bytes(N, K) each, e.g. shape (E, scale_bytes(N, K))), or
    a list of E blocked-layout tensors. No device access. arch "sm_90a" (run on the H200) or
    "sm_100a" (compiled, linted and emulated only, never run on a B200). The tensors are kept
    alive here and must not change while the Weights or a plan of it exists."""

    def __init__(self, b, sfb, arch="sm_90a", ctx: Context = None):
        from . import scale_bytes
        _moe_check()
        self._ctx = ctx or default_context()
        self._h = ctypes.c_void_p()
        self._plans = weakref.WeakSet()
        d = _lib.WeightsDesc()
        if isinstance(b, (list, tuple)):
            if not isinstance(sfb, (list, tuple)) or len(sfb) != len(b) or not b:
                raise Error(1, "b and sfb must be lists of the same length >= 1")
            rows = [_rows(t, e, "b", _BYTE_DTYPES) for e, t in enumerate(b)]
            n, k2 = rows[0][1], rows[0][2]
            for e, (_, ne, ke) in enumerate(rows):
                if (ne, ke) != (n, k2):
                    raise Error(_INVALID, f"expert {e}: b is ({ne}, {ke}), expert 0 ({n}, {k2})")
            E = len(b)
            bp = (ctypes.c_uint64 * E)(*(r[0] for r in rows))
            sp = (ctypes.c_uint64 * E)(*(_scales(t, e, "sfb", n, 2 * k2)
                                         for e, t in enumerate(sfb)))
            d.b_experts, d.sfb_experts = bp, sp
            self._keep = (list(b), list(sfb), bp, sp)
        else:
            shape, st = b.shape, b.stride()
            if len(shape) != 3 or (_REQUIRE_CUDA and not b.is_cuda) or b.dtype not in _BYTE_DTYPES:
                raise Error(_INVALID, f"b must be a (E, N, K/2) byte CUDA tensor (got "
                                      f"{b.dtype}, {tuple(shape)} on {b.device})")
            E, n, k2 = shape
            if not b.is_contiguous():
                raise Error(_INVALID, f"b is not contiguous (strides {tuple(st)})")
            need = E * scale_bytes(n, 2 * k2)
            if ((_REQUIRE_CUDA and not sfb.is_cuda) or sfb.dtype not in _BYTE_DTYPES
                    or not sfb.is_contiguous() or sfb.numel() < need):
                raise Error(_INVALID, f"sfb must be a contiguous byte CUDA tensor of at least "
                                      f"E * scale_bytes(N, K) = {need} bytes")
            d.b, d.sfb = b.data_ptr(), sfb.data_ptr()
            self._keep = (b, sfb)
        d.num_experts, d.n, d.k = E, n, 2 * k2
        self.num_experts, self.n, self.k = E, n, 2 * k2
        self._ctx._check(_lib.nvfp4jit_weights_create(self._ctx._h, _arch(arch),
                                                      ctypes.byref(d), ctypes.byref(self._h)))
        self._ctx._live_weights.add(self)

    def __repr__(self):
        return f"<nvfp4jit.Weights {self.num_experts} experts of {self.n}x{self.k}>"

    def close(self):
        """Destroy the plans made from these weights, then the weights."""
        for p in list(self._plans):
            p.close()
        if self._h.value and self._ctx._h.value:
            _lib.nvfp4jit_weights_destroy(self._h)
        self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class MoEPlan:
    """A MoE layer over Weights for up to max_rows tokens (nvfp4jit_moe_plan): the variant is
    chosen (or forced) and compiled, and the weights' tensor maps, the fp16 token workspace
    and an error word are built on the device once (needs the GPU). run() launches the layer
    (nvfp4jit_moe_run) with no host work per expert: the expert offsets are read on the
    device, so a kernel queued before on the same stream may write them; CUDA-graph
    capturable (a replay reads the buffers given at capture). Runs of one plan must not
    execute concurrently."""

    def __init__(self, weights: Weights, max_rows: int, variant=None):
        from . import moe_scale_rows
        _moe_check()
        self.weights, self.max_rows = weights, int(max_rows)
        self._ctx = weights._ctx
        self._h = ctypes.c_void_p()
        force = ctypes.byref(_vparse(variant)) if variant else None
        self._ctx._check(_lib.nvfp4jit_moe_plan_create(weights._h, self.max_rows, force,
                                                       ctypes.byref(self._h)))
        info = _lib.MoeInfo()
        self._ctx._check(_lib.nvfp4jit_moe_plan_info(self._h, ctypes.byref(info)))
        self.info = dict(variant=_vformat(info.variant),
                         choice=_lib.CHOICE.get(info.choice, str(info.choice)),
                         device_bytes=info.device_bytes, setup_ms=info.setup_ms,
                         grid=info.grid, prep_grid=info.prep_grid, sms=info.sms)
        self.variant = self.info["variant"]
        #: rows of the token-scale buffer a call needs (moe_scale_rows(max_rows, E))
        self.scale_rows = moe_scale_rows(self.max_rows, weights.num_experts)
        weights._plans.add(self)
        self._ctx._live_plans.add(self)

    def __repr__(self):
        return (f"<nvfp4jit.MoEPlan {self.variant} ({self.info['choice']}), "
                f"{self.weights.num_experts} experts, max_rows {self.max_rows}>")

    def close(self):
        """Free the plan (no run or graph replay of it may still be pending)."""
        if self._h.value and self._ctx._h.value and self.weights._h.value:
            _lib.nvfp4jit_moe_plan_destroy(self._h)
        self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def run(self, a, sfa, offsets, sf_offsets, out=None, stream=None):
        """One MoE call, tokens sorted by expert: a (>= max_rows, K/2) packed e2m1 bytes,
        expert e owning rows offsets[e] .. offsets[e+1]-1; sfa: a contiguous byte tensor of at
        least scale_rows * K/16 bytes, expert e's scales in the blocked layout from scale row
        sf_offsets[e] (a multiple of 128); offsets int32 [E+1], sf_offsets int32 [E] on the
        device; out: fp16 (>= max_rows, N) or None (allocated). Rows no valid expert owns are
        not written. @return out."""
        E, n, k = self.weights.num_experts, self.weights.n, self.weights.k
        pa, ra, ka = _rows(a, 0, "a", _BYTE_DTYPES)
        if ra < self.max_rows or 2 * ka != k:
            raise Error(_INVALID, f"a is ({ra}, {ka}); expected ({self.max_rows}, {k // 2})")
        if (_REQUIRE_CUDA and not sfa.is_cuda) or sfa.dtype not in _BYTE_DTYPES \
                or not sfa.is_contiguous() or sfa.numel() < self.scale_rows * (k // 16):
            raise Error(_INVALID, f"sfa must be a contiguous byte CUDA tensor of at least "
                                  f"scale_rows * K/16 = {self.scale_rows * (k // 16)} bytes")
        if out is None:
            out = torch.empty((self.max_rows, n), dtype=torch.float16, device=a.device)
        pc, rc, nc = _rows(out, 0, "out", _FP16)
        if rc < self.max_rows or nc != n:
            raise Error(_INVALID, f"out is ({rc}, {nc}); expected ({self.max_rows}, {n})")
        call = _lib.MoeCall(pa, sfa.data_ptr(), pc, _int32_vec(offsets, "offsets", E + 1),
                            _int32_vec(sf_offsets, "sf_offsets", E))
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        self._ctx._check(_lib.nvfp4jit_moe_run(self._h, ctypes.byref(call), stream))
        return out

    def check(self):
        """Read and clear the device-side error word (synchronise the runs' stream first):
        raise Error (ERR_INVALID_PROBLEM, "expert E: ...") when a run since the last check
        skipped an expert for bad offsets; the expert is in the exception's .expert."""
        ex = ctypes.c_int(-1)
        st = _lib.nvfp4jit_moe_plan_check(self._h, ctypes.byref(ex))
        if st:
            err = Error(st, _lib.nvfp4jit_last_error(self._ctx._h).decode(errors="replace"))
            err.expert = ex.value
            raise err
