#!/usr/bin/env bash
# Set up and run the main job: build, then `nvfp4jit demo` on the benchmark sets of
# problems/gpumode.txt. Without a GPU it renders, compiles for sm_90a and sm_100a, caches and
# inspects; with an H100/H200 it also runs, checks against the CPU reference and times.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! { [ -f /usr/include/lua5.4/lua.h ] && [ -f /usr/include/xxhash.h ]; }; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq liblua5.4-dev libxxhash-dev >/dev/null
  else
    echo "install liblua5.4-dev and libxxhash-dev (e.g. sudo apt-get install liblua5.4-dev libxxhash-dev)" >&2
    exit 1
  fi
fi
B=${NVFP4JIT_BUILD_DIR:-build}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
exec "$B/nvfp4jit" demo "$@"
