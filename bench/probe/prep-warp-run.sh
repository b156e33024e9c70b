#!/usr/bin/env bash
# Issue 13: the grouped prep looking groups up by warp shuffles (the tree) against 6eddf71 (epi:
# staged C stores, the old lookup) and fdc7693 (base), renders by bench/probe/prep-warp-make.py.
# GPU tests and sanitizers on the tree first; one bench process per arm and round, the library's choice.
# Device tool: carry build; bash bench/probe/prep-warp-run.sh [warm|tests|moe|all]
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
ARMS="base epi tree"
tdir() { [ $1 = tree ] && echo "" || echo "$PWD/build/ab-$1"; }
GM="gpumode.txt:bench*"
MOE="moe.txt:decode64-up,decode64-down,prefill8-up,skewed8-up,single-large"
if [ "${1:-}" = warm ]; then
  for a in $ARMS; do for fs in $GM $MOE edges; do [ $fs = edges ] && fs=moe.txt:edges
    NVFP4JIT_TEMPLATE_DIR=$(tdir $a) build/nvfp4jit warm --problems problems/${fs%%:*} --set "${fs#*:}" > /dev/null || echo "warm $a $fs failed"
  done; done; exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if [ "${1:-tests}" = tests ] || [ "${1:-}" = all ]; then
  for t in many_groups edges gpumode_tests random_shapes variant_sweep; do
    (cd build && timeout 200 ./nvfp4jit_tests gpu $t) > $OUT/t_$t.log 2>&1; echo "gpu.$t rc $? $(tail -1 $OUT/t_$t.log)"; grep -E "FAIL" $OUT/t_$t.log | head -5
  done
  (cd build && timeout 200 ./nvfp4jit_tests moe) > $OUT/t_moe.log 2>&1; echo "moe rc $? $(tail -1 $OUT/t_moe.log)"; grep -E "FAIL" $OUT/t_moe.log | head -5
  for tool in memcheck racecheck; do
    for fs in moe.txt:edges gpumode.txt:bench4; do
      timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build/nvfp4jit demo --arch sm_90a \
        --problems problems/${fs%%:*} --set ${fs#*:} --iters 1 > $OUT/san.log 2>&1
      echo "$tool ${fs#*:}: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san.log | tail -1)"
    done
  done
fi
for fs in $(case ${1:-tests} in moe) echo $MOE;; all) echo $GM $MOE;; *) echo $GM;; esac); do
  for round in 1 2; do for a in $ARMS; do
    NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 150 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/${fs%%:*} --set "${fs#*:}" > $OUT/f.tmp 2>&1
    echo "== round $round $a rc $?" >> $OUT/ab.txt; grep -hE '^== |nvfp4jit sm|geomean|rror' $OUT/f.tmp >> $OUT/ab.txt
  done; done
done
cat $OUT/ab.txt
