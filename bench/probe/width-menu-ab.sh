#!/usr/bin/env bash
# Issue 13 part 1: token-tile widths against main without them. Second try (measured
# 2026-12-07, slower): bench/probe/act16-width-branch.patch, a uniform branch around the wgmmas of
# each 64-k block; third: bench/probe/act16-width-switch.patch, the k-loop per width (measured
# 2026-12-07: no faster); fourth: bench/probe/act16-width-boxes.patch, token copies of the width (slower)
# (bench/probe/width-prep.sh builds and warms everything for it).
# build-base/nvfp4jit: main; build/nvfp4jit(_tests): main with the patch
# applied (the menu, the heuristic that credits it, the ring tables regenerated, the tests
# variant.token_widths, compile.act16_widths, gpu.token_widths). Per set: base auto | menu auto +
# the base's variant (the same tile, menu on). Warm build/devcache first with both binaries
# (bench* of gpumode.txt; prefill8-up, skewed8-up, single-large of moe.txt; the --variant lists
# below; gpu.token_widths' seven variants). Device tool: carry build/nvfp4jit,
# build/nvfp4jit_tests, build-base/nvfp4jit, build/devcache.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/${CACHE:-build/devcache}
OUT=${OUT:-/tmp/out}; mkdir -p $OUT; T0=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $OUT/gpu.txt
gputest() {
  [ $((SECONDS - T0)) -gt $2 ] && { echo "time: gpu $1 not run"; return; }
  (cd build && timeout $3 ./nvfp4jit_tests gpu $1) > $OUT/gpu_$1.log 2>&1; echo "gpu $1 rc $?"; tail -1 $OUT/gpu_$1.log; grep FAIL $OUT/gpu_$1.log | head
}
ab() {   # file set base-variant
  [ $((SECONDS - T0)) -gt $4 ] && { echo "time: $2 not run"; return; }
  timeout 40 build-base/nvfp4jit bench --iters 30 --no-cublas --problems problems/$1 --set $2 > $OUT/ab.tmp 2>&1
  echo "base $2 rc $?"; cat $OUT/ab.tmp >> $OUT/ab-base.txt; grep -hE 'nvfp4jit sm|rror' $OUT/ab.tmp
  timeout 40 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$1 --set $2 --variant auto,sm90a:$3:swap:act16 > $OUT/ab.tmp 2>&1
  echo "menu $2 rc $?"; cat $OUT/ab.tmp >> $OUT/ab-menu.txt; grep -hE 'nvfp4jit sm|rror' $OUT/ab.tmp
}
gputest token_widths 100 60
ab gpumode.txt bench1 192x128x64:s6 150
ab gpumode.txt bench2 128x96x128:s4 150
ab gpumode.txt bench3 128x128x128:s4 150
ab gpumode.txt bench4 128x128x128:s4 150
# what a k-step costs at each width: with the menu, 192x128x64 runs w96 as n96 wgmmas
for n in 32 64 96; do
  [ $((SECONDS - T0)) -gt 190 ] && break
  timeout 30 build/nvfp4jit bench --iters 30 --no-cublas --problems bench/probe/width-probe.txt --set w$n \
    --variant sm90a:192x${n}x64:s6:swap:act16,sm90a:192x128x64:s6:swap:act16 > $OUT/wp.tmp 2>&1
  echo "menu w$n rc $?"; cat $OUT/wp.tmp >> $OUT/width-probe.txt; grep -hE 'nvfp4jit sm|rror' $OUT/wp.tmp
done
ab moe.txt skewed8-up 192x96x128:s4 230
ab moe.txt single-large 128x128x128:s4 230
ab moe.txt prefill8-up 128x128x128:s4 230
for t in variant_sweep stream_k persistent_many_tiles; do gputest $t 280 30; done
echo "elapsed $((SECONDS - T0)) s"
