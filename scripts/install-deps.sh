#!/usr/bin/env bash
# Installs every Debian package memaudit needs to build, test and run.
# Idempotent: when everything is present it only checks and returns.
set -euo pipefail

packages=(
  # toolchain; clang for the thread-safety build, clang-format and clang-tidy
  # for scripts/check.sh; clang's sanitizer and libFuzzer runtimes for
  # scripts/sanitize.sh
  build-essential cmake ninja-build ccache pkg-config clang clang-format clang-tidy
  libclang-rt-14-dev
  # scripts/gpu-bundle.sh: the bundled programs find their libraries beside them
  patchelf
  # RPC
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  # TLS: memaudit run mints its certificates with libssl; tests make theirs with openssl
  libssl-dev openssl
  # training: LibTorch plus an optimized BLAS (reference BLAS is ~20x slower);
  # oneDNN's headers for the engine's own matrix products (engine/gemm.h)
  libtorch-dev libopenblas0-openmp libdnnl-dev zlib1g-dev libdeflate-dev libsentencepiece-dev
  # Gloo's headers: data-parallel training across CPU ranks (engine/data_parallel.h)
  libgloo-dev
  # persistence, logs, CLI, config, metrics HTTP, distributions
  libsqlite3-dev libspdlog-dev libfmt-dev libcli11-dev libyaml-cpp-dev
  libcivetweb-dev civetweb prometheus-cpp-dev libboost-math-dev nlohmann-json3-dev
  # attack classifiers (the xgboost package provides what libxgboost-dev's CMake config names)
  libxgboost-dev xgboost
  # tests and benchmarks; prometheus (with promtool) for the metrics tests
  libgtest-dev libgmock-dev libbenchmark-dev prometheus
  # TorchScript export test and the Python peer benchmark; numpy reads the
  # ML Privacy Meter export back in its test
  python3-torch python3-numpy
  # the Python client (clients/python, docs/python-client.md): its runtime,
  # pip-installing it offline into a venv (tested), mypy, pandas for frames
  python3-grpcio python3-protobuf python3-venv python3-wheel python3-mypy python3-pandas
  # the HTML report is tested in headless Chromium
  chromium
  # data
  dataset-fashion-mnist fortunes
  # scripts/container-test.sh: rootful Podman with runc (its containers.conf
  # selects it), netavark and aardvark-dns for the pod's network (iptables),
  # catatonit for the pod's infra container, debootstrap for the Debian 12
  # base image (no registry is needed)
  podman runc netavark aardvark-dns iptables catatonit debootstrap
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
