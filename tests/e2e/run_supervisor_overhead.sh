#!/usr/bin/env bash
# What `weft supervise` costs a healthy server: the serving load benchmark against `weft serve`
# directly and through a supervisor in front of it (the same engine process), alternating, on
# loopback. Prints one JSON report per run, labelled direct / supervised.
#   tests/e2e/run_supervisor_overhead.sh BUILD_DIR MODEL_DIR [CONCURRENCY=16] [REQUESTS=64] [MAX_TOKENS=64] [ROUNDS=2]
set -euo pipefail
build=${1:?usage: run_supervisor_overhead.sh BUILD_DIR MODEL_DIR [CONCURRENCY] [REQUESTS] [MAX_TOKENS] [ROUNDS]}
model=${2:?model directory}
conc=${3:-16} requests=${4:-64} max_tokens=${5:-64} rounds=${6:-2}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port) engine_port=$(free_port)
log=$(mktemp /tmp/weft-supervise-XXXXXX.log)
"$build/launcher/weft" supervise --port "$port" --engine-port "$engine_port" -- \
  "$build/launcher/weft" serve --model "$model" --port "$engine_port" --max-model-len 512 2>"$log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 600); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/ready") == 200 ]] && break
  sleep 0.1
done
engine_pid=$(pgrep -P "$pid" | head -1)
# CPU seconds (user + system) the supervisor process has used.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$pid/stat"; }
for round in $(seq "$rounds"); do
  for mode in direct supervised; do
    p=$engine_port
    [ "$mode" = supervised ] && p=$port
    echo "$mode (round $round):"
    before=$(cpu_s)
    "$build/tests/e2e/serve_load_bench" --port "$p" --concurrency "$conc" --requests "$requests" \
      --max-tokens "$max_tokens" --server-pid "$engine_pid" --time-limit 600
    echo "supervisor_cpu_s $(awk -v a="$before" -v b="$(cpu_s)" 'BEGIN { print b - a }')"
  done
done
