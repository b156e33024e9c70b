"""nvfp4jit from Python: the variant space, a kernel's SASS, and (with torch and an H100/H200)
one grouped GEMM call, one tuned call and a CUDA graph. Run from the repository root with
`PYTHONPATH=python python3 examples/python/quickstart.py` (build first), or anywhere after
`pip install .`."""
import nvfp4jit

print(nvfp4jit.__version__, len(nvfp4jit.variants("sm_90a")), "sm_90a variants")
shapes = [(80, 4096, 7168), (176, 4096, 7168)]           # (M, N, K) per group
variant, how = nvfp4jit.choose(shapes, "sm_90a")          # compiled into the cache, no GPU
print("chosen:", variant, f"({how})", nvfp4jit.inspect(variant, "resources"))
try:
    print(nvfp4jit.inspect(variant, "sass")[:400])        # needs nvdisasm or cuobjdump
except nvfp4jit.Error as e:
    print("no SASS:", e.message)

try:
    import torch
except ImportError:
    torch = None
if torch is not None and torch.cuda.is_available():
    from nvfp4jit import testing
    m, n, k = zip(*shapes)
    abc, _, sf, _ = testing.generate_input(m, n, k, len(shapes), seed=0)
    a = [x[0] for x in abc]                               # (M, K/2, 1) float4_e2m1fn_x2
    b = [x[1] for x in abc]                               # (N, K/2, 1)
    sfa = [s[0] for s in sf]                              # blocked-layout e4m3 scales
    sfb = [s[1] for s in sf]
    out = nvfp4jit.grouped_gemm(a, b, sfa, sfb)           # fp16 (M, N) each, current stream
    r = nvfp4jit.tune(a, b, sfa, sfb, out, candidates=4)  # later plans of this shape use it
    print("tuned:", r.best, f"{r.best_us:.1f} us")
    plan = nvfp4jit.Plan(shapes)                          # takes the tuned variant
    plan.run(a, b, sfa, sfb, out)
    torch.cuda.synchronize()
    print("plan:", plan, out[0][0, :4])
