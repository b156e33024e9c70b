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
