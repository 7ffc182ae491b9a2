#!/usr/bin/env bash
# Builds the GPU check's programs here (the CUDA toolkit is on this machine) and copies them, with
# their non-CUDA shared-library closure and the data they read, into a self-contained bundle for
# a GPU machine that has none of our Debian build dependencies (issue 17):
#
#   scripts/gpu-bundle.sh [--no-build] [--no-tar] OUT [BUILD_DIR]      (default build dir: build)
#
# --no-build takes the binaries as they are in BUILD_DIR; --no-tar skips OUT.tar.xz (the ctest
# gpu_bundle, scripts/gpu-bundle-test.sh, uses both).
# OUT/bin      weft, gpu_bench and the gpu test binaries (stripped)
# OUT/lib      their shared libraries except glibc's and CUDA's own (libcudart, cuBLAS and NCCL
#              come from the GPU machine: its CUDA 13 toolkit and the nvidia-nccl-cu13 wheel)
# OUT/tests/golden/...  the golden models the CUDA golden test reads, the default model's
#              perplexity check; OUT/configs/default-model; OUT/bench/gpu_baseline.py
# OUT/mpi, OUT/pmix   OpenMPI's mpirun / orted, component plugins and help files, and PMIx's,
#              relocatable (OPAL_PREFIX, PMIX_INSTALL_PREFIX), their libraries in OUT/lib
# OUT/gpu-check.sh     the check itself (scripts/gpu-check.sh), run as OUT/gpu-check.sh
# and OUT.tar.xz beside OUT, which is what travels (the device tool carries at most 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_FIRST=1
MAKE_TAR=1
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --no-build) BUILD_FIRST=0 ;;
    --no-tar) MAKE_TAR=0 ;;
    *) echo "gpu-bundle: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
OUT="${1:?usage: scripts/gpu-bundle.sh [--no-build] [--no-tar] OUT [BUILD_DIR]}"
BUILD="${2:-build}"
GPU_TESTS=(cuda_ops_test cuda_attention_test cuda_gemm_test cuda_gemv_quantized_test cuda_golden_test)
# The golden models cuda_golden_test compares against (tests/gpu/cuda_golden_test.cpp).
GOLDEN_MODELS=(llama_gqa llama3_tied mistral qwen2_bias qwen3_qknorm llama_linear_rope llama_bf16
               llama_4layers gemma2_softcap gemma3_text)

grep -q '^WEFT_CUDA:BOOL=ON' "${BUILD}/CMakeCache.txt" 2>/dev/null ||
  { echo "gpu-bundle: ${BUILD} is not configured with WEFT_CUDA=ON (run scripts/build.sh)" >&2; exit 1; }
# Multi-rank GPU tests (tests/mpi), run there under the bundle's mpirun.
MPI_GPU_TESTS=(host_staged_cuda_comm_test)
(( BUILD_FIRST )) && ninja -C "${BUILD}" "${GPU_TESTS[@]}" "${MPI_GPU_TESTS[@]}" gpu_bench weft

rm -rf "${OUT}"
mkdir -p "${OUT}/bin" "${OUT}/lib"
binaries=("${BUILD}/launcher/weft" "${BUILD}/bench/gpu_bench")
for t in "${GPU_TESTS[@]}"; do binaries+=("${BUILD}/tests/gpu/${t}"); done
for t in "${MPI_GPU_TESTS[@]}"; do binaries+=("${BUILD}/tests/mpi/${t}"); done
for b in "${binaries[@]}"; do strip --strip-unneeded -o "${OUT}/bin/$(basename "${b}")" "${b}"; done

