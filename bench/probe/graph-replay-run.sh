#!/usr/bin/env bash
# Issue 13 (graph replay slower than eager on prefill8-up / single-large, dd6663b): one probe
# binary (bench/probe/graph-replay.patch applied, built into build/ab-probe) with NJ_PROBE =
#   tree      the library as on main (stream capture of the PDL launch)
#   explicit  a capture adds the prep and GEMM nodes itself, joined by a programmatic edge
#   fulledge  the same two nodes with a default (full completion) edge
#   nopdl     the GEMM launched plainly, eager and captured
# bench prints the captured graph's nodes and edges ("probe" lines) and the eager / replay
# GPU times. Then `bench --moe` on prefill8-up (the MoE path: a hand-built graph with a
# programmatic edge, launched every call). Device tool: carry build/ab-probe/nvfp4jit, build/cache.
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/cache
B=build/ab-probe/nvfp4jit
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
for round in 1 2; do
  for mode in tree explicit fulledge nopdl; do
    for fs in moe.txt:prefill8-up,single-large gpumode.txt:bench3; do
      NJ_PROBE=$mode timeout 200 $B bench --iters 50 --no-cublas --problems problems/${fs%%:*} --set ${fs#*:} > $OUT/f.tmp 2>&1
      echo "## round $round $mode ${fs#*:} rc $?"
      if [ $round = 1 ]; then grep -hE '^== |graph replay|probe|rror' $OUT/f.tmp; else grep -hE '^== |graph replay|rror' $OUT/f.tmp; fi
    done
  done
done
timeout 200 $B bench --moe --iters 50 --no-cublas --problems problems/moe.txt --set prefill8-up,single-large > $OUT/m.tmp 2>&1
echo "## moe rc $?"; grep -hE '^== |MoE|interleaved|graph|rror' $OUT/m.tmp
