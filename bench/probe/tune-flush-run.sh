#!/usr/bin/env bash
# Issue 13 part 8: the tuner's timings with an L2 flush before each timed launch (src/tuner.c
# time_plan), against `bench` in the same call. Device tool: carry build/nvfp4jit, build/cache;
# bash bench/probe/tune-flush-run.sh
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for fs in "gpumode.txt:bench*" "moe.txt:${MOESETS:-decode64-up,single-large}"; do
  timeout 280 build/nvfp4jit tune --candidates ${CANDS:-8} --no-store --verbose --iters 20 --problems problems/${fs%%:*} --set "${fs#*:}" > $OUT/tune.log 2>&1
  echo "### tune ${fs} rc $?"; grep -E "^== |tuned:|warn|rror" $OUT/tune.log; cat $OUT/tune.log >> $OUT/tune-all.txt
  timeout 150 build/nvfp4jit bench --iters 20 --no-cublas --problems problems/${fs%%:*} --set "${fs#*:}" > $OUT/f.tmp 2>&1
  echo "### bench ${fs} rc $?"; grep -hE '^== |nvfp4jit sm|geomean|rror' $OUT/f.tmp
done
