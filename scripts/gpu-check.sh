#!/usr/bin/env bash
# One visit to a GPU machine, prepared: everything memaudit checks on a GPU in
# one script, well inside 8 minutes on one card, so that a short visit leaves
# time to run it again. On a machine with PyTorch (CUDA) and a C++ compiler:
#   1. unpack the bundle (scripts/gpu-bundle.sh, made on the Debian build
#      machine) and check the host's C library is new enough for it;
#   2. compile the engine module and its tests against the host's LibTorch
#      (python3's torch) and install the module into the bundle;
#   3. run the engine's tests (their CUDA cases run where a GPU is);
#   4. `memaudit run --device cuda` on the GPU example of every audit kind
#      (examples/gpu/, data from examples/gpu/make-data.py);
#   5. bench/system_bench.py --device cuda: memaudit against the plain PyTorch
#      loop on the same GPU.
# Written to OUT: summary.md (a table: step, result, seconds, what it showed),
# gpu-check.log (everything printed), raw-logs.tar.gz (each step's own log and
# each audit's results JSON). Three files, as a device run brings back few.
#
#   scripts/gpu-bundle.sh                        # on the build machine
#   scripts/gpu-check.sh OUT [BUNDLE]            # on the GPU machine, repository root
#   MEMAUDIT_GPU_CHECK_DEVICE=cpu MEMAUDIT_GPU_CHECK_EXAMPLES=examples/quickstart.yaml \
#     MEMAUDIT_TORCH_PREFIX=/usr/lib/x86_64-linux-gnu/cmake MEMAUDIT_GPU_CHECK_PYTHON=/usr/bin/python3 \
#     scripts/gpu-check.sh OUT
#                                                # a rehearsal on a CPU machine
#
# MEMAUDIT_GPU_CHECK_DEVICE    cuda (default) or cpu
# MEMAUDIT_GPU_CHECK_STEPS     default "engine engine_test examples bench"
# MEMAUDIT_GPU_CHECK_EXAMPLES  spec files (default src/examples/gpu/*.yaml of the bundle)
# MEMAUDIT_GPU_CHECK_EXAMPLE_S each example's time limit in seconds (default 60)
# MEMAUDIT_GPU_CHECK_BUDGET_S  the whole check's (default 470): a step that would start
#                              with too little of it left is skipped, and says so
# MEMAUDIT_TORCH_PREFIX        LibTorch's CMake prefix (default python3's torch.utils.cmake_prefix_path)
# MEMAUDIT_GPU_CHECK_WORK      scratch folder (default /tmp/memaudit-gpu-check)
# MEMAUDIT_GPU_CHECK_PYTHON    the interpreter with PyTorch and NumPy (default python3)
set -uo pipefail
out="${1:?usage: scripts/gpu-check.sh OUT [BUNDLE]}"
bundle="${2:-build/memaudit-gpu-bundle.tar.xz}"
device="${MEMAUDIT_GPU_CHECK_DEVICE:-cuda}"
steps="${MEMAUDIT_GPU_CHECK_STEPS:-engine engine_test examples bench}"
example_s="${MEMAUDIT_GPU_CHECK_EXAMPLE_S:-60}"
budget_s="${MEMAUDIT_GPU_CHECK_BUDGET_S:-470}"
work="${MEMAUDIT_GPU_CHECK_WORK:-/tmp/memaudit-gpu-check}"
data=/tmp/memaudit-gpu-data
python="${MEMAUDIT_GPU_CHECK_PYTHON:-python3}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
bundle=$(realpath "$bundle")
exec > >(tee "$out/gpu-check.log") 2>&1
logs="$work/logs"
rows=()
failed=0
t0=$SECONDS

say() { printf '[%4ds] %s\n' $((SECONDS - t0)) "$*"; }
row() {
  rows+=("| $1 | $2 | $3 | $4 |")
  say "$1: $2 ($3 s) $4"
  [ "$2" = PASS ] || failed=1
}
# run_step NAME LIMIT_S COMMAND...: the command's output goes to logs/NAME.log;
# the limit shrinks to what is left of the budget, and under 20 s the step is
# skipped (step_result "SKIPPED", return 125).
run_step() {
  local name=$1 limit=$2 t=$SECONDS rc left
  shift 2
  left=$((budget_s - (SECONDS - t0)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 20 ]; then
    step_result="SKIPPED (budget of ${budget_s} s spent)"
    step_seconds=0
    return 125
  fi
  say "$name: $*"
  timeout --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  tail -n 5 "$logs/$name.log" | sed 's/^/    /'
  if [ $rc -eq 0 ]; then step_result=PASS
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then step_result="TIMEOUT (${limit} s)"
  else step_result="FAIL (exit $rc)"; fi
  step_seconds=$((SECONDS - t))
  return $rc
}
finish() {
  {
    echo "# memaudit GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "Device: $device. Bundle: $(basename "$bundle"). Machine: see machine.txt in raw-logs.tar.gz."
    echo
    echo "| step | result | seconds | shows |"
    echo "|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Total: $((SECONDS - t0)) s."
  } >"$out/summary.md"
  tar -C "$work" -czf "$out/raw-logs.tar.gz" logs 2>/dev/null
  cat "$out/summary.md"
  exit $failed
}
trap finish EXIT

# --- 1. the bundle ---------------------------------------------------------
rm -rf "$work"
mkdir -p "$logs" "$work/runs"
t=$SECONDS
tar -xJf "$bundle" -C "$work" || { row unpack FAIL $((SECONDS - t)) "cannot unpack $bundle"; exit 1; }
root=$(echo "$work"/memaudit-*/)
root=${root%/}
needs=$(sed -n 's/^needs_glibc=//p' "$root/BUNDLE-INFO")
have=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9]\+\.[0-9]\+$')
{
  cat "$root/BUNDLE-INFO"
  echo "host_glibc=$have"
  uname -a
  grep -m1 'model name' /proc/cpuinfo
  echo "cpus=$(nproc)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
} >"$logs/machine.txt"
sed 's/^/    /' "$logs/machine.txt"
if [ "$(printf '%s\n%s\n' "$needs" "$have" | sort -V | head -1)" != "$needs" ]; then
  row unpack FAIL $((SECONDS - t)) "this machine's glibc $have is older than the $needs the bundle needs"
  exit 1
