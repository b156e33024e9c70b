#!/usr/bin/env bash
# act16sk with the hybrid schedule (data-parallel waves, then stream-K over the last 1-2
# waves) against act16 of the same tile (same binary) and the pure stream-K schedule of
# e685da6 (build-base), on one card in one call. Run through the device tool:
#   carry build build-base; bash bench/probe/act16sk-hybrid-run.sh
# (192-row act16sk tiles do not fit the registers; the heuristic's 192-row choices are
# left out. build/cache: the kernels, precompiled with NVRTC 13.0 on the host by the same script's
# "warm" mode: bash bench/probe/act16sk-hybrid-run.sh warm)
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
V="sm90a:128x128x128:s4:swap sm90a:128x96x128:s4:swap sm90a:128x192x64:s6:swap"
if [ "${1:-}" = warm ]; then
  for v in $V; do for s in act16 act16sk; do
    build/nvfp4jit compile --variant $v:$s > /dev/null || echo "compile $v:$s failed"
  done; done
  exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
(cd build && timeout 200 ./nvfp4jit_tests gpu stream_k) > $OUT/sk_test.log 2>&1; echo "stream_k rc $?"; tail -1 $OUT/sk_test.log; grep FAIL $OUT/sk_test.log | head
one() { # set variant-tile file
  timeout 200 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$3 --set $1 --variant $2:act16,$2:act16sk > $OUT/f.tmp 2>&1
  echo "$1 new rc $?" | tee -a $OUT/ab.txt; grep -hE 'nvfp4jit sm|rror' $OUT/f.tmp | sed 's/^/  new /' | tee -a $OUT/ab.txt
  timeout 150 build-base/nvfp4jit bench --iters 30 --no-cublas --problems problems/$3 --set $1 --variant $2:act16sk > $OUT/f.tmp 2>&1
  echo "$1 base rc $?" | tee -a $OUT/ab.txt; grep -hE 'nvfp4jit sm|rror' $OUT/f.tmp | sed 's/^/  base /' | tee -a $OUT/ab.txt
}
for r in 1 2; do
  echo "== round $r" | tee -a $OUT/ab.txt
  one bench1 sm90a:128x192x64:s6:swap gpumode.txt
  one bench1 sm90a:128x128x128:s4:swap gpumode.txt
  one bench1 sm90a:128x96x128:s4:swap gpumode.txt
  one bench2 sm90a:128x96x128:s4:swap gpumode.txt
  one bench3 sm90a:128x128x128:s4:swap gpumode.txt
  one bench4 sm90a:128x128x128:s4:swap gpumode.txt
  one single-large sm90a:128x128x128:s4:swap moe.txt
  one prefill8-up sm90a:128x128x128:s4:swap moe.txt
  one skewed8-up sm90a:128x96x128:s4:swap moe.txt
  one prefill16-big sm90a:128x192x64:s6:swap moe.txt
done
(cd build && timeout 200 compute-sanitizer --tool memcheck ./nvfp4jit_tests gpu stream_k) > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -2 $OUT/memcheck.log
