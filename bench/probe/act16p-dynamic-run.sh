#!/usr/bin/env bash
# (needs bench/probe/act16p-dynamic.patch applied to 5ff239d in build; tried, not kept: bench/RESULTS.md)
# act16p with a tile counter (the grouped path hands out tiles in order as CTAs free up, as
# the MoE path already did) against act16p's static stride (build-base) and act16, at the
# heuristic's tile of each set; correctness first. Device tool: carry build build-base;
# bash bench/probe/act16p-dynamic-run.sh ("warm": precompile here)
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
SETS="gpumode.txt:bench1:sm90a:128x128x128:s4:swap gpumode.txt:bench2:sm90a:128x96x128:s4:swap
gpumode.txt:bench3:sm90a:128x128x128:s4:swap gpumode.txt:bench4:sm90a:128x128x128:s4:swap
moe.txt:decode64-up:sm90a:128x24x128:s6:swap moe.txt:decode64-down:sm90a:128x24x128:s6:swap
moe.txt:prefill8-up:sm90a:128x128x128:s4:swap moe.txt:single-large:sm90a:128x128x128:s4:swap
moe.txt:skewed8-up:sm90a:192x96x128:s4:swap moe.txt:prefill16-big:sm90a:128x192x64:s6:swap"
if [ "${1:-}" = warm ]; then
  for e in $SETS; do t=${e#*:}; t=${t#*:}
    for s in act16 act16p; do build/nvfp4jit compile --variant $t:$s > /dev/null; done
    build-base/nvfp4jit compile --variant $t:act16p > /dev/null
  done; exit 0
fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
for t in persistent_many_tiles stream_k; do
  (cd build && timeout 120 ./nvfp4jit_tests gpu $t) > $OUT/t_$t.log 2>&1; echo "gpu.$t rc $? $(tail -1 $OUT/t_$t.log)"; grep FAIL $OUT/t_$t.log | head -3
done
(cd build && timeout 120 ./nvfp4jit_tests moe) > $OUT/moe.log 2>&1; echo "moe rc $? $(tail -1 $OUT/moe.log)"
for e in $SETS; do f=${e%%:*}; r=${e#*:}; set=${r%%:*}; t=${r#*:}
  timeout 60 build/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $set --variant $t:act16,$t:act16p > $OUT/f.tmp 2>&1
  echo "$set new rc $?" >> $OUT/ab.txt; grep -hE 'nvfp4jit sm|rror' $OUT/f.tmp >> $OUT/ab.txt
  timeout 60 build-base/nvfp4jit bench --iters 30 --no-cublas --problems problems/$f --set $set --variant $t:act16p > $OUT/f.tmp 2>&1
  echo "$set base rc $?" >> $OUT/ab.txt; grep -hE 'nvfp4jit sm|rror' $OUT/f.tmp | sed 's/act16p/act16p(static)/' >> $OUT/ab.txt
done
cat $OUT/ab.txt
(cd build && timeout 150 compute-sanitizer --tool racecheck ./nvfp4jit_tests gpu persistent_many_tiles) > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -2 $OUT/racecheck.log
