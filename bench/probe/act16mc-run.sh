#!/usr/bin/env bash
# (needs bench/probe/act16mc.patch applied to 1f9cd80 in build: tried, not kept, bench/RESULTS.md 2026-12-06 third session)
# act16mc (2-CTA clusters multicasting half of the token rows each) against act16 of the same
# tile: GPU tests first, sanitizers, then both per set in one call, two rounds.
# Device tool: carry build; bash bench/probe/act16mc-run.sh ("warm": precompile here)
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
SETS=${SETS:-"gpumode.txt:bench1:sm90a:128x128x128:s4:swap gpumode.txt:bench1:sm90a:192x128x64:s6:swap
gpumode.txt:bench2:sm90a:128x96x128:s4:swap gpumode.txt:bench3:sm90a:128x128x128:s4:swap
gpumode.txt:bench4:sm90a:128x128x128:s4:swap moe.txt:prefill8-up:sm90a:128x128x128:s4:swap
moe.txt:single-large:sm90a:128x128x128:s4:swap moe.txt:skewed8-up:sm90a:192x96x128:s4:swap
moe.txt:prefill16-big:sm90a:128x192x64:s6:swap"}
if [ "${1:-}" = warm ]; then
  for e in $SETS; do t=${e#*:}; t=${t#*:}
    for s in act16 act16mc; do build/nvfp4jit compile --variant $t:$s > /dev/null || echo "warm $t:$s failed"; done
  done; exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
[ -n "${NOTEST:-}" ] || for t in multicast variant_sweep persistent_many_tiles stream_k edges gpumode_tests; do
  (cd build && timeout 200 ./nvfp4jit_tests gpu $t) > $OUT/t_$t.log 2>&1; echo "gpu.$t rc $? $(tail -1 $OUT/t_$t.log)"; grep -E "FAIL" $OUT/t_$t.log | head -5
done
for e in $SETS; do f=${e%%:*}; r=${e#*:}; set=${r%%:*}; t=${r#*:}
  for round in 1 2; do
    timeout 100 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $set --variant $t:act16,$t:act16mc > $OUT/f.tmp 2>&1
    echo "$set round $round rc $?" >> $OUT/ab.txt; grep -hE 'nvfp4jit sm|rror|PASS|FAIL' $OUT/f.tmp >> $OUT/ab.txt
  done
done
cat $OUT/ab.txt
[ -n "${NOTEST:-}" ] || for tool in memcheck racecheck; do
  for fs in moe.txt:edges gpumode.txt:bench4; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build/nvfp4jit demo --arch sm_90a \
      --problems problems/${fs%%:*} --set ${fs#*:} --variant sm90a:128x128x128:s4:swap:act16mc --iters 1 > $OUT/san.log 2>&1
    echo "$tool ${fs#*:}: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san.log | tail -1)"
  done
done
