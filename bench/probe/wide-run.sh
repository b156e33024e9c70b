#!/usr/bin/env bash
# Issue 13 part 4 (2026-12-08, fourteenth session): act16's wide form (BLOCK_M 256 at BLOCK_N > 64:
# two consumer warpgroups x two m64 halves, a producer warpgroup that gives its registers away
# with setmaxnreg; compiled whole-program, src/compile.c) on the GPU. build/: main with it.
# `bash bench/probe/wide-run.sh warm` here, then `tar czf build/devcache.tgz -C build devcache`;
# device: carry build/nvfp4jit, build/nvfp4jit_tests, build/devcache.tgz.
# Order: (1) gpu tests (the variant sweep has 4 wide variants; gpumode_tests runs the heuristic's
# choices, bench2's now wide) and the moe area; (2) compute-sanitizer memcheck/racecheck on a wide
# variant (demo); (3) same-run A/B per set: the choice before the wide form, the wide ones.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
W=swap:act16
AB="gpumode.txt:bench1:sm90a:192x128x64:s6:$W,sm90a:256x128x64:s6:$W,sm90a:256x96x64:s8:$W,sm90a:256x128x128:s4:$W
gpumode.txt:bench2:sm90a:128x96x128:s4:$W,sm90a:256x96x128:s3:$W,sm90a:256x128x128:s4:$W
gpumode.txt:bench3:sm90a:128x128x128:s4:$W,sm90a:256x128x128:s4:$W,sm90a:256x96x128:s4:$W
gpumode.txt:bench4:sm90a:128x128x128:s4:$W,sm90a:256x128x128:s4:$W,sm90a:256x96x128:s4:$W
moe.txt:prefill8-up:sm90a:128x128x128:s4:$W,sm90a:256x128x64:s4:$W
moe.txt:single-large:sm90a:128x128x128:s4:$W,sm90a:256x128x64:s4:$W
moe.txt:skewed8-up:sm90a:192x96x128:s4:$W,sm90a:256x96x128:s3:$W"
if [ "${1:-}" = warm ]; then
  for l in $AB; do v=${l#*:}; v=${v#*:}; echo "$v" | tr ',' '\n'; done | sort -u |
    xargs -P 2 -I{} build/nvfp4jit compile --variant {} > /dev/null || echo "a variant failed"
  for v in 256x128x64:s6 256x96x128:s4 256x72x256:s2 256x96x64:s3; do echo sm90a:$v:$W; done |
    xargs -P 2 -I{} build/nvfp4jit compile --variant {} > /dev/null || echo "a variant failed"
  build/nvfp4jit warm --arch sm_90a --problems problems/gpumode.txt --set 'test*,bench*' --jobs 2 | tail -1
  build/nvfp4jit warm --arch sm_90a --problems problems/moe.txt --jobs 2 | tail -1
  exit 0
fi
[ -d build/devcache ] || tar xzf build/devcache.tgz -C build
R=${OUT:-/tmp/out}; mkdir -p $R; T0=$SECONDS; LIMIT=${LIMIT:-540}
left() { echo $((LIMIT - (SECONDS - T0))); }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $R/wide.txt
for t in "gpu variant_sweep" "gpu gpumode_tests" "gpu edges" "gpu random_shapes" "moe"; do
  (cd build && timeout 150 ./nvfp4jit_tests $t) > $R/t.log 2>&1
  echo "$t rc $? ($((SECONDS - T0)) s): $(tail -1 $R/t.log)" | tee -a $R/wide.txt
  grep -E "FAIL" $R/t.log | head -8 | tee -a $R/wide.txt; cat $R/t.log >> $R/tests-full.txt
done
for tool in memcheck racecheck; do
  [ $(left) -lt 250 ] && { echo "time: $tool not run" | tee -a $R/wide.txt; continue; }
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 build/nvfp4jit demo --arch sm_90a \
    --problems problems/gpumode.txt --set bench4 --variant sm90a:256x96x128:s4:$W --iters 1 > $R/t.log 2>&1
  echo "$tool bench4 256x96x128:s4: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/t.log | tail -1)" | tee -a $R/wide.txt
done
for rep in 1 2; do for l in $AB; do
  f=${l%%:*}; r=${l#*:}; s=${r%%:*}; v=${r#*:}
  [ $(left) -lt 35 ] && { echo "time: $s rep $rep not run" | tee -a $R/wide.txt; continue; }
  timeout 60 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $s --variant "$v" > $R/ab.tmp 2>&1
  echo "== rep $rep rc $?" >> $R/wide.txt; cat $R/ab.tmp >> $R/ab-full.txt; grep -hE '^== |nvfp4jit sm|rror' $R/ab.tmp >> $R/wide.txt
done; done
rm -f $R/ab.tmp $R/t.log; echo "total $((SECONDS - T0)) s" | tee -a $R/wide.txt
