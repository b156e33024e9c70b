#!/usr/bin/env bash
# Issue 13: why the prep's faster group lookup costs bench3 time (bench/RESULTS.md). Arms: epi
# (6eddf71's templates: the old lookup, build/ab-epi by bench/probe/prep-warp-make.py), tree (the
# warp lookup, prep __launch_bounds__(256, 3): 79 registers), treelb (the tree with
# __launch_bounds__(256): 96 registers, so a prep CTA and a GEMM CTA cannot share an SM's
# register file; build/ab-treelb, a copy of templates/ with that one line changed).
# 1) GPU tests on the tree, 2) ncu per kernel (prep and GEMM timed apart: ncu serialises them),
# 3) bench1..4 per arm, two rounds. Device tool: carry build; bash bench/probe/prep-bench3.sh [all|ncu]
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
ARMS="epi tree treelb"
tdir() { [ $1 = tree ] && echo "" || echo "$PWD/build/ab-$1"; }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
MODE=${1:-all}   # all | ncu (ncu, then bench3/bench4 x 4 rounds) | moe (ncu of prefill16-big's prep, then the MoE sets)
if [ $MODE = all ]; then
for t in many_groups edges gpumode_tests random_shapes variant_sweep; do
  (cd build && timeout 200 ./nvfp4jit_tests gpu $t) > $OUT/t_$t.log 2>&1; echo "gpu.$t rc $? $(tail -1 $OUT/t_$t.log)"; grep -E "FAIL" $OUT/t_$t.log | head -5
done
(cd build && timeout 200 ./nvfp4jit_tests moe) > $OUT/t_moe.log 2>&1; echo "moe rc $? $(tail -1 $OUT/t_moe.log)"; grep -E "FAIL" $OUT/t_moe.log | head -5
fi
M=gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,launch__shared_mem_per_block_static,dram__bytes_read.sum,dram__bytes_write.sum
NSETS="bench3 bench4"; NC=30; [ $MODE = moe ] && NSETS=prefill16-big && NC=8
for set in $NSETS; do for a in $ARMS; do
  f=gpumode.txt; [ $MODE = moe ] && f=moe.txt
  NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 100 ncu --clock-control none -k regex:'^nvfp4jit_grouped' -c $NC --csv --metrics $M \
    build/nvfp4jit bench --iters 20 --no-cublas --problems problems/$f --set $set > $OUT/n.csv 2>&1
  echo "### ncu $set $a rc $?"; python3 bench/probe/ncu_summary.py $OUT/n.csv | grep -v "^/"
done; done
F=gpumode.txt; SETS='bench*'; ROUNDS='1 2'; [ $MODE = ncu ] && SETS=bench3,bench4 && ROUNDS='1 2 3 4'
[ $MODE = moe ] && F=moe.txt && SETS=decode64-up,prefill8-up,prefill16-big,skewed8-up,single-large
for round in $ROUNDS; do for a in $ARMS; do
  NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 150 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$F --set "$SETS" > $OUT/f.tmp 2>&1
  echo "== round $round $a rc $?" >> $OUT/ab.txt; grep -hE '^== |nvfp4jit sm|geomean|rror' $OUT/f.tmp >> $OUT/ab.txt
done; done
cat $OUT/ab.txt
