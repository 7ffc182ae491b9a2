#!/usr/bin/env bash
# The GPU check, run from a bundle made by scripts/gpu-bundle.sh (issue 17) on a GPU machine that
# has the CUDA 13 toolkit or NVIDIA's CUDA wheels and nothing of our build dependencies:
#
#   scripts/gpu-bundle.sh /tmp/bundle && /tmp/bundle/gpu-check.sh       (here, to try it)
#   tar -xJf bundle.tar.xz -C /tmp && /tmp/bundle/gpu-check.sh           (on the GPU machine)
#
# Probes what the machine has first (GPU, driver, CUDA runtime / cuBLAS / NCCL libraries, python
# with torch + transformers), then runs: the gpu test binaries (CUDA kernels against their CPU
# twins, the CUDA executor against the CPU engine and the transformers dumps), compute-sanitizer
# memcheck on a slice of the kernel tests, the default model's perplexity on the GPU against
# transformers', bin/gpu_bench and bench/gpu_baseline.py (transformers generate on the same model).
# One global deadline (GPU_CHECK_DEADLINE_S, default 480 s) bounds everything: each step's limit
# is cut to what is left, and a step that cannot start in time is recorded as skipped. The summary
# is printed whatever happened; with $OUT set, gpu-check.log and results.json are written there.
# GPU_CHECK_ONLY, an extended regular expression, keeps only the steps whose names it matches
# (e.g. 'cuda_gemm_test|gpu_bench' for a short second run after a fix).
#
# Exit codes: 0 everything passed; 1 a step failed or timed out; 3 no GPU visible.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
if [[ ! -d "${ROOT}/bin" ]]; then
  echo "gpu-check: run me from a bundle: scripts/gpu-bundle.sh OUT && OUT/gpu-check.sh" >&2
  exit 1
fi
cd "${ROOT}"
T0=$(date +%s)
DEADLINE=$(( T0 + ${GPU_CHECK_DEADLINE_S:-480} ))
RESULTS_DIR="${OUT:-${ROOT}/results}"
mkdir -p "${RESULTS_DIR}"
LOG="${RESULTS_DIR}/gpu-check.log"
exec > >(tee -a "${LOG}") 2>&1
SUMMARY=()
FAILED=0
declare -A JSON_PARTS

# wanted NAME: whether GPU_CHECK_ONLY (unset: everything) selects the step NAME.
wanted() { [[ -z "${GPU_CHECK_ONLY:-}" || "$1" =~ ${GPU_CHECK_ONLY} ]]; }

# step NAME LIMIT_S COMMAND...: runs under min(LIMIT, time left), records ok / FAILED / timeout.
step() {
  local name="$1" limit="$2"
  shift 2
  wanted "${name}" || return 0
  local left=$(( DEADLINE - $(date +%s) ))
  if (( left < 10 )); then
    SUMMARY+=("${name}: skipped (global deadline reached)")
    FAILED=1
    return 0
  fi
  (( limit > left )) && limit=${left}
  local t=$(date +%s)
  echo "=== ${name} (limit ${limit}s): $*"
  timeout --kill-after=5 "${limit}" "$@"
  local rc=$?
  local took=$(( $(date +%s) - t ))
  if [[ ${rc} -eq 0 ]]; then
    SUMMARY+=("${name}: ok in ${took}s")
  else
    [[ ${rc} -eq 124 ]] && rc="timeout"
    SUMMARY+=("${name}: FAILED (${rc}) in ${took}s")
    FAILED=1
  fi
}

