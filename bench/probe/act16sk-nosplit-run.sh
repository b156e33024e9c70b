#!/usr/bin/env bash
# act16sk splits tiles only where that saves at least SK_MIN_STAGES stages (src/fam_sm90.c),
# else it runs act16p's schedule: gpu.stream_k (its 13-CTA grid takes the no-split path) with
# memcheck, and act16sk against act16p / act16 of the same tile, one call.
# Device tool: carry build; bash bench/probe/act16sk-nosplit-run.sh ("warm": precompile here)
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
A=sm90a:128x128x128:s4:swap B=sm90a:128x96x128:s4:swap
if [ "${1:-}" = warm ]; then
  for t in $A $B; do for s in act16 act16p act16sk; do build/nvfp4jit compile --variant $t:$s > /dev/null; done; done
  exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
(cd build && timeout 240 ./nvfp4jit_tests gpu stream_k) > $OUT/sk_test.log 2>&1; echo "stream_k rc $?"; tail -1 $OUT/sk_test.log; grep FAIL $OUT/sk_test.log | head
b() { timeout 200 build/nvfp4jit bench --iters 30 --no-cublas "$@" > $OUT/f.tmp 2>&1; echo "$* rc $?" | tee -a $OUT/ab.txt; grep -hE 'nvfp4jit sm|rror|== ' $OUT/f.tmp | tee -a $OUT/ab.txt; }
for r in 1 2; do
  b --problems problems/gpumode.txt --set bench3,bench4 --variant $A:act16,$A:act16p,$A:act16sk
  b --problems problems/gpumode.txt --set bench1,bench2 --variant $B:act16,$B:act16p,$B:act16sk
done
(cd build && timeout 240 compute-sanitizer --tool memcheck ./nvfp4jit_tests gpu stream_k) > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -2 $OUT/memcheck.log
