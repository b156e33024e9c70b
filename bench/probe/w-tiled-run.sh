#!/usr/bin/env bash
# Issue 13 part 3 (2026-12-07, thirteenth session): does a pre-tiled weight layout, read through a
# tensor map, cost less than today's copy of BLOCK_M rows of BLOCK_K/2 bytes scattered K/2 apart?
# build-wt/: main with bench/probe/act16-w-tiled.patch (the weight map over the same array as rows
# of BLOCK_K/2 bytes, tile (tx, kt) = one contiguous W_BYTES block; results garbage; same box, same
# shared layout, same bytes). build/: main. build-base/ with build/probe-w-none: the "no weight
# copy" reference of the weight-bytes probe (templates before act16-sf-3d; base arm alongside).
# `bash bench/probe/w-tiled-run.sh warm` here; device: carry build/nvfp4jit, build-wt/nvfp4jit,
# build-base/nvfp4jit, build/probe-w-none, build/devcache.tgz (tar czf of build/devcache).
# Then main against cuBLAS on bench1-4 in the same run (same-run.txt).
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
SETS="gpumode.txt:bench1:sm90a:192x128x64:s6:swap gpumode.txt:bench1:sm90a:128x128x128:s4:swap
gpumode.txt:bench3:sm90a:128x128x128:s4:swap moe.txt:single-large:sm90a:128x128x128:s4:swap
moe.txt:decode64-up:sm90a:128x24x128:s6:swap"
ARMS="build: build-wt: build-base: build-base:w-none"
if [ "${1:-}" = warm ]; then
  for e in $SETS; do t=${e#*:}; t=${t#*:}
    for a in $ARMS; do b=${a%%:*}; r=${a#*:}
      NVFP4JIT_TEMPLATE_DIR=${r:+$PWD/build/probe-$r} $b/nvfp4jit compile --variant $t:act16 > /dev/null || echo "warm $a $t failed"
    done
  done; exit 0
fi
[ -d build/devcache ] || tar xzf build/devcache.tgz -C build
R=${OUT:-/tmp/out}; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $R/w-tiled.txt
for round in 1 2; do for e in $SETS; do f=${e%%:*}; r=${e#*:}; set=${r%%:*}; t=${r#*:}
  for a in $ARMS; do b=${a%%:*}; r=${a#*:}
    NVFP4JIT_TEMPLATE_DIR=${r:+$PWD/build/probe-$r} timeout 60 $b/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $set --variant $t:act16 > $R/f.tmp 2>&1
    echo "round $round $set $a: $(grep -hE 'nvfp4jit sm' $R/f.tmp | head -1) $(grep -hE 'cache:' $R/f.tmp | head -1) $(grep -ciE 'rror' $R/f.tmp) err" | tee -a $R/w-tiled.txt
  done
done; done
rm -f $R/f.tmp
# then main's same-run table against cuBLAS on bench1-4 (the headline after act16-sf-3d)
timeout 240 build/nvfp4jit bench --iters 30 --problems problems/gpumode.txt --set 'bench*' > $R/same-run.txt 2>&1
echo "same-run rc $?"; grep -E '^== |nvfp4jit sm|cublas|geomean' $R/same-run.txt
