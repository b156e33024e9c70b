#!/usr/bin/env bash
# One call on the lent H200 (device tool): GPU tests, then benchmarks. Run from the repo root
# with a build in ./build (carried). Logs and CSVs go to $OUT (or ./out).
#   bash bench/h200.sh tests            GPU test areas gpu, gpuref, tune
#   bash bench/h200.sh python [--sets S]  Python package: torch/GPU tests, host time per call
#   bash bench/h200.sh bench SPEC...    SPEC = FILE:SETS[:VARIANT]  (VARIANT empty: heuristic)
#   bash bench/h200.sh ncu FILE SET VARIANT   Nsight Compute sections of one launch of the GEMM kernel
#   bash bench/h200.sh final           all of the above for a release: GPU tests, sanitizers, bench table
#   bash bench/h200.sh sanitize V...    compute-sanitizer memcheck + racecheck of `demo` (edges, bench4)
#   bash bench/h200.sh engine           graphs, host time, MoE path: tests, memcheck, bench --moe
#   bash bench/h200.sh verify           GPU test areas, MoE memcheck, bench --moe on moe.txt and gpumode.txt
#   bash bench/h200.sh moegap           MoE path vs the grouped call of the same variant, act16 and act16p
#   bash bench/h200.sh prepab TAG=BIN...  token prep A/B: ncu times of the prep kernels, bench --moe
#   bash bench/h200.sh ab TAG=BIN...    kernel A/B: each set's heuristic variant per binary, A B A B, then cuBLAS
#   bash bench/h200.sh soak             10,000-call soak, memcheck/racecheck/synccheck per strategy + MoE
set -uo pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
export NVFP4JIT_SOURCE_DIR=$PWD NVFP4JIT_CACHE_DIR=${NVFP4JIT_CACHE_DIR:-/tmp/nvfp4jit-cache}
B=${NVFP4JIT_BUILD_DIR:-build}
mode=$1; shift
case $mode in
tests)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  for a in ${AREAS:-gpu gpuref tune}; do   # from the build dir, as CTest runs them
    (cd "$B" && timeout 400 ./nvfp4jit_tests $a) 2>&1 | tee -a "$OUT/tests.log"
  done ;;
python)   # the Python package (issue 14): torch + GPU tests, then host time per call vs the C call
  export PYTHONPATH=$PWD/python NVFP4JIT_BUILD_DIR=$B NVFP4JIT_TOOL=$PWD/$B/nvfp4jit
  timeout 500 python3 python/tests/run.py test_torch.py 2>&1 | tee -a "$OUT/python.log"
  timeout 300 python3 python/tests/run.py test_capi.py 2>&1 | tail -5 | tee -a "$OUT/python.log"
  timeout 300 python3 bench/host_time.py "$@" 2>&1 | tee -a "$OUT/python.log" ;;
bench)
  for spec in "$@"; do
    file=${spec%%:*}; rest=${spec#*:}; sets=${rest%%:*}; var=""
    [ "$sets" != "$rest" ] && var=${rest#*:}
    tag=$(echo "${sets}_${var:-heur}" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-60)
    args=(--problems "problems/$file" --set "$sets" --iters 20 --csv "$OUT/bench_$tag.csv")
    [ -n "$var" ] && args+=(--variant "$var")
    [ -n "${NOCUBLAS:-}" ] && args+=(--no-cublas)
    timeout 300 "$B/nvfp4jit" bench "${args[@]}" 2>&1 | tee -a "$OUT/bench.log"
  done ;;
ncu)   # bash bench/h200.sh ncu FILE SET VARIANT: one launch of the GEMM kernel, with per-instruction stalls
  ncu --clock-control none -k regex:'^nvfp4jit_grouped$' -s 3 -c 1 --set full --import-source no \
      -o "$OUT/ncu_$2" -f "$B/nvfp4jit" bench --problems "problems/$1" --set "$2" --variant "$3" \
      --iters 20 --no-cublas > /dev/null 2>&1
  ncu -i "$OUT/ncu_$2.ncu-rep" --page details > "$OUT/ncu_$2.txt" 2>&1
  ncu -i "$OUT/ncu_$2.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_$2_sass.csv" 2>&1
  grep -E 'Throughput|Duration|Issued|Eligible|Active Warps|L2 Hit|Busy' "$OUT/ncu_$2.txt" | head -30 ;;
sanitize)   # bash bench/h200.sh sanitize VARIANT...: edges (moe.txt) and bench4 (gpumode.txt) each
  for tool in memcheck racecheck; do
    for v in "$@"; do
      for fs in moe.txt:edges gpumode.txt:bench4; do
        echo "== $tool $v ${fs#*:}" | tee -a "$OUT/sanitize.log"
        timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 "$B/nvfp4jit" demo --arch sm_90a \
          --problems "problems/${fs%%:*}" --set "${fs#*:}" --variant "$v" --iters 1 2>&1 \
          | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|FAIL|error' | tee -a "$OUT/sanitize.log"
        echo "exit ${PIPESTATUS[0]}" | tee -a "$OUT/sanitize.log"
      done
    done
  done ;;