finish() {
  echo
  echo "===== gpu-check summary ($(date -u +%Y-%m-%dT%H:%MZ), bundle $(tr '\n' ' ' < COMMIT)) ====="
  for line in "${PROBE[@]}"; do echo "${line}"; done
  for line in "${SUMMARY[@]}"; do echo "${line}"; done
  for key in "${!JSON_PARTS[@]}"; do echo "${key}: ${JSON_PARTS[${key}]}"; done
  echo "total: $(( $(date +%s) - T0 ))s"
  echo "====="
  {
    echo "{\"total_s\": $(( $(date +%s) - T0 )), \"failed\": ${FAILED},"
    echo " \"steps\": ["
    local first=1
    for line in "${SUMMARY[@]}"; do
      (( first )) || echo ","
      first=0
      printf '  "%s"' "${line//\"/\'}"
    done
    echo "],"
    for key in "${!JSON_PARTS[@]}"; do echo " \"${key}\": ${JSON_PARTS[${key}]},"; done
    echo " \"probe\": \"$(printf '%s; ' "${PROBE[@]}" | tr '"' "'")\"}"
  } > "${RESULTS_DIR}/results.json"
}
trap finish EXIT

# --- Probe: what the machine has. ---
PROBE=()
export PATH="/usr/local/cuda/bin:${PATH}"
if command -v nvidia-smi >/dev/null 2>&1; then
  PROBE+=("gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 1)")
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
else
  PROBE+=("gpu: nvidia-smi not found")
  GPUS=0
fi
PROBE+=("nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)")
PYTHON=""
for p in python3 /opt/torch/.venv/bin/python3; do
  if command -v "${p}" >/dev/null 2>&1 && "${p}" -c 'import torch, transformers' 2>/dev/null; then
    PYTHON="${p}"
    break
  fi
done
PROBE+=("python with torch+transformers: ${PYTHON:-none}")
# CUDA runtime and cuBLAS: the toolkit's, else NVIDIA's wheels beside torch; NCCL from its wheel.
LIBDIRS=("${ROOT}/lib")
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d "${d}" ]] && LIBDIRS+=("${d}")
done
if [[ -n "${PYTHON}" ]]; then
  while read -r d; do [[ -n "${d}" ]] && LIBDIRS+=("${d}"); done < <("${PYTHON}" - <<'EOF' 2>/dev/null
import glob, os
import nvidia
for root in nvidia.__path__:
    for lib in sorted(set(os.path.dirname(p) for p in glob.glob(os.path.join(root, "**", "lib*.so*"), recursive=True))):
        print(lib)
EOF
)
fi
export LD_LIBRARY_PATH="$(IFS=:; echo "${LIBDIRS[*]}")${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
# The bundle's MPI runtime, relocated (scripts/gpu-bundle.sh).
if [[ -x "${ROOT}/mpi/bin/mpirun" ]]; then
  export OPAL_PREFIX="${ROOT}/mpi" PMIX_INSTALL_PREFIX="${ROOT}/pmix"
  export PMIX_MCA_pcompress_base_silence_warning=1 PATH="${ROOT}/mpi/bin:${PATH}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
PROBE+=("mpirun: $(command -v mpirun || echo none)")
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  found=""
  for d in "${LIBDIRS[@]}"; do [[ -e "${d}/${lib}" ]] && { found="${d}"; break; }; done
  PROBE+=("${lib}: ${found:-not found}")
done
missing=$(LD_LIBRARY_PATH="${LD_LIBRARY_PATH}" ldd bin/weft bin/gpu_bench bin/cuda_*_test 2>&1 | grep 'not found' | sort -u | tr -s ' \t\n' ' ')
PROBE+=("unresolved libraries: ${missing:-none}")
for line in "${PROBE[@]}"; do echo "probe: ${line}"; done
if [[ "${GPUS}" -eq 0 ]]; then
  SUMMARY+=("gpu: none visible: nothing checked on a device")
  FAILED=3
  exit 3
fi

# --- The gpu tests, all at once (their CPU twins use the host's cores). ---
export WEFT_SOURCE_DIR="${ROOT}"
TEST_DIR="$(mktemp -d)"
RUNS=(cuda_ops_test cuda_attention_test cuda_gemm_test cuda_gemv_quantized_test cuda_golden_test)
pids=()
for i in "${!RUNS[@]}"; do
  step "${RUNS[${i}]}" 150 bash -c 'bin/$0 --gtest_brief=1 > "$1" 2>&1' "${RUNS[${i}]}" \
    "${TEST_DIR}/${i}.log" &
  pids+=($!)
