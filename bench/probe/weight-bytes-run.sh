#!/usr/bin/env bash
# Probe (issue 13, 2026-12-07): what the weight copy (BLOCK_M rows of BLOCK_K/2 bytes: 32-byte
# rows at BLOCK_K 64) and the weight-scale copies (512-byte boxes) cost the act16 k-loop. Same
# binary, four renders (NVFP4JIT_TEMPLATE_DIR): as is, no weight copy, no scale copies, the weight
# bytes as one contiguous bulk copy (results garbage), made by bench/probe/weight-bytes-make.py
# into build/probe-{w-none,sf-none,w-flat}.
# `bash bench/probe/weight-bytes-run.sh warm` compiles them into build/devcache here; the device
# call carries build/nvfp4jit and build/devcache.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
SETS="gpumode.txt:bench1:sm90a:192x128x64:s6:swap gpumode.txt:bench1:sm90a:128x128x128:s4:swap
gpumode.txt:bench3:sm90a:128x128x128:s4:swap moe.txt:single-large:sm90a:128x128x128:s4:swap
moe.txt:decode64-up:sm90a:128x24x128:s6:swap"
ARMS="base w-none sf-none w-flat"
tdir() { [ $1 = base ] && echo "" || echo "$PWD/build/probe-$1"; }
if [ "${1:-}" = warm ]; then
  for e in $SETS; do t=${e#*:}; t=${t#*:}
    for a in $ARMS; do NVFP4JIT_TEMPLATE_DIR=$(tdir $a) build/nvfp4jit compile --variant $t:act16 > /dev/null || echo "warm $a $t failed"; done
  done; exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $OUT/weight-bytes.txt
for e in $SETS; do f=${e%%:*}; r=${e#*:}; set=${r%%:*}; t=${r#*:}
  for a in $ARMS; do
    NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 60 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $set --variant $t:act16 > $OUT/f.tmp 2>&1
    echo "$set $a: $(grep -hE 'nvfp4jit sm' $OUT/f.tmp | head -1) $(grep -hE 'cache:' $OUT/f.tmp | head -1) $(grep -ciE 'rror' $OUT/f.tmp) err" | tee -a $OUT/weight-bytes.txt
  done
done