final)   # the release check: every GPU test area, the bench table, sanitizers on the heuristic's choices
  export NVFP4JIT_CACHE_DIR=$(mktemp -d)
  for a in gpu gpuref tune; do
    (cd "$B" && timeout 240 ./nvfp4jit_tests $a) > "$OUT/tests_$a.log" 2>&1
    echo "tests $a: rc $? $(tail -1 "$OUT/tests_$a.log")"; grep -E '^FAIL|FAIL ' "$OUT/tests_$a.log" | head -5
  done
  timeout 150 "$B/nvfp4jit" bench --iters 30 --csv "$OUT/final_gpumode.csv" > "$OUT/final_gpumode.txt" 2>&1
  grep -hE '^== |nvfp4jit sm|cuBLAS|^geomean' "$OUT/final_gpumode.txt"
  for spec in memcheck:moe.txt:edges racecheck:moe.txt:edges memcheck:gpumode.txt:bench4 \
              racecheck:gpumode.txt:bench4; do
    IFS=: read -r tool file set <<<"$spec"
    timeout 75 compute-sanitizer --tool $tool --error-exitcode 9 "$B/nvfp4jit" demo --arch sm_90a \
      --problems "problems/$file" --set "$set" --iters 1 > "$OUT/san_${tool}_$set.log" 2>&1
    echo "$tool $set: rc $? $(grep -E 'variant:' "$OUT/san_${tool}_$set.log" | head -1) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_$set.log" | tail -1)"
  done
  timeout 200 "$B/nvfp4jit" bench --problems problems/moe.txt --set 'decode*,prefill*,skewed*,single*,edges' \
    --iters 20 --csv "$OUT/final_moe.csv" > "$OUT/final_moe.txt" 2>&1
  grep -hE '^== |nvfp4jit sm|cuBLAS|^geomean' "$OUT/final_moe.txt" ;;
engine)   # issue 12: graphs, host time, the MoE path (tests, sanitizers, bench with --moe)
  (cd "$B" && for t in "moe" "gpu graphs" "gpu host_ahead"; do timeout 300 ./nvfp4jit_tests $t; done) \
    > "$OUT/engine_tests.log" 2>&1
  grep -E '^(ok|FAIL|SKIP)|passed|  (graphs|host_ahead|decode64|bad offsets|moe_small)' "$OUT/engine_tests.log"
  for t in "moe bad_offsets" "moe small" "gpu graphs"; do
    (cd "$B" && timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 ./nvfp4jit_tests $t) \
      > "$OUT/engine_memcheck.log" 2>&1
    echo "memcheck $t: rc $? $(grep -E 'ERROR SUMMARY' "$OUT/engine_memcheck.log" | tail -1)"
  done
  timeout 200 "$B/nvfp4jit" bench --moe --iters 20 --problems problems/moe.txt \
    --set decode64-up,decode64-down,prefill8-up,skewed8-up --no-cublas > "$OUT/engine_moe.txt" 2>&1
  timeout 150 "$B/nvfp4jit" bench --moe --iters 20 --csv "$OUT/engine_gpumode.csv" > "$OUT/engine_gpumode.txt" 2>&1
  grep -hE '^== |nvfp4jit sm|sm90a:|host us|cuBLAS|rror|^geomean' "$OUT/engine_moe.txt" "$OUT/engine_gpumode.txt" ;;
