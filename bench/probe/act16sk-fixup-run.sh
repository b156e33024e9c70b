#!/usr/bin/env bash
set -u
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=/tmp/nvfp4jit-cache
(cd build && timeout 150 ./nvfp4jit_tests gpu stream_k) > $OUT/sk_test.log 2>&1; echo "stream_k rc $?"; tail -2 $OUT/sk_test.log; grep FAIL $OUT/sk_test.log | head
B=build/nvfp4jit
run() { timeout 120 $B bench --iters 30 --no-cublas --problems problems/$3 --set $1 --variant $2 > $OUT/f.tmp 2>&1; echo "== $1 rc $?"; cat $OUT/f.tmp >> $OUT/forced.txt; grep -hE "nvfp4jit sm|rror" $OUT/f.tmp; }
for r in 1 2; do
run bench1 sm90a:128x96x128:s4:swap:act16sk,sm90a:128x96x128:s4:swap:act16 gpumode.txt
run bench2 sm90a:128x96x128:s4:swap:act16sk,sm90a:128x96x128:s4:swap:act16 gpumode.txt
run bench3 sm90a:128x192x64:s6:swap:act16sk,sm90a:128x192x64:s6:swap:act16,sm90a:128x128x128:s4:swap:act16sk,sm90a:128x128x128:s4:swap:act16 gpumode.txt
run bench4 sm90a:128x128x128:s4:swap:act16sk,sm90a:128x128x128:s4:swap:act16 gpumode.txt
run single-large sm90a:128x128x128:s4:swap:act16sk,sm90a:128x128x128:s4:swap:act16 moe.txt
done
(cd build && timeout 150 compute-sanitizer --tool memcheck ./nvfp4jit_tests gpu stream_k) > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -2 $OUT/memcheck.log
