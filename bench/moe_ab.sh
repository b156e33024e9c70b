#!/usr/bin/env bash
# A/B of the MoE path against the grouped call on the H200 (one process per template dir):
#   bash bench/moe_ab.sh TAG=TEMPLATE_DIR ...   (TEMPLATE_DIR empty: the built-in templates)
# Each runs `nvfp4jit bench --moe` on moe.txt (decode64-up/down, prefill8-up, skewed8-up,
# no cuBLAS) and gpumode.txt (bench1-4, no cuBLAS); prints the grouped and MoE rows.
set -uo pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
B=${NVFP4JIT_BUILD_DIR:-build}
for spec in "$@"; do
  tag=${spec%%=*}; dir=${spec#*=}
  for fs in moe.txt:decode64-up,decode64-down,prefill8-up,skewed8-up gpumode.txt:bench1,bench2,bench3,bench4; do
    echo "== $tag ${fs%%:*}"
    NVFP4JIT_TEMPLATE_DIR=$dir timeout 200 "$B/nvfp4jit" bench --moe --iters 20 --no-cublas \
      --problems "problems/${fs%%:*}" --set "${fs#*:}" 2>&1 | tee -a "$OUT/moe_ab_$tag.txt" \
      | grep -E '^== |MoE path|nvfp4jit sm|rror'
  done
done
