#!/usr/bin/env bash
# Set up and run the main job: build, then `nvfp4jit demo` on the benchmark sets of
# problems/gpumode.txt. Without a GPU it renders, compiles for sm_90a and sm_100a, caches and
# inspects; with an H100/H200 it also runs, checks against the CPU reference and times.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
B=${NVFP4JIT_BUILD_DIR:-build}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
exec "$B/nvfp4jit" demo "$@"