done
# step runs in the subshells above, so their SUMMARY lines are rebuilt here from the logs, and
# the logs go into one file (the device tool returns few files).
for pid in "${pids[@]}"; do wait "${pid}"; done
for i in "${!RUNS[@]}"; do
  wanted "${RUNS[${i}]}" || continue
  log="${TEST_DIR}/${i}.log"
  { echo "===== ${RUNS[${i}]}"; cat "${log}"; } >> "${RESULTS_DIR}/tests.log"
  echo "--- ${RUNS[${i}]}"
  grep -E '^\[  (FAILED|PASSED|SKIPPED) |^\[==========\]|Failure|error|Expected|Which is|actual' "${log}" | head -n 40
  if grep -q '^\[  PASSED  \]' "${log}" && ! grep -q '^\[  FAILED  \]' "${log}"; then
    SUMMARY+=("${RUNS[${i}]}: ok ($(grep -o '[0-9]* tests\?' "${log}" | head -n 1) run, $(grep -c '^\[  SKIPPED \]' "${log}") skipped)")
  else
    SUMMARY+=("${RUNS[${i}]}: FAILED ($(grep -c '^\[  FAILED  \]' "${log}") failure lines; see tests.log)")
    FAILED=1
  fi
done

# --- The bundle's MPI runtime: two ranks (tensor parallel) generate what one rank does, on the
# CPU and on the GPU. ---
if [[ -x "${ROOT}/mpi/bin/mpirun" ]]; then
  step "mpirun -np 2 --tp 2 (CPU)" 60 bash -c '
    args=(generate --model configs/default-model --prompt "The capital of France is"
          --max-tokens 12 --temperature 0)
    one="$(bin/weft "${args[@]}" 2>/dev/null)"
    two="$(mpirun --oversubscribe -np 2 bin/weft "${args[@]}" --tp 2 2>/dev/null)"
    echo "1 rank: ${one@Q}"; echo "2 ranks: ${two@Q}"; [[ -n "${one}" && "${one}" == "${two}" ]]'
  # The multi-rank CUDA path, both ranks on GPU 0 (TP sums over host memory): the same greedy
  # text as one GPU.
  step "--device cuda --tp 2 / --pp 2, 2 ranks on one GPU" 120 bash -c '
    args=(generate --model configs/default-model --prompt "The capital of France is"
          --max-tokens 12 --temperature 0 --device cuda)
    log="$(mktemp)"
    one="$(bin/weft "${args[@]}" 2>>"${log}")"
    tp="$(mpirun --oversubscribe -np 2 bin/weft "${args[@]}" --tp 2 2>>"${log}")"
    pp="$(mpirun --oversubscribe -np 2 bin/weft "${args[@]}" --pp 2 2>>"${log}")"
    echo "1 GPU: ${one@Q}"; echo "tp 2: ${tp@Q}"; echo "pp 2: ${pp@Q}"
    grep -v "^weft: device memory plan\|^  " "${log}" | tail -n 20
    [[ -n "${one}" && "${one}" == "${tp}" && "${one}" == "${pp}" ]]'
  # Device tensors through host memory, both ranks on GPU 0 (parallel/host_staged_communicator.h).
  step "host-staged communicator, 2 ranks on one GPU" 60 bash -c \
    'mpirun --oversubscribe -np 2 bin/host_staged_cuda_comm_test --gtest_brief=1 2>&1 | tail -n 20; exit ${PIPESTATUS[0]}'
fi

# --- The default model end to end: held-out perplexity within 1% of transformers'. ---
if [[ -n "${PYTHON}" ]]; then
  step "default model perplexity --device cuda" 90 \
    "${PYTHON}" tests/golden/default_model/perplexity_check.py bin/weft --device cuda
fi

