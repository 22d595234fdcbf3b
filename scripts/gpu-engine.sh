#!/usr/bin/env bash
# Builds engine/ alone against the LibTorch that ships with PyTorch (as on GPU
# machines), then runs its tests and the ensemble benchmark on CPU and CUDA.
#   MEMAUDIT_DEPS_PREFIX: an extra install prefix holding Abseil and GoogleTest
#   when the machine has none (a copy of Debian's /usr/include and /usr/lib).
set -euo pipefail
cd "$(dirname "$0")/.."
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
build="${MEMAUDIT_GPU_BUILD_DIR:-build-gpu}"
cmake -S . -B "$build" -G Ninja -DMEMAUDIT_ENGINE_ONLY=ON -DMEMAUDIT_WERROR=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_prefix;${MEMAUDIT_DEPS_PREFIX:-}" >/dev/null
ninja -C "$build" engine_test ensemble_bench exposure_bench extract_bench
"$build/bin/engine_test" --gtest_brief=1
for device in cpu cuda; do
  "$build/bin/ensemble_bench" --members=16 --pool=8192 --epochs=2 --batch=128 --hidden=256 \
    --threads="$(nproc)" --reps=3 --peer=0 --device="$device"
done
