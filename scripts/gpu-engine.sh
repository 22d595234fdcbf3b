#!/usr/bin/env bash
# Builds engine/ alone against the LibTorch that ships with PyTorch (as on GPU
# machines), runs the ensemble benchmark on CUDA (the shapes of
# docs/performance.md's GPU section, each product precision), then the
# engine's tests.
#   MEMAUDIT_DEPS_PREFIX: an extra install prefix holding Abseil, GoogleTest
#   and zlib when the machine has none (scripts/gpu-deps.sh makes one).
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
build="${MEMAUDIT_GPU_BUILD_DIR:-build-gpu}"
cmake -S . -B "$build" -G Ninja -DMEMAUDIT_ENGINE_ONLY=ON -DMEMAUDIT_WERROR=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_prefix;${MEMAUDIT_DEPS_PREFIX:-}" >/dev/null
ninja -k 0 -C "$build" engine_test ensemble_bench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
bench() { "$build/bin/ensemble_bench" --pool=8192 --epochs=2 --threads="$(nproc)" --reps=3 --peer=0 "$@"; }
for precision in fp32 tf32 bf16; do
  bench --members=16 --batch=128 --hidden=256 --device=cuda --matmul_precision="$precision"
done
bench --members=16 --batch=64 --hidden=32 --device=cuda
bench --members=64 --batch=64 --hidden=32 --device=cuda
bench --members=64 --batch=256 --hidden=1024 --device=cuda
timeout "${MEMAUDIT_GPU_TEST_TIMEOUT:-600}" "$build/bin/engine_test" --gtest_brief=1 ||
  echo "engine_test FAILED"
