#!/usr/bin/env bash
# Issue 13 part 1, after the switch form measured no faster (2026-12-07, eleventh session): what
# binds bench1's k-step once its wgmma work is 17 % less? ncu on the GEMM launch only: time,
# tensor pipe, L2 throughput, warps per scheduler and the consumer stalls (per issued
# instruction), main's kernel (build-base) against the switch form (build), same variant; and the
# width probe's w32 case (bench/probe/width-probe.txt), where a native 192x32 tile (two CTAs per
# SM) ran 58 us and 192x128 with its 32-wide loop 81 us. Same carry as width-menu-ab.sh.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
OUT=${OUT:-/tmp/out}; mkdir -p $OUT; T0=$SECONDS; LIMIT=${LIMIT:-300}
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum
M=$M,smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,smsp__issue_active.avg.pct_of_peak_sustained_active
for r in barrier long_scoreboard wait membar sleeping short_scoreboard mio_throttle math_pipe_throttle dispatch_stall no_instruction lg_throttle selected branch_resolving misc not_selected; do
  M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio; done
for spec in base:gpumode.txt:bench1:sm90a:192x128x64:s6:swap:act16 menu:gpumode.txt:bench1:sm90a:192x128x64:s6:swap:act16 \
  menu:bench/probe/width-probe.txt:w32:sm90a:192x32x64:s6:swap:act16 menu:bench/probe/width-probe.txt:w32:sm90a:192x128x64:s6:swap:act16 \
  base:gpumode.txt:bench3:sm90a:128x128x128:s4:swap:act16; do
  [ $((SECONDS - T0)) -gt $((LIMIT - 40)) ] && { echo "time: $spec not run"; continue; }
  b=${spec%%:*}; r=${spec#*:}; f=${r%%:*}; r=${r#*:}; set=${r%%:*}; var=${r#*:}
  bin=build/nvfp4jit; [ $b = base ] && bin=build-base/nvfp4jit
  case $f in */*) ;; *) f=problems/$f ;; esac
  echo "### $b $set $var"
  timeout 90 ncu --clock-control none -k regex:'^nvfp4jit_grouped$' --launch-skip 5 -c 1 --metrics $M \
    $bin bench --iters 10 --no-cublas --problems $f --set $set --variant $var 2>&1 |
    grep -E "smsp__|sm__|lts__|dram__|gpu__|nvfp4jit_grouped \(|rror" | sed "s/smsp__average_warps_issue_stalled_/stall_/"
done
echo "elapsed $((SECONDS - T0)) s"
