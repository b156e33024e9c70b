# act16 GEMM SASS (bench/probe/loop-sass-count.sh): reads `nvfp4jit inspect --sass` on stdin and
# prints, for nvfp4jit_grouped, the gaps in instructions between consecutive WARPGROUP.ARRIVE
# (each opens one wgmma group: one m64 x 64-k block of one warpgroup, or of one half in the wide
# form), i.e. the straight-line code per group: decode of its fragments, its 4 HGMMA, commit,
# wait, and (once per stage) the barrier wait and release. Median and quartiles: out-of-line
# code (spin loops, the epilogue) only adds outliers.
import re, sys, statistics
fn = False; ins = []
for l in sys.stdin.read().splitlines():
    if re.search(r'^\s*\.text\.nvfp4jit_grouped:', l): fn = True; continue
    if re.search(r'^\s*\.text\.', l): fn = False
    m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', l)
    if fn and m: ins.append(m[2])
arr = [i for i, t in enumerate(ins) if 'WARPGROUP.ARRIVE' in t]
gaps = sorted(b - a for a, b in zip(arr, arr[1:]))
if len(gaps) < 4:
    print("too few groups"); sys.exit(0)
q = statistics.quantiles(gaps, n=4)
print(f"{len(arr)} groups, {len(ins)} instructions; gap between groups: median {statistics.median(gaps):.0f}, "
      f"quartiles {q[0]:.0f} / {q[2]:.0f}, min {gaps[0]}")
