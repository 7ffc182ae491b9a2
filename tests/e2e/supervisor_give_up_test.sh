#!/usr/bin/env bash
# weft supervise's bounds: an engine command that cannot run, or never becomes ready, ends the
# supervisor at once (exit 1, the reason named); an engine that dies each time it is up is
# restarted --max-restarts times, then every client gets an error and the supervisor exits 1.
#   supervisor_give_up_test.sh WEFT MODEL_DIR
set -u
weft=$1 model=$2
dir=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir"/*.log 2>/dev/null | tail -n 30; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# 1. A command that does not exist.
timeout 60 "$weft" supervise --port 0 --engine-port 9 -- /nonexistent/engine 2>"$dir/missing.log"
rc=$?
[ $rc -eq 1 ] || fail "a missing engine command: exit $rc, expected 1"
grep -q "cannot run the engine command '/nonexistent/engine'" "$dir/missing.log" || fail "no message naming the command"

# 2. An engine that exits before it is ready (a wrong flag): no restart can help.
timeout 120 "$weft" supervise --port 0 --engine-port "$(free_port)" -- \
  "$weft" serve --model "$model" --no-such-flag 2>"$dir/never.log"
rc=$?
[ $rc -eq 1 ] || fail "an engine that never became ready: exit $rc, expected 1"
grep -q "the engine never became ready: the engine exited with status 2 before it was ready" "$dir/never.log" ||
  fail "no message saying the engine never became ready"
[ "$(grep -c 'started the engine' "$dir/never.log")" -eq 1 ] || fail "it was restarted"

# 3. An engine killed each time it is up (once the supervisor's /ready says so): 2 restarts
#    allowed, so 3 deaths and the supervisor gives up; a client waiting meanwhile gets a 503.
port=$(free_port) engine_port=$(free_port)
"$weft" supervise --port "$port" --engine-port "$engine_port" --max-restarts 2 --restart-backoff-ms 50 -- \
  sh -c "\"$weft\" serve --model \"$model\" --port $engine_port --max-model-len 256 & p=\$!
         until curl -sf http://127.0.0.1:$port/ready >/dev/null; do sleep 0.1; done
         kill -9 \$p" 2>"$dir/dying.log" &
sup=$!
for _ in $(seq 600); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health") == 200 ]] && break
  sleep 0.1
done
body=$(curl -s --max-time 300 "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
  -d '{"prompt":"Hi","max_tokens":4,"temperature":0}')
timeout 300 tail --pid=$sup -f /dev/null
wait $sup
rc=$?
[ $rc -eq 1 ] || fail "an engine dying every time: exit $rc, expected 1"
grep -q "giving up: the engine failed 3 times within 600 s" "$dir/dying.log" || fail "no give-up message"
[ "$(grep -c 'started the engine' "$dir/dying.log")" -eq 3 ] || fail "expected exactly 3 starts"
# The client either got its answer from an engine that was up for a moment, or the error.
echo "$body" | grep -q '"choices"\|service_unavailable' || fail "client got: $body"
echo "PASS"
