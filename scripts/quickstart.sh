#!/usr/bin/env bash
# Installs what memaudit needs, builds what the quickstart runs (the CLI and
# the three services: CMake target memaudit_runtime, not the tests), and runs
# the quickstart audit end to end on this machine (coordinator, scorer and
# workers on loopback).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh memaudit_runtime
exec build/bin/memaudit run examples/quickstart.yaml --json quickstart-results.json "$@"
