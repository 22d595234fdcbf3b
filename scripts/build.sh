#!/usr/bin/env bash
# Configures and builds memaudit into build/ (binaries in build/bin).
# Usage: scripts/build.sh [TARGET]...   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${MEMAUDIT_BUILD_DIR:-build}"
jobs="${MEMAUDIT_JOBS:-$(nproc)}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
ninja -C "$build_dir" -j "$jobs" "$@"
