#!/usr/bin/env bash
# Static SASS counts of the act16 GEMM's k-loop (CPU only; issue 13): instructions between
# consecutive wgmma groups (bench/probe/loop_sass_count.py), per variant. Needs nvdisasm on PATH.
# Usage: bash bench/probe/loop-sass-count.sh [build]
set -u
B=${1:-build}
export NVFP4JIT_SOURCE_DIR=$PWD
for v in 256x128x64:s6 192x128x64:s6 128x128x64:s6 256x96x128:s4 128x96x128:s4 128x128x128:s4 256x128x128:s4; do
  echo "== sm90a:$v:swap:act16"
  $B/nvfp4jit inspect --variant sm90a:$v:swap:act16 --sass 2>/dev/null | python3 bench/probe/loop_sass_count.py
done
