#!/usr/bin/env bash
# Why act16sk (hybrid schedule) is slower than act16 on prefill8-up: act16p (the same
# persistent grid, data-parallel only) beside it, and a set of exactly 8 waves of 128x128 tiles
# (8 x 512x4224x7168: 1056 tiles on 132 SMs, where act16sk's schedule has no split tile and
# should equal act16p). Device tool: carry build; bash bench/probe/act16sk-hybrid-why.sh
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
if [ "${1:-}" = warm ]; then
  for s in act16 act16p act16sk; do build/nvfp4jit compile --variant sm90a:128x128x128:s4:swap:$s > /dev/null; build/nvfp4jit compile --variant sm90a:128x96x128:s4:swap:$s >/dev/null; done; exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
T=sm90a:128x128x128:s4:swap
b() { timeout 200 build/nvfp4jit bench --iters 30 --no-cublas "$@" > $OUT/f.tmp 2>&1; echo "$* rc $?" | tee -a $OUT/why.txt; grep -hE 'nvfp4jit sm|rror' $OUT/f.tmp | tee -a $OUT/why.txt; }
for r in 1 2; do
  b --groups 512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168,512x4224x7168 --variant $T:act16,$T:act16p,$T:act16sk
  b --problems problems/moe.txt --set prefill8-up --variant $T:act16,$T:act16p,$T:act16sk
  b --problems problems/moe.txt --set single-large --variant $T:act16,$T:act16p,$T:act16sk
  b --problems problems/gpumode.txt --set bench1 --variant sm90a:128x96x128:s4:swap:act16,sm90a:128x96x128:s4:swap:act16p,sm90a:128x96x128:s4:swap:act16sk,auto
  b --problems problems/gpumode.txt --set bench2 --variant sm90a:128x96x128:s4:swap:act16,sm90a:128x96x128:s4:swap:act16p,sm90a:128x96x128:s4:swap:act16sk,auto
  b --problems problems/moe.txt --set skewed8-up --variant sm90a:128x96x128:s4:swap:act16,sm90a:128x96x128:s4:swap:act16p,sm90a:128x96x128:s4:swap:act16sk,auto
done
