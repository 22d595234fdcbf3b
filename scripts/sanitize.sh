#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer (clang) over what parses
# untrusted input and holds state: the unit tests of common/ (all but metrics/), data/, scoring/,
# the coordinator and the scorer, then each libFuzzer harness of fuzz/ for a
# bounded time on its seed corpus. Any sanitizer report fails the run.
# The engine (LibTorch) and the worker are not built here.
#   MEMAUDIT_FUZZ_SECONDS  seconds per harness (default 60; 0 skips fuzzing); the
#                          harnesses run MEMAUDIT_JOBS (default: the cores) at a time
#   MEMAUDIT_SANITIZE      sanitizers (default address,undefined; "thread" for TSan,
#                          which cannot see Debian's Abseil (built without TSan): it
#                          reports every absl::Mutex-guarded access as a race, even
#                          in a 9-line correct program; lock discipline is checked by
#                          clang's -Wthread-safety instead, scripts/check.sh)
#   MEMAUDIT_SANITIZE_BUILD_DIR  build directory (default build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers="${MEMAUDIT_SANITIZE:-address,undefined}"
build_dir="${MEMAUDIT_SANITIZE_BUILD_DIR:-build-asan}"
fuzz_seconds="${MEMAUDIT_FUZZ_SECONDS:-60}"
jobs="${MEMAUDIT_JOBS:-$(nproc)}"

fuzz=ON
[ "$sanitizers" = "thread" ] && fuzz=OFF  # libFuzzer pairs with ASan/UBSan only
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMEMAUDIT_PCH=OFF \
  -DMEMAUDIT_SANITIZE="$sanitizers" -DMEMAUDIT_FUZZ="$fuzz" -DMEMAUDIT_BUILD_BENCH=OFF >/dev/null

# One test binary per layer; each holds every kind's tests of that layer (audits/<kind>/<layer>*_test.cc).
tests=(base_test training_test messages_test rpc_test data_test security_test scoring_test attacks_test spec_test coordinator_test worker_service_test scorer_test)
fuzzers=()
[ "$fuzz" = ON ] && fuzzers=(spec_fuzzer observation_fuzzer scoring_fuzzer report_fuzzer export_fuzzer
  data_source_fuzzer)
ninja -C "$build_dir" -j "$jobs" "${tests[@]}" "${fuzzers[@]}"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
passed=0
for t in "${tests[@]}"; do
  echo "sanitize ($sanitizers): $t"
  "$build_dir/bin/$t" --gtest_brief=1
  passed=$((passed + 1))
done

seeds_of() {
  case "$1" in
    spec_fuzzer) echo examples fuzz/corpus/spec tests/hostile ;;
    observation_fuzzer) echo fuzz/corpus/observation ;;
    scoring_fuzzer) echo fuzz/corpus/scoring ;;
    report_fuzzer) echo fuzz/corpus/report ;;
    export_fuzzer) echo fuzz/corpus/export ;;
    data_source_fuzzer) echo fuzz/corpus/data_source ;;
  esac
}
# One harness for fuzz_seconds; its summary (or its failure) on stdout.
fuzz_one() {
  local f=$1 scratch="$build_dir/corpus/$1" log="$build_dir/$1.log"
  echo "fuzz: $f for ${fuzz_seconds}s"
  # New inputs go to a scratch corpus; the committed seeds stay as they are.
  mkdir -p "$scratch"
  # shellcheck disable=SC2046
  if ! "$build_dir/bin/$f" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build_dir/" "$scratch" $(seeds_of "$f") \
    >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $f failed; the input is in $build_dir/ (crash-*, leak-*, timeout-*)"
    return 1
  fi
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$log"
}
if [ "$fuzz_seconds" -gt 0 ]; then
  # libFuzzer runs on one core: the harnesses run `jobs` at a time, each for
  # its whole time, and report in order once all are done.
  running=0
  for f in "${fuzzers[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
    rm -f "$build_dir/$f.passed"
    (fuzz_one "$f" >"$build_dir/$f.summary" 2>&1 && touch "$build_dir/$f.passed") &
    running=$((running + 1))
  done
  wait
  fuzz_failed=0
  for f in "${fuzzers[@]}"; do
    cat "$build_dir/$f.summary"
    if [ -f "$build_dir/$f.passed" ]; then
      passed=$((passed + 1))
    else
      fuzz_failed=1
    fi
  done
  [ "$fuzz_failed" -eq 0 ] || exit 1
fi
echo "sanitize: $passed passed, 0 failed"
