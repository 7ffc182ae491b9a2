#!/usr/bin/env bash
# Proves the GPU bundle here, on a machine without a GPU (ctest gpu_bundle; issue 17): builds it
# from BUILD_DIR's binaries into a scratch directory, moves it to an empty directory, and there,
# with a bare environment whose library path holds only the bundle's lib/ and the CUDA runtime
# directory (what the GPU machine provides), checks that
#   - every shared library the binaries load comes from the bundle, glibc or the CUDA directory;
#   - bin/weft generates on the CPU exactly the tokens the build tree's weft generates;
#   - the bundle's relocated OpenMPI runs two ranks (--tp 2, CPU) to the same tokens, with the
#     system's OpenMPI and PMIx plugins, help files and launchers hidden (a private mount
#     namespace; without `unshare -m` the run is made with them visible, and says so);
#   - every gpu test binary starts and skips its cases (no GPU), exit 0 (the multi-rank ones under
#     the bundle's mpirun, two ranks);
#   - gpu-check.sh probes, reports "no GPU" (exit 3) and writes results.json.
#
#   scripts/gpu-bundle-test.sh BUILD_DIR [CUDA_LIB_DIR]     (default /usr/local/cuda/lib64)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${1:?usage: gpu-bundle-test.sh BUILD_DIR [CUDA_LIB_DIR]}" && pwd)"
CUDA_LIB="${2:-/usr/local/cuda/lib64}"
SCRATCH="$(mktemp -d)"
trap '[[ -n "${KEEP_SCRATCH:-}" ]] || rm -rf "${SCRATCH}"' EXIT

"${ROOT}/scripts/gpu-bundle.sh" --no-build --no-tar "${SCRATCH}/made/bundle" "${BUILD}"
mkdir "${SCRATCH}/empty"
mv "${SCRATCH}/made/bundle" "${SCRATCH}/empty/bundle"
cd "${SCRATCH}/empty/bundle"
B="$(pwd)"
bare() { env -i PATH=/usr/bin:/bin HOME="${SCRATCH}" LD_LIBRARY_PATH="${B}/lib:${CUDA_LIB}" "$@"; }

fail() { echo "gpu-bundle-test: $*" >&2; exit 1; }

# Libraries actually loaded (LD_DEBUG reports each init), outside the bundle, glibc and CUDA.
for exe in bin/*; do
  # (gpu_bench exits 3 here, with no GPU, after its libraries are loaded: enough for this.)
  # The multi-rank test binaries start MPI before anything else, as a singleton that loads the
  # system's OpenMPI and hwloc plugins: they are checked under the bundle's mpirun below.
  [[ "${exe}" == bin/host_staged_cuda_comm_test ]] && continue
  loaded="$( (bare env LD_DEBUG=libs "${exe}" --help 2>&1 >/dev/null || true) |
            awk '/calling init:/ {print $NF}' | sort -u)"
  while read -r lib; do
    [[ -z "${lib}" ]] && continue
    case "${lib}" in
      "${B}"/lib/* | "${CUDA_LIB}"/*) ;;
      */libc.so.* | */libm.so.* | */libdl.so.* | */libpthread.so.* | */librt.so.* | */ld-linux*) ;;
      *) fail "${exe} loaded ${lib} from outside the bundle" ;;
    esac
  done <<< "${loaded}"
done

prompt="The capital of France is"
want="$("${BUILD}/launcher/weft" generate --model "${ROOT}/configs/default-model" --prompt "${prompt}" \
        --max-tokens 12 --temperature 0 2>/dev/null)"
got="$(bare bin/weft generate --model configs/default-model --prompt "${prompt}" --max-tokens 12 \
       --temperature 0 2>/dev/null)"
[[ -n "${got}" && "${got}" == "${want}" ]] || fail "bundle weft generated '${got}', the build tree's '${want}'"

