#!/usr/bin/env bash
# Issue 13 part 1, the second call after one-call.sh (same machine, same carry): what the
# token-width menu changes inside the GEMM launch, by ncu: time, warp instructions, issue and
# tensor-pipe activity, for bench1/bench2 (the padded sets) with main's kernel (build-base) and
# the menu's (build), same variant; and the menu heuristic's own pick. LIMIT: seconds (def 400).
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
OUT=${OUT:-/tmp/out}; mkdir -p $OUT; T0=$SECONDS; LIMIT=${LIMIT:-400}
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
for spec in base:bench1:sm90a:192x128x64:s6:swap:act16 menu:bench1:sm90a:192x128x64:s6:swap:act16 menu:bench1:auto \
  base:bench2:sm90a:128x96x128:s4:swap:act16 menu:bench2:sm90a:128x96x128:s4:swap:act16 menu:bench2:auto \
  base:bench3:sm90a:128x128x128:s4:swap:act16 menu:bench3:sm90a:128x128x128:s4:swap:act16; do
  [ $((SECONDS - T0)) -gt $((LIMIT - 40)) ] && { echo "time: $spec not run"; continue; }
  b=${spec%%:*}; r=${spec#*:}; set=${r%%:*}; var=${r#*:}
  bin=build/nvfp4jit; [ $b = base ] && bin=build-base/nvfp4jit
  echo "### $b $set $var" | tee -a $OUT/width-ncu.txt
  timeout 60 ncu --clock-control none -k regex:'^nvfp4jit_grouped$' --launch-skip 5 -c 3 --metrics $M \
    $bin bench --iters 20 --no-cublas --problems problems/gpumode.txt --set $set --variant $var > $OUT/n.txt 2>&1
  echo "rc $?"; grep -E "smsp__|sm__|gpu__|nvfp4jit_grouped \(|nvfp4jit sm" $OUT/n.txt | tee -a $OUT/width-ncu.txt
done
echo "elapsed $((SECONDS - T0)) s"
