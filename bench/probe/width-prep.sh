#!/usr/bin/env bash
# On the CPU machine, before the device call: build-base/ from HEAD, build/ from HEAD with a
# width patch (default bench/probe/act16-width-switch.patch), then build/devcache warmed with
# both for bench/probe/width-menu-ab.sh and bench/probe/width-ncu.sh. The working tree is left as
# it was (the patch is applied only for the build). Then, in one device call (~100 s):
#   mkdir -p $OUT/r; OUT=$OUT/r bash bench/probe/width-menu-ab.sh; OUT=$OUT/r bash bench/probe/width-ncu.sh
# with carry build/nvfp4jit, build/nvfp4jit_tests, build-base/nvfp4jit, build/devcache.
set -eu
P=${1:-bench/probe/act16-width-switch.patch}
export PATH=/usr/local/cuda/bin:$PATH NVFP4JIT_SOURCE_DIR=$PWD
git diff --quiet -- src templates tests || { echo "width-prep: src/templates/tests have changes"; exit 1; }
WT=$(mktemp -d)/base
APPLIED=0
cleanup() {
  [ $APPLIED = 1 ] && git apply -R "$P"
  git worktree remove --force "$WT" 2> /dev/null || true
}
trap cleanup EXIT
git worktree add -q --detach "$WT" HEAD
rm -rf build-base   # (a cache made from another source directory would be refused)
cmake -S "$WT" -B build-base -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-base -j"$(nproc)" --target nvfp4jit > /dev/null
git apply "$P"
APPLIED=1
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j"$(nproc)" > /dev/null
rm -rf build/devcache
for B in build/nvfp4jit build-base/nvfp4jit; do
  $B --cache-dir build/devcache warm --arch sm_90a --problems problems/gpumode.txt --set 'bench*'
  $B --cache-dir build/devcache warm --arch sm_90a --problems problems/moe.txt \
    --set prefill8-up,skewed8-up,single-large,decode64-up,decode64-down
done
for v in 192x32x64:s6 192x64x64:s6 192x96x64:s6 192x128x64:s6 128x96x128:s4 192x96x128:s4 \
  128x128x128:s4 128x128x64:s6 128x192x64:s6; do
  build/nvfp4jit --cache-dir build/devcache compile --variant sm90a:$v:swap:act16 > /dev/null
done
for v in 128x96x128:s4:swap:act16p 128x128x64:s4:swap:act16p 128x128x128:s4:swap:act16sk; do
  build/nvfp4jit --cache-dir build/devcache compile --variant sm90a:$v > /dev/null
done
du -sh build/devcache
