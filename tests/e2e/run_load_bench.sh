#!/usr/bin/env bash
# Runs the serving load benchmark on loopback: generates the tiny e2e model, starts `weft serve`
# on a free port, drives it with serve_load_bench, prints the JSON report and stops the server.
#   tests/e2e/run_load_bench.sh BUILD_DIR [CONCURRENCY=500] [REQUESTS=2*CONCURRENCY] [MAX_TOKENS=16]
set -euo pipefail
build=${1:?usage: run_load_bench.sh BUILD_DIR [CONCURRENCY] [REQUESTS] [MAX_TOKENS]}
conc=${2:-500}
requests=${3:-$((2 * conc))}
max_tokens=${4:-16}
dir=$(mktemp -d /tmp/weft-load-XXXXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
ulimit -n "$(ulimit -Hn)"
"$build/tests/e2e/make_test_model" "$dir/model"
"$build/launcher/weft" serve --model "$dir/model" --port 0 --threads 1 --max-model-len 256 \
  --max-num-seqs 1024 --max-num-batched-tokens 16384 --kv-cache-blocks 8192 --max-waiting 8192 \
  2> "$dir/server.log" &
pid=$!
for _ in $(seq 600); do
  port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$dir/server.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$dir/server.log"; exit 1; }
"$build/tests/e2e/serve_load_bench" --port "$port" --concurrency "$conc" --requests "$requests" \
  --max-tokens "$max_tokens" --server-pid "$pid" --time-limit 600
status=$?
kill -TERM $pid
wait $pid || true
exit $status
