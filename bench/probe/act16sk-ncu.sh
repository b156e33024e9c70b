#!/usr/bin/env bash
# act16sk vs act16: ncu time, DRAM bytes, L2 hit rate of the GEMM launches (H100)
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=/tmp/nvfp4jit-cache
for spec in moe.txt:prefill8-up:sm90a:128x128x128:s4:swap:act16sk moe.txt:prefill8-up:sm90a:128x128x128:s4:swap:act16 \
  gpumode.txt:bench3:sm90a:128x192x64:s6:swap:act16sk gpumode.txt:bench3:sm90a:128x192x64:s6:swap:act16 \
  gpumode.txt:bench3:sm90a:128x128x128:s4:swap:act16sk gpumode.txt:bench3:sm90a:128x128x128:s4:swap:act16 \
  gpumode.txt:bench2:sm90a:128x96x128:s4:swap:act16sk gpumode.txt:bench2:sm90a:128x96x128:s4:swap:act16; do
  f=${spec%%:*}; r=${spec#*:}; set=${r%%:*}; var=${r#*:}
  timeout 100 ncu --clock-control none -k regex:'^nvfp4jit_grouped' -c 40 --csv \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
    build/nvfp4jit bench --iters 20 --no-cublas --problems problems/$f --set $set --variant $var > $OUT/n.csv 2>&1
  echo "### $set $var rc $?"
  python3 bench/probe/ncu_summary.py $OUT/n.csv | grep -v "^/"
done

# stall part (bench/data/2026-12-06-h100-act16sk-stalls.txt)
M=smsp__inst_executed.sum,gpu__time_duration.sum
for r in barrier long_scoreboard wait membar sleeping short_scoreboard mio_throttle math_pipe_throttle dispatch_stall no_instruction lg_throttle selected branch_resolving drain misc not_selected; do
  M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio; done
for var in sm90a:128x128x128:s4:swap:act16sk sm90a:128x128x128:s4:swap:act16; do
  echo "### bench3 $var"
  timeout 150 ncu --clock-control none -k regex:'^nvfp4jit_grouped$' --launch-skip 5 -c 2 --metrics $M \
    build/nvfp4jit bench --iters 20 --no-cublas --problems problems/gpumode.txt --set bench3 --variant $var 2>&1 | grep -E "smsp__|gpu__|nvfp4jit_grouped \(" | sed "s/smsp__average_warps_issue_stalled_/stall_/"
done
