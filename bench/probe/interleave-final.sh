#!/usr/bin/env bash
# The blocked in-turn timing (ad7112e) on the lent GPU, most needed first: the same-run table
# against cuBLAS (gpumode bench*, the MoE sets), the tune test area, what a lead launch pays
# (ours after a copy of itself / another GEMM variant), then `tune --no-store` on the sets.
# BIN=build-base/nvfp4jit times another build of the tool. Device tool: CACHE=build/devcache; carry build/nvfp4jit, build/nvfp4jit_tests, build/devcache.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/${CACHE:-build/cache}
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $OUT/gpu.txt
timeout 100 ${BIN:-build/nvfp4jit} bench --iters 50 --problems problems/gpumode.txt --set 'bench*' --csv $OUT/gm.csv > $OUT/gm.txt 2>&1
echo "bench gpumode rc $?"; grep -hE '^== |nvfp4jit sm|cuBLAS|graph replay|geomean|rror' $OUT/gm.txt
timeout 150 ${BIN:-build/nvfp4jit} bench --iters 50 --problems problems/moe.txt --set decode64-up,decode64-down,prefill8-up,skewed8-up,single-large --csv $OUT/moe.csv > $OUT/moe.txt 2>&1
echo "bench moe rc $?"; grep -hE '^== |nvfp4jit sm|cuBLAS|graph replay|geomean|rror' $OUT/moe.txt
(cd build && timeout 60 ./nvfp4jit_tests tune) > $OUT/area_tune.log 2>&1; echo "area tune rc $?"; tail -1 $OUT/area_tune.log; grep -E "FAIL" $OUT/area_tune.log | head
for v in auto,auto auto,sm90a:128x128x64:s6:swap:act16; do
  timeout 60 ${BIN:-build/nvfp4jit} bench --iters 50 --no-cublas --variant $v --problems problems/gpumode.txt --set bench3,bench4 > $OUT/lead.tmp 2>&1
  echo "lead $v rc $?"; cat $OUT/lead.tmp >> $OUT/lead.txt; grep -hE '^== |nvfp4jit sm|rror' $OUT/lead.tmp
done
for fs in gpumode.txt:bench1,bench2,bench3,bench4 moe.txt:prefill8-up,single-large; do
  timeout 100 ${BIN:-build/nvfp4jit} tune --no-store --candidates 6 --iters 20 --verbose --problems problems/${fs%%:*} --set ${fs#*:} > $OUT/tune.tmp 2>&1
  echo "tune ${fs#*:} rc $?"; cat $OUT/tune.tmp >> $OUT/tune.txt; grep -hE "^== |tuned|rror" $OUT/tune.tmp
done
