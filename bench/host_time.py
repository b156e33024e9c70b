"""Host time per call of the Python layer against the C path, on the public problem's sets
(H200, torch). For each set: generate the data (nvfp4jit.testing.generate_input), check
gpumode.custom_kernel against the float64 reference, then time N back-to-back calls of
  c_path       nvfp4jit_plan_run through ctypes with a prebuilt group array (the C call)
  custom_kernel the public entry point, the same data tuple again (its fast path)
  bind          the launcher of Plan.bind (validated once; static buffers)
  plan.run      Plan.run on tensor lists (validation + packing every call)
  grouped_gemm  the functional call (plan-cache lookup + validation + packing)
  torch.ops     torch.ops.nvfp4jit.grouped_gemm (custom-op dispatch on top)
and print microseconds of host time per call (wall time of the loop / N, launches queued
without synchronising) and the GPU time per launch (CUDA events over the c_path loop).

usage: PYTHONPATH=python python3 bench/host_time.py [--sets bench1,test1] [--iters 200]
"""
import argparse
import os
import sys
import time

import torch

import nvfp4jit
from nvfp4jit import _lib, testing
from nvfp4jit.gpumode import custom_kernel


def sets(path, names):
    out = []
    with open(path) as f:
        for line in f:
            tok = line.split("#", 1)[0].split()
            if tok and (not names or tok[0] in names):
                out.append((tok[0], [tuple(int(x) for x in t.split("x")) for t in tok[1:]]))
    return out


def host_us(fn, iters):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / iters * 1e6


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", default=os.path.join(here, "problems", "gpumode.txt"))
    ap.add_argument("--sets", default="bench1,bench2,bench3,bench4")
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    names = [s for s in args.sets.split(",") if s]
    print(f"nvfp4jit {nvfp4jit.__version__} ({nvfp4jit.library_path}), torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    print(f"{'set':8} {'variant':34} {'ok':3} {'c_path':>7} {'custom':>7} {'bind':>7} "
          f"{'plan.run':>8} {'gg':>7} {'t.ops':>7} {'gpu_us':>7}   (host us per call)")
    for name, shapes in sets(args.problems, names):
        m, n, k = zip(*shapes)
        data = testing.generate_input(m, n, k, len(shapes), seed=1)
        ref = testing.reference(data)
        out = custom_kernel(data)
        torch.cuda.synchronize()
        ok = all(((o[:, :, 0].float() - r.float()).abs()
                  <= 1e-3 + 1e-3 * r.float().abs() + (kk / 16 + 4) * 2.0 ** -24 * 9 * kk).all()
                 for o, r, kk in zip(out, ref, k))
        abc, _, re, _ = data
        a, b, c = [x[0] for x in abc], [x[1] for x in abc], [x[2] for x in abc]
        sfa, sfb = [s[0] for s in re], [s[1] for s in re]
        plan = nvfp4jit.Plan([(mm, nn, kk) for mm, nn, kk in shapes])
        vals, _, _ = nvfp4jit._torch._groups(a, b, sfa, sfb, c)
        import array
        buf = array.array("q", vals)
        addr, G = buf.buffer_info()[0], len(shapes)
        stream = torch.cuda.current_stream().cuda_stream
        run, h = _lib.nvfp4jit_plan_run, plan._h
        t_c = host_us(lambda: run(h, addr, G, stream), args.iters)
        t_ck = host_us(lambda: custom_kernel(data), args.iters)
        t_bd = host_us(plan.bind(a, b, sfa, sfb, c), args.iters)
        t_pr = host_us(lambda: plan.run(a, b, sfa, sfb, c), args.iters)
        t_gg = host_us(lambda: nvfp4jit.grouped_gemm(a, b, sfa, sfb, c), args.iters)
        op = torch.ops.nvfp4jit.grouped_gemm_out
        t_op = host_us(lambda: op(a, b, sfa, sfb, c), args.iters)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(args.iters):
            run(h, addr, G, stream)
        e1.record()
        torch.cuda.synchronize()
        gpu = e0.elapsed_time(e1) * 1e3 / args.iters
        print(f"{name:8} {plan.variant:34} {'yes' if ok else 'NO':3} {t_c:7.1f} {t_ck:7.1f} "
              f"{t_bd:7.1f} {t_pr:8.1f} {t_gg:7.1f} {t_op:7.1f} {gpu:7.1f}")
        plan.close()
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
