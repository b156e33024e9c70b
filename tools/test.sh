#!/usr/bin/env bash
# Build (warnings are errors) and run every test with CTest. GPU tests print
# "skipped: no CUDA device" where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
B=${NVFP4JIT_BUILD_DIR:-build}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVFP4JIT_WERROR=ON ${NVFP4JIT_CMAKE_ARGS:-} >/dev/null
cmake --build "$B" -j"$(nproc)"
export NVFP4JIT_CACHE_DIR="$(mktemp -d)"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
trap 'rm -rf "$NVFP4JIT_CACHE_DIR"' EXIT
(cd "$B" && ctest --output-on-failure)
# CTest shows a skipped area only as "Skipped": print why (e.g. "skipped: no CUDA device")
grep -h '^SKIP ' "$B/Testing/Temporary/LastTest.log" 2>/dev/null || true
