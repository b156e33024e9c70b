#!/usr/bin/env bash
# Issue 13 (2026-12-07, thirteenth session; updated 2026-12-08): today's narrow act16 kernels
# compiled whole-program against main's PTX path. First written for NVRTC straight to a cubin
# (bench/probe/nvrtc-cubin-path.patch, which no longer applies: src/compile.c now has the
# whole-program path, NVRTC -dlto + nvJitLink -lto, for the wide form); now build-p2/ is main +
# bench/probe/act16-whole-program.patch (every act16 kernel WHOLE_PROGRAM=1: the same SASS as
# NVRTC-to-cubin within ~8 instructions, 2026-12-08 on the CPU; about 40 fewer per variant than
# the PTX path). Is it slower or faster on the GPU, and still right?
# Build: git worktree add /tmp/p2 HEAD --detach; git -C /tmp/p2 apply bench/probe/act16-whole-program.patch;
# cmake -S /tmp/p2 -B build-p2 -DCMAKE_BUILD_TYPE=RelWithDebInfo; cmake --build build-p2 --target nvfp4jit nvfp4jit_tests
# `bash bench/probe/nvrtc-cubin-run.sh warm` here, tar czf build/devcache.tgz -C build devcache;
# device: carry build/nvfp4jit, build-p2/nvfp4jit, build-p2/nvfp4jit_tests, build/devcache.tgz.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
MOESETS=decode64-up,decode64-down,single-large
if [ "${1:-}" = warm ]; then
  xargs -P 2 -I{} build-p2/nvfp4jit compile --variant {} < bench/probe/sf3d-variants.txt > /dev/null || echo "a variant failed"
  for b in build build-p2; do
    $b/nvfp4jit warm --arch sm_90a --problems problems/gpumode.txt --set 'test*,bench*' --jobs 2 | tail -1
    $b/nvfp4jit warm --arch sm_90a --problems problems/moe.txt --set "edges,$MOESETS" --jobs 2 | tail -1
  done; exit 0
fi
[ -d build/devcache ] || tar xzf build/devcache.tgz -C build
R=${OUT:-/tmp/out}; mkdir -p $R; T0=$SECONDS; LIMIT=${LIMIT:-300}
left() { echo $((LIMIT - (SECONDS - T0))); }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $R/p2.txt
for t in variant_sweep gpumode_tests edges random_shapes; do
  (cd build-p2 && timeout 100 ./nvfp4jit_tests gpu $t) > $R/t.log 2>&1
  echo "p2 gpu $t rc $? ($((SECONDS - T0)) s): $(tail -1 $R/t.log)" | tee -a $R/p2.txt; grep -E "FAIL" $R/t.log | head -5 | tee -a $R/p2.txt
done
for rep in 1 2 3; do for f in gpumode.txt:'bench*' moe.txt:$MOESETS; do for b in build build-p2; do
  [ $(left) -lt 30 ] && { echo "time: $b $f rep $rep not run" | tee -a $R/p2.txt; continue; }
  timeout 60 $b/nvfp4jit bench --iters 30 --no-cublas --problems problems/${f%%:*} --set "${f#*:}" > $R/ab.tmp 2>&1
  echo "== $b rep $rep rc $?" >> $R/p2.txt; grep -hE '^== |nvfp4jit sm|rror' $R/ab.tmp >> $R/p2.txt
done; done; done
rm -f $R/ab.tmp $R/t.log; echo "total $((SECONDS - T0)) s" | tee -a $R/p2.txt
