#!/usr/bin/env bash
# Issue 13 (2026-12-07): the second device call for act16-sf-3d (landing it) and two follow-ups.
# build/: main with bench/probe/act16-sf-3d.patch applied (what lands); build-base/: main before it;
# build-sf3d/: a worktree with act16-sf-3d.patch and act16-w-l2-256.patch (weight maps promote
# 256 bytes into L2). build/probe-*: bench/probe/weight-bytes-make.py run in the base worktree
# (its templates match build-base's host code), with the w-flat-al arm (W_BYTES-aligned flat copy).
# `bash bench/probe/sf3d-land-run.sh warm` here, then `tar czf build/devcache.tgz -C build devcache`;
# device: carry build/nvfp4jit, build/nvfp4jit_tests, build-base/nvfp4jit, build-sf3d/nvfp4jit,
# build/devcache.tgz, build/probe-w-flat, build/probe-w-flat-al.
# Order: (1) build's gpu and moe test areas; (2) compute-sanitizer memcheck and racecheck on
# build's demo (moe edges, gpumode bench4: act16 variants); (3) A/B base / sf3d / sf3d+L2-256,
# three rounds interleaved; (4) the weight-bytes arms base / w-flat / w-flat-al on build-base.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
MOESETS=decode64-up,decode64-down,single-large,prefill8-up
PROBE="gpumode.txt:bench1:sm90a:192x128x64:s6:swap gpumode.txt:bench3:sm90a:128x128x128:s4:swap
moe.txt:decode64-up:sm90a:128x24x128:s6:swap"
tdir() { [ $1 = base ] && echo "" || echo "$PWD/build/probe-$1"; }
if [ "${1:-}" = warm ]; then
  xargs -P 2 -I{} build/nvfp4jit compile --variant {} < bench/probe/sf3d-variants.txt > /dev/null || echo "a variant failed"
  for b in build build-base build-sf3d; do
    $b/nvfp4jit warm --arch sm_90a --problems problems/gpumode.txt --set 'test*,bench*' --jobs 2 | tail -1
    $b/nvfp4jit warm --arch sm_90a --problems problems/moe.txt --set "edges,$MOESETS" --jobs 2 | tail -1
  done
  for e in $PROBE; do t=${e#*:}; t=${t#*:}
    for a in base w-flat w-flat-al; do NVFP4JIT_TEMPLATE_DIR=$(tdir $a) build-base/nvfp4jit compile --variant $t:act16 > /dev/null || echo "warm $a $t failed"; done
  done; exit 0
fi
[ -d build/devcache ] || tar xzf build/devcache.tgz -C build
R=${OUT:-/tmp/out}; mkdir -p $R; T0=$SECONDS; LIMIT=${LIMIT:-560}
left() { echo $((LIMIT - (SECONDS - T0))); }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv,noheader | tee $R/tests.txt
for a in gpu moe; do
  (cd build && timeout 200 ./nvfp4jit_tests $a) > $R/t.log 2>&1
  echo "area $a rc $? ($((SECONDS - T0)) s): $(tail -1 $R/t.log)" | tee -a $R/tests.txt
  grep -E "^FAIL|^SKIP|  FAIL" $R/t.log | head -8 | tee -a $R/tests.txt; cat $R/t.log >> $R/tests-full.txt
done
for tool in memcheck racecheck; do for fs in moe.txt:edges gpumode.txt:bench4; do
  [ $(left) -lt 200 ] && { echo "time: $tool $fs not run" | tee -a $R/tests.txt; continue; }
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build/nvfp4jit demo --arch sm_90a \
    --problems problems/${fs%%:*} --set ${fs#*:} --iters 1 > $R/t.log 2>&1
  echo "$tool ${fs#*:}: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/t.log | tail -1)" | tee -a $R/tests.txt
done; done
ab() {  # file sets
  for rep in 1 2 3; do for b in build-base build build-sf3d; do
    [ $(left) -lt 40 ] && { echo "time: $b $2 rep $rep not run"; continue; }
    timeout 60 $b/nvfp4jit bench --iters 30 --no-cublas --problems problems/$1 --set "$2" > $R/ab.tmp 2>&1
    echo "== $b rep $rep rc $?"; cat $R/ab.tmp >> $R/ab-full.txt; grep -hE '^== |nvfp4jit sm|rror' $R/ab.tmp
  done; done
}
ab gpumode.txt 'bench*' 2>&1 | tee $R/ab.txt
ab moe.txt $MOESETS 2>&1 | tee -a $R/ab.txt
nvidia-smi --query-gpu=name --format=csv,noheader > $R/weight-bytes.txt
for e in $PROBE; do f=${e%%:*}; r=${e#*:}; set=${r%%:*}; t=${r#*:}
  for a in base w-flat w-flat-al; do
    [ $(left) -lt 15 ] && continue
    NVFP4JIT_TEMPLATE_DIR=$(tdir $a) timeout 60 build-base/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $set --variant $t:act16 > $R/f.tmp 2>&1
    echo "$set $a: $(grep -hE 'nvfp4jit sm' $R/f.tmp | head -1) $(grep -ciE 'rror' $R/f.tmp) err" | tee -a $R/weight-bytes.txt
  done
done
rm -f $R/ab.tmp $R/f.tmp $R/t.log; echo "total $((SECONDS - T0)) s" | tee -a $R/tests.txt
