#!/usr/bin/env bash
# Copies what engine/ needs beside LibTorch (Debian's Abseil, GoogleTest and
# zlib: headers, shared libraries, CMake packages) into one prefix, in
# Debian's layout, for a GPU machine whose image has PyTorch but none of
# them; then, there:
#   MEMAUDIT_DEPS_PREFIX=$PWD/DIR scripts/gpu-engine.sh
set -euo pipefail
out="${1:?usage: scripts/gpu-deps.sh DIR}"
lib=/usr/lib/x86_64-linux-gnu
mkdir -p "$out/include" "$out/lib/x86_64-linux-gnu/cmake"
cp -a /usr/include/absl /usr/include/gtest /usr/include/gmock /usr/include/zlib.h \
  /usr/include/zconf.h "$out/include/"
# Debian ships GoogleTest as static archives only.
cp -a "$lib"/libabsl_*.so* "$lib"/libgtest*.a "$lib"/libgmock*.a "$lib"/libz.so* \
  "$out/lib/x86_64-linux-gnu/"
cp -a "$lib/cmake/absl" "$lib/cmake/GTest" "$out/lib/x86_64-linux-gnu/cmake/"
du -sh "$out"