# --- Throughput: weft's CUDA executor, then transformers generate on the same model. ---
MODEL_DIR="${TMPDIR:-/tmp}/weft_gpu_bench_model"
SCRATCH="$(mktemp -d)"  # bench logs: their lines are in gpu-check.log already
BENCH_LOG="${SCRATCH}/gpu_bench.log"
step gpu_bench 150 bash -c "bin/gpu_bench '${MODEL_DIR}' 2>&1 | tee '${BENCH_LOG}'; exit \${PIPESTATUS[0]}"
json="$(grep '^{' "${BENCH_LOG}" 2>/dev/null | tail -n 1)"
[[ -n "${json}" ]] && JSON_PARTS[weft_bench]="${json}"
if [[ -n "${PYTHON}" && -f "${MODEL_DIR}/model.safetensors" ]]; then
  BASE_LOG="${SCRATCH}/gpu_baseline.log"
  step "transformers baseline" 120 bash -c \
    "PYTHONUNBUFFERED=1 '${PYTHON}' bench/gpu_baseline.py '${MODEL_DIR}' 2>&1 | tee '${BASE_LOG}'; exit \${PIPESTATUS[0]}"
  json="$(grep '^{' "${BASE_LOG}" 2>/dev/null | tail -n 1)"
  [[ -n "${json}" ]] && JSON_PARTS[transformers_baseline]="${json}"
fi

# --- Where the time goes: Nsight Compute's per-kernel summary of a few batch-1 decode steps and
# of one 8 x 1024-token prefill step (graph kernels are profiled node by node). ---
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -n 1)"
if [[ -n "${NCU}" && -f "${MODEL_DIR}/model.safetensors" ]]; then
  step "ncu b1 decode" 60 bash -c "'${NCU}' --clock-control none --print-summary per-kernel \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    --launch-skip 400 --launch-count 400 bin/gpu_bench '${MODEL_DIR}' --only b1 \
    > '${RESULTS_DIR}/ncu_b1.log' 2>&1"
  step "ncu prefill" 60 bash -c "'${NCU}' --clock-control none --print-summary per-kernel \
    --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    --launch-skip 200 --launch-count 200 bin/gpu_bench '${MODEL_DIR}' --only prefill \
    > '${RESULTS_DIR}/ncu_prefill.log' 2>&1"
else
  SUMMARY+=("ncu: skipped (${NCU:-ncu not found})")
fi

# --- A/B: the same benchmark with each of weft's own decode / prefill kernels swapped for the
# alternative, to attribute the difference. ---
for flag in --gemv --simt-prefill; do
  rm -f "${SCRATCH}/ab.log"
  step "gpu_bench ${flag}" 90 bash -c \
    "bin/gpu_bench '${MODEL_DIR}' ${flag} > '${SCRATCH}/ab.log' 2>&1; rc=\$?; grep -E '^(decode|prefill)' '${SCRATCH}/ab.log'; exit \${rc}"
  json="$(grep '^{' "${SCRATCH}/ab.log" 2>/dev/null | tail -n 1)"
  key="${flag#--}"
  [[ -n "${json}" ]] && JSON_PARTS["weft_bench_${key//-/_}"]="${json}"
done

# --- compute-sanitizer memcheck on the kernels this work added or changed, with what time is
# left: greedy argmax, gemv, decode attention (partitions of 16..256 tokens), tensor-core
# prefill attention. ---
if command -v compute-sanitizer >/dev/null 2>&1; then
  for target in "cuda_ops_test *Argmax*" "cuda_gemm_test *DecodeShapes*" \
                "cuda_attention_test *PrefillTileEdges*" "cuda_attention_test *DecodeMatchesCpu*"; do
    read -r t filter <<< "${target}"
    step "memcheck ${target}" 90 compute-sanitizer --tool memcheck --error-exitcode 9 \
      --print-limit 20 "bin/${t}" --gtest_brief=1 "--gtest_filter=${filter}"
  done
else
  SUMMARY+=("memcheck: skipped (compute-sanitizer not found)")
fi
exit "${FAILED}"
