#!/usr/bin/env bash
# Configures and builds weft in build/ (Release, Ninja). Extra arguments go to cmake.
#   scripts/build.sh [-DWEFT_CUDA=OFF ...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >build-configure.log 2>&1 || {
  cat build-configure.log; exit 1; }
jobs=$(nproc)
ninja -C build -j"$jobs"