if [[ -x mpi/bin/mpirun ]]; then
  # What to hide: the system's OpenMPI component and help directories, PMIx's, the launchers.
  hidden=("$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')"
          "$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')"
          $(ls -d /usr/lib/*/pmix*/lib/pmix /usr/lib/*/pmix*/share/pmix 2>/dev/null))
  launchers=()
  for f in mpirun orterun orted; do
    command -v "${f}" >/dev/null && launchers+=("$(readlink -f "$(command -v "${f}")")")
  done
  {
    echo '#!/usr/bin/env bash'
    echo '# Runs "$@" with the system OpenMPI / PMIx hidden; run it under unshare -m.'
    echo 'empty="$(mktemp -d)"'
    for d in "${hidden[@]}"; do echo "[[ -d '${d}' ]] && mount --bind \"\${empty}\" '${d}'"; done
    for f in "${launchers[@]}"; do echo "mount --bind /dev/null '${f}'"; done
    echo 'exec "$@"'
  } > "${SCRATCH}/hide-mpi.sh"
  hide=(unshare -m bash "${SCRATCH}/hide-mpi.sh")
  if ! unshare -m true 2>/dev/null; then
    echo "gpu-bundle-test: unshare -m unavailable: the MPI run below sees the system's OpenMPI too"
    hide=()
  fi
  two="$("${hide[@]}" env -i PATH="${B}/mpi/bin:/usr/bin:/bin" HOME="${SCRATCH}" \
           LD_LIBRARY_PATH="${B}/lib:${CUDA_LIB}" OPAL_PREFIX="${B}/mpi" \
           PMIX_INSTALL_PREFIX="${B}/pmix" PMIX_MCA_pcompress_base_silence_warning=1 \
           OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
           mpirun --oversubscribe -np 2 bin/weft generate --model configs/default-model \
           --prompt "${prompt}" --max-tokens 12 --temperature 0 --tp 2 2>"${SCRATCH}/mpi.err")"
  [[ "${two}" == "${want}" ]] ||
    fail "two ranks from the bundle generated '${two}', one rank '${want}': $(cat "${SCRATCH}/mpi.err")"
  # The multi-rank gpu tests start under the bundle's mpirun and skip (no GPU).
  for t in bin/host_staged_cuda_comm_test; do
    out="$("${hide[@]}" env -i PATH="${B}/mpi/bin:/usr/bin:/bin" HOME="${SCRATCH}" \
             LD_LIBRARY_PATH="${B}/lib:${CUDA_LIB}" OPAL_PREFIX="${B}/mpi" \
             PMIX_INSTALL_PREFIX="${B}/pmix" PMIX_MCA_pcompress_base_silence_warning=1 \
             OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
             mpirun --oversubscribe -np 2 "${t}" --gtest_brief=1 2>&1)" || fail "${t} failed: ${out}"
    grep -q 'SKIPPED' <<< "${out}" || fail "${t} skipped nothing without a GPU: ${out}"
  done
fi

for t in bin/cuda_*_test; do
  out="$(bare env WEFT_SOURCE_DIR="${B}" "${t}" --gtest_brief=1 2>&1)" || fail "${t} failed: ${out}"
  grep -q 'SKIPPED' <<< "${out}" || fail "${t} skipped nothing without a GPU: ${out}"
done

set +e
bare env OUT="${SCRATCH}/out" PATH="/usr/bin:/bin" ./gpu-check.sh > "${SCRATCH}/check.log" 2>&1
rc=$?
set -e
[[ ${rc} -eq 3 ]] || fail "gpu-check.sh exited ${rc}, expected 3 (no GPU): $(cat "${SCRATCH}/check.log")"
grep -q '"failed": 3' "${SCRATCH}/out/results.json" || fail "results.json: $(cat "${SCRATCH}/out/results.json")"
grep -q 'unresolved libraries: none' "${SCRATCH}/check.log" || fail "unresolved libraries: $(cat "${SCRATCH}/check.log")"
echo "gpu-bundle-test: ok ($(du -sh "${B}" | cut -f1) bundle, run from ${B})"