soak)   # issue 11 part 7: the 10,000-call soak, then every sanitizer on every strategy (edges set) and the MoE path
  (cd "$B" && NVFP4JIT_TEST_SOAK=1 timeout 200 ./nvfp4jit_tests gpu soak) 2>&1 | tee "$OUT/soak.log" | grep -E 'soak|^ok|FAIL'
  for v in sm90a:128x128x64:s4 sm90a:128x32x128:s3:swap sm90a:128x64x64:s4:swap:act16 sm90a:128x64x64:s4:swap:act16p; do
    for tool in memcheck racecheck synccheck; do
      timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$B/nvfp4jit" demo --arch sm_90a \
        --problems problems/moe.txt --set edges --variant "$v" --iters 1 > "$OUT/san.log" 2>&1
      echo "$tool $v edges: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
    done
  done
  for tool in racecheck synccheck; do
    (cd "$B" && timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 ./nvfp4jit_tests moe small) > "$OUT/san.log" 2>&1
    echo "$tool moe small: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
  done ;;
verify)   # after a renovation: every GPU test area, the MoE bad-offset test under memcheck, then the
  # MoE path against the grouped call on moe.txt and gpumode.txt (bench --moe, cuBLAS on gpumode)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  for a in gpu gpuref tune moe; do
    (cd "$B" && timeout 300 ./nvfp4jit_tests $a) > "$OUT/verify_$a.log" 2>&1
    echo "tests $a: rc $? $(tail -n 1 "$OUT/verify_$a.log")"; grep -E '^FAIL|  FAIL' "$OUT/verify_$a.log" | head -5
  done
  (cd "$B" && timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 ./nvfp4jit_tests moe bad_offsets) \
    > "$OUT/verify_memcheck.log" 2>&1
  echo "memcheck moe bad_offsets: rc $? $(grep -E 'ERROR SUMMARY' "$OUT/verify_memcheck.log" | tail -n 1)"
  (cd "$B" && timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 ./nvfp4jit_tests moe small) \
    > "$OUT/verify_racecheck.log" 2>&1
  echo "racecheck moe small: rc $? $(grep -E 'RACECHECK SUMMARY' "$OUT/verify_racecheck.log" | tail -n 1)"
  timeout 150 "$B/nvfp4jit" bench --moe --iters 20 --problems problems/moe.txt --no-cublas \
    --set decode64-up,decode64-down,prefill8-up,skewed8-up > "$OUT/verify_bench_moe.txt" 2>&1
  timeout 150 "$B/nvfp4jit" bench --moe --iters 20 > "$OUT/verify_bench_gpumode.txt" 2>&1
  grep -hE '^== |nvfp4jit sm|MoE path|host us|floor|cuBLAS fp16 loop|^geomean|rror' \
    "$OUT/verify_bench_moe.txt" "$OUT/verify_bench_gpumode.txt" ;;
moegap)   # issue 12: the MoE path against the grouped call of the same variant, per strategy
  # (bench --moe --variant V prints both in one process; MOEGAP_SETS, MOEGAP_STRATEGIES)
  for spec in ${MOEGAP_SETS:-moe.txt:decode64-up:128x24x64 moe.txt:decode64-down:64x24x64 moe.txt:skewed8-up:128x96x64 \
              gpumode.txt:bench1:128x128x64 gpumode.txt:bench3:128x128x64 gpumode.txt:bench4:128x128x64}; do
    IFS=: read -r file set v <<<"$spec"
    for strat in ${MOEGAP_STRATEGIES:-act16 act16p}; do
      echo "== $set $v $strat"
      timeout 200 "$B/nvfp4jit" bench --moe --iters 20 --no-cublas \
        --problems "problems/$file" --set "$set" --variant "sm90a:$v:s4:swap:$strat" \
        2>&1 | tee -a "$OUT/moegap.log" | grep -E "sm90a:|MoE path|host us|floor|rror"
    done
  done ;;
