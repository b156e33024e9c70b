#!/usr/bin/env bash
# Issue 13 follow-up (2026-12-06): bench and tune time their implementations / candidates in
# turn. On the lent GPU: the tune test area, the same-run table against cuBLAS (gpumode bench*
# and the MoE sets), then `tune --no-store` on the nine sets (does the tuner still pick the
# heuristic's choice?). Device tool: carry build/nvfp4jit, build/nvfp4jit_tests, build/cache.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/${CACHE:-build/cache}
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $OUT/gpu.txt
(cd build && timeout 120 ./nvfp4jit_tests tune) > $OUT/area_tune.log 2>&1; echo "area tune rc $?"; tail -1 $OUT/area_tune.log; grep -E "FAIL|SKIP" $OUT/area_tune.log | head
timeout 200 build/nvfp4jit bench --iters 50 --problems problems/gpumode.txt --set 'bench*' --csv $OUT/gm.csv > $OUT/gm.txt 2>&1
echo "bench gpumode rc $?"; grep -hE '^== |nvfp4jit sm|cuBLAS|graph replay|geomean|rror' $OUT/gm.txt
timeout 300 build/nvfp4jit bench --iters 50 --problems problems/moe.txt --set decode64-up,decode64-down,prefill8-up,skewed8-up,single-large --csv $OUT/moe.csv > $OUT/moe.txt 2>&1
echo "bench moe rc $?"; grep -hE '^== |nvfp4jit sm|cuBLAS|graph replay|geomean|rror' $OUT/moe.txt
for fs in gpumode.txt:bench1,bench2,bench3,bench4 moe.txt:decode64-up,decode64-down,prefill8-up,skewed8-up,single-large; do
  timeout 150 build/nvfp4jit tune --no-store --candidates 6 --iters 20 --verbose --problems problems/${fs%%:*} --set ${fs#*:} > $OUT/tune.tmp 2>&1
  echo "tune ${fs#*:} rc $?"; cat $OUT/tune.tmp >> $OUT/tune.txt; grep -hE "^== |tune: #|tuned|heuristic|rror" $OUT/tune.tmp
done
# what the lead launch pays for: ours after a copy of itself (same code, other blob and
# workspace), after another GEMM variant (other GEMM code, same prep), after cuBLAS (above)
for v in auto,auto auto,sm90a:128x128x64:s6:swap:act16 auto,sm90a:192x64x128:s4:swap:act16; do
  timeout 100 build/nvfp4jit bench --iters 50 --no-cublas --variant $v --problems problems/gpumode.txt --set bench3,bench4 > $OUT/lead.tmp 2>&1
  echo "lead $v rc $?"; cat $OUT/lead.tmp >> $OUT/lead.txt; grep -hE '^== |nvfp4jit sm|rror' $OUT/lead.tmp
done
