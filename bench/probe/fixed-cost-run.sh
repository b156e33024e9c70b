#!/usr/bin/env bash
# Probe (issue 13): what a one-wave set's time is made of. bench4's and bench3's groups at several
# K (bench/probe/ksweep.txt: time = fixed + K-proportional), each with three renders of the act16
# template (NVFP4JIT_TEMPLATE_DIR): as is (with cuBLAS in the same run), "nostore" (the epilogue's
# C stores skipped), "noprep" (the token prep kernel returns at once); renders made by
# bench/probe/fixed-cost-make.py. Device tool: carry build; "warm" precompiles here.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
V=sm90a:128x128x128:s4:swap:act16
ARMS="base nostore noprep"
tdir() { [ $1 = base ] && echo "" || echo "$PWD/build/probe-$1"; }
if [ "${1:-}" = warm ]; then
  for a in $ARMS; do NVFP4JIT_TEMPLATE_DIR=$(tdir $a) build/nvfp4jit compile --variant $V > /dev/null || echo "warm $a failed"; done
  exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for round in 1 2; do
  for a in $ARMS; do
    extra="--no-cublas"; [ $a = base ] && [ $round = 1 ] && extra=""
    NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 200 build/nvfp4jit bench --iters 30 $extra --problems bench/probe/ksweep.txt --variant $V > $OUT/f.tmp 2>&1
    echo "== round $round $a rc $?" >> $OUT/probe.txt
    grep -hE '^== |nvfp4jit sm|cuBLAS|rror' $OUT/f.tmp >> $OUT/probe.txt
  done
done
cat $OUT/probe.txt
