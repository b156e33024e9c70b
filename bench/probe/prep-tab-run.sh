#!/usr/bin/env bash
# Issue 13: the grouped prep's lookup fields as a __grid_constant__ kernel parameter (PrepTab:
# up to 32 groups), so that its first global loads are the tokens, against the tree (the warp
# lookup reading the blob's header, then its group descriptors: d605f1b's templates, copied to
# build/ab-tree by `git archive d605f1b templates`). Device tool: carry build;
#   bash bench/probe/prep-tab-run.sh tests   GPU tests and sanitizers on the tab arm
#   bash bench/probe/prep-tab-run.sh ab      ncu of prep and GEMM alone, then A/B rounds
#   bash bench/probe/prep-tab-run.sh why     the same on bench3/bench4 with two more arms (renders
#     by bench/probe/prep-tab-make.py): tabu (lanes take their group's fields by warp-uniform
#     parameter reads, one group per unrolled step) and empty (the prep converts nothing: the
#     floor of a launch of that grid; GEMM results garbage)
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
ARMS="tree tab"
tdir() { [ $1 = tab ] && echo "" || echo "$PWD/build/ab-$1"; }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if [ "${1:-tests}" = tests ]; then
  for t in many_groups edges gpumode_tests random_shapes variant_sweep graphs changed_groups host_ahead stream_k persistent_many_tiles all_empty; do
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
  exit 0
fi
[ "${1:-}" = why ] && ARMS="tree tab tabu empty"
M=gpu__time_duration.sum,launch__registers_per_thread,dram__bytes_read.sum,dram__bytes_write.sum
for set in bench3 bench4; do for a in $ARMS; do
  NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 100 ncu --clock-control none -k regex:'^nvfp4jit_grouped' -c 30 --csv --metrics $M \
    build/nvfp4jit bench --iters 20 --no-cublas --problems problems/gpumode.txt --set $set > $OUT/n.csv 2>&1
  echo "### ncu $set $a rc $?"; python3 bench/probe/ncu_summary.py $OUT/n.csv | grep -v "^/"
done; done
ROUNDS="1 2 3 4 5 6"; [ "${1:-}" = why ] && ROUNDS="3 4 5 6"
for round in $ROUNDS; do for a in $ARMS; do
  S='bench*'; [ $round -gt 2 ] && S=bench3,bench4
  NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 150 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/gpumode.txt --set "$S" > $OUT/f.tmp 2>&1
  echo "== round $round $a rc $?" >> $OUT/ab.txt; grep -hE '^== |nvfp4jit sm|geomean|rror' $OUT/f.tmp >> $OUT/ab.txt
done; done
[ "${1:-}" = why ] && ROUNDS="" || ROUNDS="1 2"
for round in $ROUNDS; do for a in $ARMS; do
  NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 150 build/nvfp4jit bench --iters 20 --no-cublas --problems problems/moe.txt \
    --set decode64-up,prefill8-up,prefill16-big,skewed8-up,single-large > $OUT/f.tmp 2>&1
  echo "== moe round $round $a rc $?" >> $OUT/ab.txt; grep -hE '^== |nvfp4jit sm|rror' $OUT/f.tmp >> $OUT/ab.txt
done; done
cat $OUT/ab.txt
