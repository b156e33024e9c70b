#!/usr/bin/env bash
# Build the libFuzzer targets of tests/fuzz (clang, ASan+UBSan) in build-fuzz and run each for
# a bounded time: tools/fuzz.sh [SECONDS per target, default 30] [TARGET...]. Every target
# starts from its committed corpus (tests/fuzz/corpus/<target>, never modified: new inputs go
# to build-fuzz/corpus/<target>); a crash, sanitizer report or broken invariant fails the run
# and leaves the input as build-fuzz/crash-<target>-*, to be reproduced with
#   build-fuzz/fuzz_<target> FILE    or    build/nvfp4jit_fuzz_corpus <target> FILE
# Without clang and its libFuzzer runtime it prints a "fuzz: skipped:" line and succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
SECS=${1:-30}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(problems variant cache tune template)
B=${NVFP4JIT_FUZZ_BUILD_DIR:-build-fuzz}
CC_FUZZ=${NVFP4JIT_FUZZ_CC:-clang}
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
  > "$probe/t.c"
if ! command -v "$CC_FUZZ" >/dev/null ||
   ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined "$probe/t.c" -o "$probe/t" 2>/dev/null; then
  echo "fuzz: skipped: no $CC_FUZZ with libFuzzer (-fsanitize=fuzzer) here"
  exit 0
fi
cmake -S . -B "$B" -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNVFP4JIT_FUZZ=ON -DNVFP4JIT_BUILD_TESTS=OFF -DNVFP4JIT_INSTALL=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" --target fuzz
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fail=0
for t in "${TARGETS[@]}"; do
  work="$B/corpus/$t"
  mkdir -p "$work"
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  start=$(date +%s)
  # -timeout: one input may take at most 10 s (a render is bounded to ~0.2 s); -rss_limit_mb:
  # a render's Lua heap is capped at 64 MiB and its output at 16 MiB.
  if "$B/fuzz_$t" "$work" "tests/fuzz/corpus/$t" -max_total_time="$SECS" -timeout=10 \
       -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
       -artifact_prefix="$B/crash-$t-" ${dict[@]+"${dict[@]}"} >"$B/fuzz-$t.log" 2>&1; then
    echo "fuzz: $t: no finding in $(( $(date +%s) - start )) s ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$B/fuzz-$t.log" | grep -o '[0-9]*$') runs)"
  else
    fail=1
    echo "fuzz: $t: FAILED (log $B/fuzz-$t.log):"
    grep -E 'ERROR|invariant|runtime error|Test unit written|SUMMARY' "$B/fuzz-$t.log" | head -20
    # what the target printed before it died (a broken FUZZ_CHECK names its condition; a
    # "deadly signal" alone says only that the process got one), and the input itself
    echo "fuzz: $t: the last lines of the log before the finding:"
    grep -v -E '^#[0-9]+' "$B/fuzz-$t.log" | grep -B 25 -m 1 -E 'SUMMARY' | head -40
    for f in "$B"/crash-"$t"-*; do   # (-artifact_prefix: crash-T-crash-*, crash-T-oom-*, ...)
      [ -f "$f" ] || continue
      echo "fuzz: $t: input $f ($(wc -c < "$f") bytes, base64):"
      head -c 4096 "$f" | base64 | head -60
    done
  fi
done
exit $fail
