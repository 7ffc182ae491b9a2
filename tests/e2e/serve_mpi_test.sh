#!/usr/bin/env bash
# weft serve as one job of 2 ranks (TP 2) under mpirun: rank 0 serves, and its greedy answer
# equals a single-process server's; SIGTERM drains and every rank exits 0. Bounded waits only.
#   serve_mpi_test.sh MPIRUN WEFT MAKE_TEST_MODEL
set -u
mpirun=$1 weft=$2 make_model=$3
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -n 20 "$dir"/*.log; exit 1; }

"$make_model" "$dir/model" >/dev/null || fail "could not make the test model"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
body='{"model":"model","prompt":"The capital of France","max_tokens":12,"temperature":0}'

# start NAME PORT CMD...: runs a server in the background and waits until /ready answers 200.
start() {
  local name=$1 port=$2
  shift 2
  "$@" --model "$dir/model" --port "$port" --threads 1 >"$dir/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/ready") == 200 ]] && return 0
    sleep 0.1
  done
  fail "$name did not become ready"
}

p1=$(free_port)
start single "$p1" "$weft" serve
single=$(curl -s --max-time 30 "http://127.0.0.1:$p1/v1/completions" -H 'content-type: application/json' -d "$body")
kill -TERM "${pids[0]}"

p2=$(free_port)
start job "$p2" timeout -k 5 120 "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$weft" serve --tp 2
job=$(curl -s --max-time 30 "http://127.0.0.1:$p2/v1/completions" -H 'content-type: application/json' -d "$body")
text() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["choices"][0]["text"])' "$1"; }
[[ -n "$(text "$single")" ]] || fail "no text from the single-process server: $single"
[[ "$(text "$single")" == "$(text "$job")" ]] || fail "TP2 answer differs: '$(text "$job")' vs '$(text "$single")'"

# SIGTERM to the serving process (rank 0, the one listening), as a gateway or orchestrator sends
# it: it drains, ends the workers' step loops, and the whole job exits 0.
rank0=$(ss -ltnpH "sport = :$p2" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)
[[ -n "$rank0" ]] || fail "no process listens on port $p2"
kill -TERM "$rank0"
wait "${pids[1]}"
rc=$?
[[ $rc -eq 0 ]] || fail "the TP2 job exited with status $rc after SIGTERM to rank 0"
echo "PASS: same greedy text on 1 and 2 ranks; the job drained and exited 0"
