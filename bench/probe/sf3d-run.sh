#!/usr/bin/env bash
# Issue 13 (2026-12-07/08): one device call for bench/probe/act16-sf-3d.patch (a stage's weight
# scales as one 3-D TMA box) and the weight-bytes probe's w-flat arm.
# build/: main; build-sf3d/: main with the patch applied (git worktree, `git apply`, cmake -S it
# -B build-sf3d). `bash bench/probe/sf3d-run.sh warm` compiles into build/devcache, with both
# binaries, the gpu tests' variants (bench/probe/sf3d-variants.txt, from tests/test_gpu.c), the
# heuristic's choices of gpumode test*/bench* and the MoE sets below, and the weight-bytes arms.
# Device tool: carry build/nvfp4jit, build-sf3d/nvfp4jit, build-sf3d/nvfp4jit_tests, build-l2/nvfp4jit,
# build/devcache.tgz (tar czf of build/devcache: over the 64 MiB carry as is), build/probe-w-none, build/probe-sf-none, build/probe-w-flat.
# Order on the device: (1) the patch's gpu tests (correctness first); (2) A/B, base and patch
# interleaved twice per set, with build-l2/ (bench/probe/act16-w-l2-256.patch: the weight
# copies promote 256 bytes into L2, not 128; same kernels); (3) the weight-bytes probe; (4) the A/B on the MoE sets.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
MOESETS=decode64-up,decode64-down,single-large,prefill8-up
if [ "${1:-}" = warm ]; then
  for b in build build-sf3d; do
    xargs -P 2 -I{} $b/nvfp4jit compile --variant {} < bench/probe/sf3d-variants.txt > /dev/null || echo "$b: a variant failed"
    $b/nvfp4jit warm --arch sm_90a --problems problems/gpumode.txt --set 'test*,bench*' --jobs 2 | tail -1
    $b/nvfp4jit warm --arch sm_90a --problems problems/moe.txt --set "edges,$MOESETS" --jobs 2 | tail -1
  done
  bash bench/probe/weight-bytes-run.sh warm; exit 0
fi
[ -d build/devcache ] || tar xzf build/devcache.tgz -C build
# Plain files straight into $OUT (at most 8 come back; a killed call still returns them):
# gpu.txt (machine, then the tests), ab.txt (A/B), weight-bytes.txt; LIMIT: seconds for it all;
# a test starts only with TESTS_MIN (default 250) seconds left.
R=${OUT:-/tmp/out}; mkdir -p $R; T0=$SECONDS; LIMIT=${LIMIT:-560}
left() { echo $((LIMIT - (SECONDS - T0))); }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $R/gpu.txt
for t in variant_sweep stream_k persistent_many_tiles gpumode_tests edges random_shapes; do
  [ $(left) -lt ${TESTS_MIN:-250} ] && { echo "time: gpu $t not run" | tee -a $R/gpu.txt; continue; }
  (cd build-sf3d && timeout 150 ./nvfp4jit_tests gpu $t) > $R/t.log 2>&1
  echo "sf3d gpu $t rc $? ($((SECONDS - T0)) s): $(tail -1 $R/t.log)" | tee -a $R/gpu.txt
  grep -E "FAIL" $R/t.log | head -5 | tee -a $R/gpu.txt; cat $R/t.log >> $R/gpu-tests-full.txt
done
ab() {  # file sets
  for rep in 1 2; do for b in build build-sf3d build-l2; do
    [ $(left) -lt 60 ] && { echo "time: $b $2 rep $rep not run"; continue; }
    timeout 60 $b/nvfp4jit bench --iters 30 --no-cublas --problems problems/$1 --set "$2" > $R/ab.tmp 2>&1
    echo "== $b rep $rep rc $?"; cat $R/ab.tmp >> $R/ab-full.txt; grep -hE '^== |nvfp4jit sm|rror' $R/ab.tmp
  done; done
}
ab gpumode.txt 'bench*' 2>&1 | tee $R/ab.txt
[ $(left) -gt 150 ] && OUT=$R bash bench/probe/weight-bytes-run.sh
ab moe.txt $MOESETS 2>&1 | tee -a $R/ab.txt
rm -f $R/ab.tmp $R/f.tmp $R/t.log; echo "total $((SECONDS - T0)) s" | tee -a $R/gpu.txt
