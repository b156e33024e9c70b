#!/usr/bin/env bash
# stream-K (act16sk) first GPU call: correctness, forced A/B, heuristic A/B vs HEAD binary, areas, sanitizers
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=/tmp/nvfp4jit-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
t0=$(date +%s)
(cd build && timeout 150 ./nvfp4jit_tests gpu stream_k) > $OUT/sk_test.log 2>&1; echo "stream_k rc $? $(( $(date +%s)-t0 ))s"; tail -4 $OUT/sk_test.log
grep -E "FAIL|fail" $OUT/sk_test.log | head -20
B=build/nvfp4jit
run() { timeout 120 $B bench --iters 30 --no-cublas --problems problems/gpumode.txt --set $1 --variant $2 > $OUT/f.tmp 2>&1; echo "== $1 rc $?"; cat $OUT/f.tmp >> $OUT/forced.txt; grep -hE "nvfp4jit sm|rror|geomean" $OUT/f.tmp; }
for r in 1 2; do
run bench1 sm90a:128x96x128:s4:swap:act16sk,sm90a:128x96x128:s4:swap:act16,sm90a:192x128x64:s6:swap:act16
run bench2 sm90a:128x96x128:s4:swap:act16sk,sm90a:128x96x128:s4:swap:act16
run bench3 sm90a:128x192x64:s6:swap:act16sk,sm90a:128x192x64:s6:swap:act16,sm90a:128x128x128:s4:swap:act16
run bench4 sm90a:128x128x128:s4:swap:act16sk,sm90a:128x128x128:s4:swap:act16
done
echo "forced done $(( $(date +%s)-t0 ))s"
AB_SETS="moe.txt:prefill8-up moe.txt:skewed8-up moe.txt:single-large gpumode.txt:bench1 gpumode.txt:bench2 gpumode.txt:bench3 gpumode.txt:bench4" \
  AB_ITERS=30 AB_NO_CUBLAS=1 timeout 260 bash bench/h200.sh ab base=build-base/nvfp4jit new=build/nvfp4jit 2>&1 | grep "^== " | tee $OUT/ab_summary.txt
echo "ab done $(( $(date +%s)-t0 ))s"
(cd build && timeout 200 ./nvfp4jit_tests gpu) > $OUT/gpu_area.log 2>&1; echo "gpu area rc $?"; tail -2 $OUT/gpu_area.log
(cd build && timeout 120 ./nvfp4jit_tests moe) > $OUT/moe_area.log 2>&1; echo "moe area rc $?"; tail -2 $OUT/moe_area.log
echo "areas done $(( $(date +%s)-t0 ))s"
left=$(( 570 - ($(date +%s)-t0) ))
(cd build && timeout $(( left/2 )) compute-sanitizer --tool memcheck ./nvfp4jit_tests gpu stream_k) > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -3 $OUT/memcheck.log
left=$(( 575 - ($(date +%s)-t0) ))
(cd build && timeout $left compute-sanitizer --tool racecheck ./nvfp4jit_tests gpu stream_k) > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -3 $OUT/racecheck.log
echo "all done $(( $(date +%s)-t0 ))s"
