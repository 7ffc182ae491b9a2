#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install dependencies, build, run every test
# (unit, golden, tokenizer, mpi, ...; GPU tests skip without a GPU).
#   scripts/test.sh [ctest arguments, e.g. -L golden]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
source scripts/mpi-test-env.sh
ctest --test-dir build --output-on-failure -j2 "$@"
