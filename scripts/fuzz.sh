#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang 14, ASan + UBSan) in build-fuzz/ and runs each
# for SECONDS (default 60) starting from a copy of its committed seed corpus
# (tests/fuzz/corpus/<target>/), one target at a time. SECONDS=0 only replays the seeds.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# Exit status is non-zero when any target crashes, leaks, times out (-timeout per input) or runs
# out of memory; the offending input is kept in build-fuzz/artifacts/<target>/ and the command
# to reproduce it is printed. New corpus entries stay in the temporary copy (the repository is
# not modified); set WEFT_FUZZ_KEEP_CORPUS=DIR to keep them under DIR/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds="${1:-60}"
[ $# -gt 0 ] && shift
build=build-fuzz
jobs="${WEFT_JOBS:-$(nproc)}"

# Target -> libFuzzer -max_len (bytes): about twice the largest useful seed.
declare -A max_len=(
  [safetensors]=4096
  [gguf]=8192
  [weight_index]=4096
  [model_config]=4096
  [sampling_params]=2048
  [step_plan]=4096
  [tokenizer_load]=16384
  [tokenizer_encode]=4096
  [chat_template]=8192
  [chat_messages]=4096
  [http_request]=4096
  [batch_line]=8192
  [tool_call_parser]=4096
)
declare -A dict=(
  [safetensors]=json.dict
  [weight_index]=json.dict
  [model_config]=json.dict
  [sampling_params]=json.dict
  [tokenizer_load]=json.dict
  [chat_template]=jinja.dict
  [chat_messages]=json.dict
  [http_request]=json.dict
  [batch_line]=json.dict
  [tool_call_parser]=json.dict
)
all_targets=(safetensors gguf weight_index model_config sampling_params step_plan http_request batch_line tokenizer_load
             tokenizer_encode chat_template chat_messages tool_call_parser)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

cxx="${WEFT_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++)}"
cc="${WEFT_FUZZ_CC:-$(command -v clang-14 || command -v clang)}"
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -S . -B "$build" -G Ninja \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=all" \
    -DWEFT_SANITIZE=fuzzer-no-link,address,undefined \
    -DWEFT_FUZZ=ON -DWEFT_CUDA=OFF -DWEFT_MPI=OFF -DWEFT_BUILD_TESTS=OFF \
    -DWEFT_BUILD_BENCH=OFF >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
fi
ninja -C "$build" -j"$jobs" $(printf '%s_fuzz ' "${targets[@]}")

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

failed=()
printf '%-18s %10s %14s %10s %s\n' target "exec/s" executions seconds result
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/${t}_fuzz"
  seeds="tests/fuzz/corpus/$t"
  [ -d "$seeds" ] || { echo "missing seed corpus $seeds" >&2; exit 1; }
  mkdir -p "$work/$t" "$build/artifacts/$t"
  cp -r "$seeds/." "$work/$t/"
  args=(-max_len="${max_len[$t]:-4096}" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1
        -artifact_prefix="$root/$build/artifacts/$t/")
  [ -n "${dict[$t]:-}" ] && args+=(-dict="tests/fuzz/${dict[$t]}")
  if [ "$seconds" -eq 0 ]; then
    args+=(-runs=0)
  else
    args+=(-max_total_time="$seconds")
  fi
  start=$(date +%s)
  status=0
  "$bin" "${args[@]}" "$work/$t" >"$work/$t.log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log" | tail -1)
  if [ "$status" -eq 0 ]; then
    result=ok
  else
    result="FAILED (exit $status)"
    failed+=("$t")
    # The report: a sanitizer or libFuzzer error (deadly signal, timeout, OOM, leak), a failed
    # property, or an uncaught exception's terminate message, each with its stack.
    grep -E -B2 -A40 '==[0-9]+== ?ERROR|ERROR: libFuzzer|runtime error|fuzz property failed|ALARM|out-of-memory|terminate called' \
      "$work/$t.log" | head -120 | cut -c1-300 >&2 || tail -60 "$work/$t.log" | cut -c1-300 >&2
    echo "reproduce: $bin <artifact from $build/artifacts/$t/>" >&2
  fi
  printf '%-18s %10s %14s %10s %s\n' "$t" "${rate:-?}" "${execs:-?}" "$elapsed" "$result"
  if [ -n "${WEFT_FUZZ_KEEP_CORPUS:-}" ]; then
    mkdir -p "$WEFT_FUZZ_KEEP_CORPUS/$t"
    cp -r "$work/$t/." "$WEFT_FUZZ_KEEP_CORPUS/$t/"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz failures: ${failed[*]}" >&2
  exit 1
fi