# The shared-library closure, minus what every Linux machine has (glibc, the loader) and what the
# GPU machine must supply matched to its driver (the CUDA runtime and libraries).
is_system_or_cuda() {
  case "$1" in
    linux-vdso.so* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | \
      libresolv.so* | libcuda.so* | libcudart.so* | libcublas*.so* | libnccl.so* | libnvidia*) return 0 ;;
  esac
  return 1
}
# copy_closure FILE...: each file's shared libraries (as above) into OUT/lib.
copy_closure() {
  local f name path
  for f in "$@"; do
    ldd "${f}" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
      while read -r name path; do
        is_system_or_cuda "${name}" && continue
        [[ -e "${OUT}/lib/${name}" ]] || cp -L "${path}" "${OUT}/lib/${name}"
      done
  done
}
copy_closure "${OUT}"/bin/*

# The MPI runtime, for multi-rank runs there (weft links OpenMPI): mpirun and orted, OpenMPI's
# component plugins and help files at their paths relative to its prefix (OPAL_PREFIX=OUT/mpi
# relocates them), and PMIx's plugins and help files (PMIX_INSTALL_PREFIX=OUT/pmix), with the
# libraries all of those load. gpu-check.sh sets the variables.
if ldd "${OUT}/bin/weft" | grep -q libmpi && command -v ompi_info >/dev/null 2>&1; then
  ompi_path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
  prefix="$(ompi_path prefix)"
  mkdir -p "${OUT}/mpi/bin"
  cp -L "$(command -v mpirun)" "${OUT}/mpi/bin/mpirun"
  cp -L "$(command -v orted)" "${OUT}/mpi/bin/orted"
  for kind in pkglibdir pkgdatadir; do
    dir="$(ompi_path "${kind}")"
    mkdir -p "${OUT}/mpi/${dir#"${prefix}"/}"
    cp -rL "${dir}/." "${OUT}/mpi/${dir#"${prefix}"/}/"
  done
  pmix_plugins="$(ls -d /usr/lib/*/pmix*/lib/pmix 2>/dev/null | head -n 1)"
  if [[ -n "${pmix_plugins}" ]]; then
    pmix_prefix="$(dirname "$(dirname "${pmix_plugins}")")"
    mkdir -p "${OUT}/pmix/lib" "${OUT}/pmix/share"
    cp -rL "${pmix_plugins}" "${OUT}/pmix/lib/"
    [[ -d "${pmix_prefix}/share/pmix" ]] && cp -rL "${pmix_prefix}/share/pmix" "${OUT}/pmix/share/"
  fi
  copy_closure "${OUT}"/mpi/bin/* $(find "${OUT}/mpi" "${OUT}/pmix" -name '*.so' 2>/dev/null)
fi
strip --strip-unneeded "${OUT}"/lib/*.so* 2>/dev/null || true

for m in "${GOLDEN_MODELS[@]}"; do
  mkdir -p "${OUT}/tests/golden/models/${m}"
  cp -r "tests/golden/models/${m}/." "${OUT}/tests/golden/models/${m}/"
done
mkdir -p "${OUT}/tests/golden/default_model" "${OUT}/configs" "${OUT}/bench"
cp tests/golden/default_model/perplexity_check.py tests/golden/default_model/reference.json \
   tests/golden/default_model/heldout.txt "${OUT}/tests/golden/default_model/"
cp -r configs/default-model "${OUT}/configs/"
cp bench/gpu_baseline.py "${OUT}/bench/"
cp scripts/gpu-check.sh "${OUT}/gpu-check.sh"
git rev-parse --short HEAD > "${OUT}/COMMIT" 2>/dev/null || echo unknown > "${OUT}/COMMIT"
git diff --quiet HEAD 2>/dev/null || echo "(with uncommitted changes)" >> "${OUT}/COMMIT"

if (( MAKE_TAR )); then
  tar -C "$(dirname "${OUT}")" -cJf "${OUT}.tar.xz" "$(basename "${OUT}")"
  echo "gpu-bundle: ${OUT} ($(du -sh "${OUT}" | cut -f1)), ${OUT}.tar.xz ($(du -h "${OUT}.tar.xz" | cut -f1))"
else
  echo "gpu-bundle: ${OUT} ($(du -sh "${OUT}" | cut -f1))"
fi
