# A render of templates/ for bench/probe/fixed-cost-run.sh (issue 13): build/probe-nostore, whose
# act16 epilogue computes C but stores it only under a condition that never holds (M < 0), so the
# time without the C stores shows; and build/probe-noprep, whose token prep kernel (grouped call)
# returns at once (tokens garbage), so the time without the prep's work shows. Written against the templates of 8775383; run from the repo root.
import os
src = open('templates/sm90a_act16.cuh').read()
old = "      if (x < N) {\n        if (tc < M) C["
assert src.count(old) == 1
new = "      if (x < N && M < 0) {\n        if (tc < M) C["
old2 = """  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
% if SK then"""
assert src.count(old2) == 1
new2 = """  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (blob) return;
% if SK then"""
for name, a, b in (('nostore', old, new), ('noprep', old2, new2)):
    d = 'build/probe-' + name
    os.makedirs(d, exist_ok=True)
    for f in os.listdir('templates'):
        s = open('templates/' + f).read()
        if f == 'sm90a_act16.cuh':
            s = s.replace(a, b)
        open(d + '/' + f, 'w').write(s)
