#!/usr/bin/env bash
# act16sk's fix-up through shared memory (cp.async, so 128x128x128:s4 keeps the unrolled ring):
# correctness (gpu.stream_k, memcheck, racecheck) and act16sk new (build) against base
# (build-base: the register fix-up, ring fallback at 128x128x128) beside act16 / act16p, one
# call; then `nvfp4jit tune` with the act16sk twins on bench2 and bench1. Device tool: carry build build-base; bash bench/probe/act16sk-smem-fixup-run.sh
# ("warm": precompile into build/cache on the host with both binaries)
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
T=sm90a:128x128x128:s4:swap
if [ "${1:-}" = warm ]; then
  for s in act16 act16p act16sk; do build/nvfp4jit compile --variant $T:$s > /dev/null; done
  build-base/nvfp4jit compile --variant $T:act16sk > /dev/null
  build/nvfp4jit compile --variant sm90a:192x128x64:s6:swap:act16 > /dev/null
  exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
(cd build && timeout 200 ./nvfp4jit_tests gpu stream_k) > $OUT/sk_test.log 2>&1; echo "stream_k rc $?"; tail -1 $OUT/sk_test.log; grep FAIL $OUT/sk_test.log | head
W8=512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168
b() { bin=$1; shift; timeout 200 $bin/nvfp4jit bench --iters 30 --no-cublas "$@" > $OUT/f.tmp 2>&1; echo "[$bin] $* rc $?" | tee -a $OUT/ab.txt; grep -hE 'nvfp4jit sm|rror|== ' $OUT/f.tmp | tee -a $OUT/ab.txt; }
for r in 1 2; do
  b build --groups $W8 --variant $T:act16,$T:act16p,$T:act16sk
  b build-base --groups $W8 --variant $T:act16sk
  b build --problems problems/moe.txt --set prefill8-up,single-large --variant $T:act16,$T:act16p,$T:act16sk
  b build-base --problems problems/moe.txt --set prefill8-up,single-large --variant $T:act16sk
  b build --problems problems/gpumode.txt --set bench1,bench3,bench4 --variant $T:act16,$T:act16p,$T:act16sk,auto
  b build-base --problems problems/gpumode.txt --set bench1,bench3,bench4 --variant $T:act16sk
done
# the tuner's act16sk twins end to end (6 ranked candidates + twins; nothing stored)
for set in bench2 bench1; do
  timeout 150 build/nvfp4jit tune --no-store --candidates 6 --iters 20 --verbose --problems problems/gpumode.txt --set $set > $OUT/tune_$set.txt 2>&1
  echo "tune $set rc $?"; tail -25 $OUT/tune_$set.txt
done
(cd build && timeout 200 compute-sanitizer --tool memcheck ./nvfp4jit_tests gpu stream_k) > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -2 $OUT/memcheck.log
(cd build && timeout 300 compute-sanitizer --tool racecheck ./nvfp4jit_tests gpu stream_k) > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -2 $OUT/racecheck.log
