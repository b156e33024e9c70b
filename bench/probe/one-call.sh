#!/usr/bin/env bash
# One device call for a session that may get only one machine start (2026-12-07: two sessions
# of refused starts): width-menu-ab.sh (the token-width patch against main), then main's
# same-run tables against cuBLAS (gpumode bench*, the MoE sets) while time is left. Everything
# lands in $OUT/all.tgz (the device tool returns at most 8 files). Build and warm as
# width-menu-ab.sh's header says; carry build/nvfp4jit, build/nvfp4jit_tests,
# build-base/nvfp4jit, build/devcache. LIMIT: seconds this script may use (default 540).
set -u
OUT0=${OUT:-/tmp/out}; R=$OUT0/r; mkdir -p $R; T0=$SECONDS; LIMIT=${LIMIT:-540}
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=$PWD/build/devcache
OUT=$R bash bench/probe/width-menu-ab.sh 2>&1 | tee $R/ab-summary.txt
left() { echo $((LIMIT - (SECONDS - T0))); }
for fs in "gpumode.txt bench* 100" "moe.txt decode64-up,decode64-down,prefill8-up,skewed8-up,single-large 150"; do
  set -f; set -- $fs; set +f
  [ $(left) -lt $(($3 + 20)) ] && { echo "time: $1 table not run"; continue; }
  timeout $3 build-base/nvfp4jit bench --iters 50 --problems problems/$1 --set "$2" --csv $R/${1%.txt}.csv > $R/${1%.txt}.txt 2>&1
  echo "main's table $1 rc $?"; grep -hE '^== |nvfp4jit sm|cuBLAS|graph replay|geomean|rror' $R/${1%.txt}.txt
done
rm -f $R/ab.tmp $R/wp.tmp
(cd $OUT0 && tar czf all.tgz r && rm -rf r)
echo "one-call elapsed $((SECONDS - T0)) s"
