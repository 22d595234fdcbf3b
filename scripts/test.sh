#!/usr/bin/env bash
# Installs what memaudit needs, builds it, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${MEMAUDIT_BUILD_DIR:-build}"
ctest --output-on-failure -j "${MEMAUDIT_TEST_JOBS:-2}" --timeout 900 "$@"
