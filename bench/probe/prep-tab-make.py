#!/usr/bin/env python3
"""Renders for bench/probe/prep-tab-run.sh why: build/ab-tabu and build/ab-empty, copies of
templates/ with the grouped prep changed (issue 13, bench/RESULTS.md 2026-12-06 sixth session).
tabu: each lane takes its group's fields by warp-uniform parameter reads (an unrolled loop over
the groups, stopping at num_groups) instead of one lane-indexed read; empty: the prep returns
after griddepcontrol.launch_dependents (no conversion; the GEMM's results are garbage)."""
import os, shutil
src = open('templates/sm90a_act16.cuh').read()
old = """    if (lane < ng) {
      const PrepGroup &d = tab.g[lane];
      ga = d.a; gsf = d.sfa; gws = d.ws; gk = d.k; gp = d.prep0;
    }"""
assert old in src
tabu = src.replace(old, """#pragma unroll
    for (int l = 0; l < ${PREP_TAB_GROUPS}; l++) {   // PROBE tabu: warp-uniform parameter addresses
      if (l >= ng) break;
      const PrepGroup &d = tab.g[l];
      const unsigned char *a_ = d.a, *s_ = d.sfa; unsigned char *w_ = d.ws; const int k_ = d.k, p_ = d.prep0;
      if (lane == l) { ga = a_; gsf = s_; gws = w_; gk = k_; gp = p_; }
    }""")
old2 = """  // the grouped call: PREP_CTA_ITEMS consecutive items per CTA, PREP_U per thread, 256 apart."""
assert old2 in src
empty = src.replace(old2, """  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (tab.pad1 == 0) return;   // PROBE empty: no conversion (results garbage)
""" + old2)
for name, txt in (('tabu', tabu), ('empty', empty)):
    d = f'build/ab-{name}'
    os.makedirs(d, exist_ok=True)
    for f in os.listdir('templates'):
        shutil.copy(os.path.join('templates', f), d)
    open(os.path.join(d, 'sm90a_act16.cuh'), 'w').write(txt)
