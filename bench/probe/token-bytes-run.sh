#!/usr/bin/env bash
# Probe (issue 13): are the tensor-heavy sets bound by the fp16 token bytes each CTA reads from L2?
# Same binary, three renders of the act16 template (NVFP4JIT_TEMPLATE_DIR): as is; "half": a
# BLOCK_K 128 stage loads only its first 64-k token box (half the token bytes; results garbage);
# "none": no token loads at all. Made by bench/probe/token-bytes-make.py (from the templates of 1f9cd80) into
# build/probe-tok-{half,none}. Device tool: carry build; "warm" precompiles here.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
SETS="gpumode.txt:bench1:sm90a:128x128x128:s4:swap gpumode.txt:bench2:sm90a:128x96x128:s4:swap
gpumode.txt:bench3:sm90a:128x128x128:s4:swap gpumode.txt:bench4:sm90a:128x128x128:s4:swap
moe.txt:prefill8-up:sm90a:128x128x128:s4:swap moe.txt:single-large:sm90a:128x128x128:s4:swap
moe.txt:skewed8-up:sm90a:192x96x128:s4:swap"
ARMS="base half none"
tdir() { [ $1 = base ] && echo "" || echo "$PWD/build/probe-tok-$1"; }
if [ "${1:-}" = warm ]; then
  for e in $SETS; do t=${e#*:}; t=${t#*:}
    for a in $ARMS; do NVFP4JIT_TEMPLATE_DIR=$(tdir $a) build/nvfp4jit compile --variant $t:act16 > /dev/null || echo "warm $a $t failed"; done
  done; exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for round in 1 2; do
for e in $SETS; do f=${e%%:*}; r=${e#*:}; set=${r%%:*}; t=${r#*:}
  for a in $ARMS; do
    NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 60 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $set --variant $t:act16 > $OUT/f.tmp 2>&1
    echo "round $round $set $a: $(grep -hE 'nvfp4jit sm' $OUT/f.tmp | head -1) $(grep -ciE 'rror' $OUT/f.tmp) err" | tee -a $OUT/probe.txt
  done
done
done