fi
row unpack PASS $((SECONDS - t)) "glibc $have >= $needs; $(ls "$root/lib" | grep -c '\.so') bundled libraries"

# --- 2. the engine module --------------------------------------------------
torch_prefix="${MEMAUDIT_TORCH_PREFIX:-$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')}"
build="$work/build"
targets=memaudit_engine_module
[[ " $steps " == *" engine_test "* ]] && targets+=" engine_test"
# engine_build NCCL: configures (MEMAUDIT_NCCL=NCCL), builds, installs.
engine_build() {
  echo "cmake -S '$root/src' -B '$build' -G Ninja -DMEMAUDIT_ENGINE_ONLY=ON -DMEMAUDIT_WERROR=OFF \
      -DMEMAUDIT_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release -DMEMAUDIT_NCCL=$1 \
      -DCMAKE_PREFIX_PATH='$torch_prefix;$root/deps' &&
    ninja -C '$build' $targets &&
    cp '$build/bin/libmemaudit_engine.so' '$root/lib/memaudit/'"
}
if [[ " $steps " == *" engine "* ]]; then
  run_step engine 420 bash -c "$(engine_build ON)"
  rc=$?
  nccl=$(grep -o 'NCCL: [^(]*' "$logs/engine.log" | head -1)
  row engine "$step_result" "$step_seconds" \
    "libmemaudit_engine.so against LibTorch in $torch_prefix${nccl:+; $nccl}"
  if [[ "$step_result" == FAIL* ]]; then
    # The NCCL branch is type-checked here against older headers only: a
    # LibTorch it does not compile against costs data-parallel CUDA ranks,
    # not the rest of the check (which still ends failed).
    run_step engine-without-nccl 300 bash -c "$(engine_build OFF)"
    rc=$?
    row engine-without-nccl "$step_result" "$step_seconds" "NCCL left out: data-parallel CUDA ranks are refused"
  fi
  [ $rc -eq 0 ] || exit 1
fi

# --- 3. the engine's tests -------------------------------------------------
if [[ " $steps " == *" engine_test "* ]]; then
  run_step engine_test 120 "$build/bin/engine_test" --gtest_brief=1
  row engine_test "$step_result" "$step_seconds" \
    "$(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|tests? (ran|skipped)' "$logs/engine_test.log" | tr '\n' ' ' | cut -c1-160)"
fi

# --- 4. an audit of every kind ---------------------------------------------
if [[ " $steps " == *" examples "* ]]; then
  run_step data 120 "$python" "$root/src/examples/gpu/make-data.py" "$data" --idx \
    --fortunes "$root/data/fortunes"
  row data "$step_result" "$step_seconds" "synthetic CIFAR- and Fashion-MNIST-shaped data, fortunes"
  specs=${MEMAUDIT_GPU_CHECK_EXAMPLES:-$(ls "$root"/src/examples/gpu/*.yaml)}
  # A data root must exist: Debian's Fashion-MNIST only where it is installed.
  roots=(--data-root "$data")
  [ -d /usr/share/datasets/fashion-mnist ] && roots+=(--data-root /usr/share/datasets/fashion-mnist)
  # The examples leave the system benchmark its 200 s: an example that would
  # eat into them is cut short or skipped, never the benchmark.
  whole_budget_s=$budget_s
  [[ " $steps " == *" bench "* ]] && budget_s=$((budget_s - 200))
  for spec in $specs; do
    [ -f "$spec" ] || spec="$root/src/$spec"
    name=$(basename "$spec" .yaml)
    run_step "$name" "$example_s" "$root/bin/memaudit" run "$spec" --device "$device" "${roots[@]}" \
      --dir "$work/runs/$name" --json "$logs/$name.json" --timings
    row "$name" "$step_result" "$step_seconds" \
      "$(grep -o 'tasks_s=[0-9.na]* scoring_s=[0-9.na]* .*total_s=[0-9.na]*' "$logs/$name.log" | tail -1)"
  done
  budget_s=$whole_budget_s
fi

# --- 5. the system benchmark -----------------------------------------------
if [[ " $steps " == *" bench "* ]]; then
  bench_data="$data/fashion-idx"
  [ "$device" = cpu ] && [ -d /usr/share/datasets/fashion-mnist ] && bench_data=/usr/share/datasets/fashion-mnist
  run_step system_bench 200 "$python" "$root/src/bench/system_bench.py" --device "$device" \
    --python "$python" --memaudit "$root/bin/memaudit" --data "$bench_data" --reps 3 \
    --shape a=16,256,128,10000,5
  row system_bench "$step_result" "$step_seconds" \
    "peer/memaudit: $(grep -E '^  models_per_task=' "$logs/system_bench.log" |
      awk '{printf "%s %s, ", $1, $4}' | sed 's/, $//')"
fi
