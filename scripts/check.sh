#!/usr/bin/env bash
# Static checks that the GCC build and the tests do not make:
#   1. clang-format: every C++ file is formatted with the repository's .clang-format;
#   2. clang -Wthread-safety -Werror: every ABSL_GUARDED_BY is respected (outside
#      engine/, by tidy's parse when tidy runs too);
#   3. clang-tidy (.clang-tidy): bug-prone and performance patterns, function size;
#   4. layers: every library source includes only lower layers (check-layers.sh);
#   5. nccl: the engine's NCCL branch (compiled only against a CUDA LibTorch, on a
#      GPU machine) type-checks against this LibTorch's c10d headers, where CUDA's
#      headers and nccl.h are installed (else it says so and passes).
# Usage: scripts/check.sh [format|thread-safety|tidy|layers|nccl]...   (default: all five)
# The clang build lives in build-check/ (MEMAUDIT_CHECK_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
check_dir="${MEMAUDIT_CHECK_BUILD_DIR:-build-check}"
jobs="${MEMAUDIT_JOBS:-$(nproc)}"
steps=("$@")
[ "${#steps[@]}" -gt 0 ] || steps=(format layers nccl thread-safety tidy)

# The project's own C++ sources (generated protobuf code lives in build dirs).
sources() { git ls-files -- '*.cc' '*.h'; }

check_format() {
  echo "check: clang-format"
  sources | xargs clang-format --dry-run --Werror
}

# Configures the clang build once: thread-safety analysis on, warnings as
# errors, no precompiled header (clang cannot use GCC's). With optimized
# dependencies a static library does not wait for the libraries it links, so
# of the engine only the files that lock are compiled.
configure_clang() {
  cmake -S . -B "$check_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DMEMAUDIT_THREAD_SAFETY=ON -DMEMAUDIT_PCH=OFF -DCMAKE_OPTIMIZE_DEPENDENCIES=ON \
    -DMEMAUDIT_BUILD_TESTS=OFF -DMEMAUDIT_BUILD_BENCH=OFF >/dev/null
}

# Engine files compile LibTorch's headers; only those that lock are analysed.
engine_objects_with_locks() {
  git grep -l 'absl::Mutex' -- 'engine/*.cc' |
    sed "s|^engine/\(.*\)|engine/CMakeFiles/memaudit_engine.dir/\1.o|"
}

# clang-tidy parses each library source outside engine/ with build-check's
# compile commands, -Wthread-safety -Werror included, and fails on the
# analysis' errors as the compiler would: when tidy runs too, only the engine
# files that lock are compiled here (no second parse, no code for the rest).
check_thread_safety() {
  echo "check: clang -Wthread-safety"
  configure_clang
  local libraries=(memaudit_spec memaudit_attacks memaudit_coordinator_lib memaudit_scorer_lib
    memaudit_worker_lib memaudit_cli_lib)
  [[ " ${steps[*]} " == *" tidy "* ]] && libraries=()
  # shellcheck disable=SC2046
  ninja -C "$check_dir" -j "$jobs" "${libraries[@]}" $(engine_objects_with_locks)
}

# Library sources outside engine/ (whose LibTorch headers would make each file
# take half a minute); tests are held to the compiler's warnings only.
tidy_sources() {
  git ls-files -- 'common/*.cc' 'data/*.cc' 'scoring/*.cc' 'audits/*.cc' 'spec/*.cc' 'services/*.cc' \
    'cli/*.cc' |
    grep -v '_test\.cc$' | grep -v '^common/testing/'
}

check_tidy() {
  echo "check: clang-tidy"
  configure_clang
  # Generated protobuf headers must exist before anything is parsed.
  ninja -C "$check_dir" -j "$jobs" memaudit_proto >/dev/null
  tidy_sources | xargs -P "$jobs" -n 4 clang-tidy -p "$check_dir" --quiet 2>/dev/null
}

# data_parallel.cc as a CUDA LibTorch compiles it (USE_C10D_NCCL), syntax
# only: a CPU LibTorch's headers lack the one file its CUDA build generates
# (c10/cuda/impl/cuda_cmake_macros.h), written here as that build writes it.
check_nccl() {
  echo "check: NCCL branch"
  local cuda nccl_include
  for cuda in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-*; do
    [ -n "$cuda" ] && [ -f "$cuda/include/nccl.h" ] && [ -f "$cuda/include/cuda_runtime_api.h" ] &&
      nccl_include="$cuda/include" && break
  done
  if [ -z "${nccl_include:-}" ] || [ ! -f /usr/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp ]; then
    echo "check: NCCL branch skipped: no CUDA headers with nccl.h, or no c10d NCCL header"
    return 0
  fi
  local generated
  generated=$(mktemp -d)
  mkdir -p "$generated/c10/cuda/impl"
  printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' \
    >"$generated/c10/cuda/impl/cuda_cmake_macros.h"
  local ok=0
  g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -D_GLIBCXX_USE_CXX11_ABI=1 \
    -DUSE_DISTRIBUTED -DUSE_C10D_GLOO -DUSE_C10D_NCCL -I. \
    -isystem /usr/include/torch/csrc/api/include -isystem "$generated" -isystem "$nccl_include" \
    -DMEMAUDIT_EXPECT_NCCL engine/data_parallel.cc || ok=1
  rm -rf "$generated"
  return $ok
}

for step in "${steps[@]}"; do
  case "$step" in
    format) check_format ;;
    thread-safety) check_thread_safety ;;
    tidy) check_tidy ;;
    layers) echo "check: layers" && scripts/check-layers.sh ;;
    nccl) check_nccl ;;
    *)
      echo "unknown check: $step (format, thread-safety, tidy, layers, nccl)" >&2
      exit 2
      ;;
  esac
done
echo "check: ${steps[*]} passed"