prepab)   # issue 13 (token prep): per binary (TAG=PATH of an nvfp4jit command), ncu time, DRAM
  # bytes, occupancy and registers of every prep and GEMM launch (grouped and MoE: bench --moe
  # runs both; the MoE prep has grid 1 + N, the MoE GEMM the worst case's grid) on PREPAB_NCU
  # sets (medians: bench/probe/ncu_summary.py; raw CSVs in $OUT/prepab_ncu.tgz), then bench --moe
  # on moe.txt and gpumode.txt (grouped call and MoE path of the heuristic's variant, no cuBLAS)
  for spec in "$@"; do
    tag=${spec%%=*}; bin=${spec#*=}
    for fs in ${PREPAB_NCU:-moe.txt:prefill8-up gpumode.txt:bench3}; do
      f="$OUT/prepab_ncu_${tag}_${fs#*:}.csv"
      timeout 240 ncu --clock-control none -k regex:'^nvfp4jit_grouped' -c ${PREPAB_COUNT:-600} --csv \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
        "$bin" bench --moe --iters 20 --no-cublas --problems "problems/${fs%%:*}" --set "${fs#*:}" \
        > "$f" 2>&1
      echo "ncu $tag ${fs#*:}: rc $?"
      python3 bench/probe/ncu_summary.py "$f" | tee -a "$OUT/prepab_ncu_summary.txt"
    done
    for fs in ${PREPAB_BENCH:-moe.txt:decode64-up,decode64-down,prefill8-up,prefill16-big,skewed8-up gpumode.txt:bench1,bench2,bench3,bench4}; do
      timeout 240 "$bin" bench --moe --iters 20 --no-cublas --problems "problems/${fs%%:*}" \
        --set "${fs#*:}" > "$OUT/prepab.tmp" 2>&1
      echo "== $tag ${fs%%:*}: rc $?"
      cat "$OUT/prepab.tmp" >> "$OUT/prepab_bench_${tag}.txt"
      grep -hE '^== |nvfp4jit sm|grouped call.s variant|rror' "$OUT/prepab.tmp"
    done
  done
  rm -f "$OUT/prepab.tmp"
  (cd "$OUT" && tar czf prepab_ncu.tgz prepab_ncu_*.csv && rm -f prepab_ncu_*.csv) ;;
ab)   # issue 13 (kernel A/B): per set, every binary (TAG=PATH of an nvfp4jit command) in turn,
  # twice (A B A B: drift shows as a difference between the rounds), the heuristic's variant (or
  # AB_VARIANT), no cuBLAS; then the last binary's bench with cuBLAS on AB_SETS (the report table)
  for fs in ${AB_SETS:-moe.txt:decode64-up moe.txt:decode64-down moe.txt:prefill8-up moe.txt:prefill16-big \
             moe.txt:skewed8-up moe.txt:single-large gpumode.txt:bench1 gpumode.txt:bench2 gpumode.txt:bench3 \
             gpumode.txt:bench4}; do
    for round in 1 2; do
      for spec in "$@"; do
        tag=${spec%%=*}; bin=${spec#*=}
        args=(bench --iters ${AB_ITERS:-20} --no-cublas --problems "problems/${fs%%:*}" --set "${fs#*:}")
        [ -n "${AB_VARIANT:-}" ] && args+=(--variant "$AB_VARIANT")
        timeout 200 "$bin" "${args[@]}" > "$OUT/ab.tmp" 2>&1
        echo "== $tag round $round ${fs#*:}: rc $? $(grep -hE 'nvfp4jit sm' "$OUT/ab.tmp" | head -1)"
        cat "$OUT/ab.tmp" >> "$OUT/ab_${tag}.txt"
      done
    done
  done
  rm -f "$OUT/ab.tmp"
  last=${!#}; bin=${last#*=}
  if [ -z "${AB_NO_CUBLAS:-}" ]; then
    timeout 200 "$bin" bench --iters 30 --csv "$OUT/ab_cublas_gpumode.csv" > "$OUT/ab_cublas_gpumode.txt" 2>&1
    timeout 250 "$bin" bench --iters 20 --problems problems/moe.txt --set 'decode*,prefill*,skewed*,single*' \
      --csv "$OUT/ab_cublas_moe.csv" > "$OUT/ab_cublas_moe.txt" 2>&1
    grep -hE '^== |nvfp4jit sm|cuBLAS|^geomean' "$OUT/ab_cublas_gpumode.txt" "$OUT/ab_cublas_moe.txt"
  fi ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
