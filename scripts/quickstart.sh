#!/usr/bin/env bash
# Installs what memaudit needs, builds it, and runs the quickstart audit end
# to end on this machine (coordinator, scorer and workers on loopback).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/bin/memaudit run examples/quickstart.yaml --json quickstart-results.json "$@"
