#!/usr/bin/env bash
# The session's final tree on the lent GPU: nvfp4jit tune with the act16sk twins (bench1, bench2;
# nothing stored), then the gpu and moe test areas. Device tool: carry build; bash bench/probe/final-gpu-check.sh
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for set in bench1 bench2; do
  timeout 100 build/nvfp4jit tune --no-store --candidates 4 --iters 20 --verbose --problems problems/gpumode.txt --set $set > $OUT/tune_$set.txt 2>&1
  echo "tune $set rc $?"; grep -E "tune: #|tuned:" $OUT/tune_$set.txt
done
for a in gpu moe; do
  (cd build && timeout 200 ./nvfp4jit_tests $a) > $OUT/area_$a.log 2>&1; echo "area $a rc $?"; tail -1 $OUT/area_$a.log; grep -E "^FAIL|^SKIP" $OUT/area_$a.log | head
done
