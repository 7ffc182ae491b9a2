#!/usr/bin/env bash
# One weft job over three "machines" on this one: network namespaces joined by a bridge, each
# with its own address and host name, reached by OpenMPI's rsh launcher through
# scripts/netns-rsh-agent.sh instead of ssh, with the TCP transport only. Checks:
#   1. weft generate, batch and serve as TP2 x PP2 (4 ranks mapped round-robin over the hosts, so
#      every TP all-reduce and every pipeline hop crosses hosts) give one process's greedy output;
#   2. a host taken away (every process in its namespace SIGKILLed) while serve streams to
#      clients: every rank and every client ends within 30 s, and the job's output names the lost
#      rank and host.
#   scripts/multihost-test.sh WEFT MODEL_DIR
# Needs root (ip netns, veth, a bridge) and OpenMPI's mpirun; exits 77 (skipped) when the
# namespaces cannot be made. Nothing is routed outside the namespaces: the hosts' only link is
# the bridge, which lives in a namespace of its own ("gateway", where the clients run); the
# namespaces are removed on exit, whatever happens.
set -u -o pipefail
if [ $# -ne 2 ]; then
  echo "usage: multihost-test.sh WEFT MODEL_DIR" >&2
  exit 2
fi
weft=$(readlink -f "$1")
model=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
agent=$here/netns-rsh-agent.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The simulated hosts share this machine's /tmp. Each keeps Open MPI's own session directory,
# named by host, as separate machines would; the one top that scripts/mpi-test-env.sh gives a
# test run would be shared by all three hosts' daemons, whose job-family directories one daemon
# may remove as another creates its own.
unset OMPI_MCA_orte_top_session_dir

run_id=$$
prefix=weft-mh$run_id
hosts=(mh-host0 mh-host1 mh-host2)
subnet=10.77.0.0/24
gateway_ns=$prefix-gw
gateway_addr=10.77.0.254
dir=$(mktemp -d)
made_ns=()

kill_namespace() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  return 0
}
cleanup() {
  for ns in "${made_ns[@]}"; do kill_namespace "$ns"; done
  sleep 0.2
  for ns in "${made_ns[@]}"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do
    [ -f "$f" ] || continue
    echo "----- $(basename "$f") (last 25 lines) -----"
    tail -n 60 "$f"
  done
  exit 1
}
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
t_start=$(now)

# ---- the hosts ----
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for ip netns"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# Namespaces left by a run that was killed (SIGKILL skips the trap) whose script is gone.
for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(weft-mh[0-9]*-[a-z0-9]*\).*/\1/p'); do
  owner=${ns#weft-mh}
  owner=${owner%%-*}
  if ! kill -0 "$owner" 2>/dev/null; then kill_namespace "$ns"; ip netns del "$ns" 2>/dev/null; fi
done
ip netns add "$gateway_ns" 2>"$dir/netns.err" || { echo "SKIP: ip netns add failed: $(cat "$dir/netns.err")"; exit 77; }
made_ns+=("$gateway_ns")
ip -n "$gateway_ns" link set lo up
ip -n "$gateway_ns" link add br0 type bridge || fail "cannot make a bridge"
ip -n "$gateway_ns" addr add "$gateway_addr/24" dev br0
ip -n "$gateway_ns" link set br0 up
: >"$dir/hosts"
: >"$dir/hostfile"
for i in "${!hosts[@]}"; do
  ns=$prefix-h$i
  ip netns add "$ns" || fail "ip netns add $ns"
  made_ns+=("$ns")
  # The veth pair is made directly inside the two namespaces: no interface ever exists in the
  # machine's own namespace.
  ip link add "eth$i-$run_id" netns "$ns" type veth peer name "port$i" netns "$gateway_ns" ||
    fail "cannot make the veth pair of ${hosts[$i]}"
  ip -n "$ns" link set "eth$i-$run_id" name eth0
  ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip -n "$gateway_ns" link set "port$i" master br0
  ip -n "$gateway_ns" link set "port$i" up
  echo "${hosts[$i]} $ns" >>"$dir/hosts"
  echo "${hosts[$i]} slots=2" >>"$dir/hostfile"
done
export WEFT_NETNS_HOSTS=$dir/hosts
host_ns() { echo "$prefix-h$1"; }
addr_of() { echo "10.77.0.$(($1 + 1))"; }
echo "hosts: ${hosts[*]} ($subnet, one bridge in $gateway_ns; clients at $gateway_addr)"

# on_host0 CMD...: runs CMD on the first host (its namespace and host name), where mpirun runs.
on_host0() {
  ip netns exec "$(host_ns 0)" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${hosts[0]}" "$@"
}
# The launcher's flags for these hosts: TCP only, on the test subnet only, through the agent.
mpi_flags=(--hostfile "$dir/hostfile" --map-by node
           --mca plm_rsh_agent "$agent"
           --mca pml ob1 --mca btl tcp,self
           --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet")
layout=(--tp 2 --pp 2 --threads 1)
# F32 activations on both sides: with BF16 activations (--matmul-precision auto on AMD Zen 4) the
# row-parallel partial sums of TP change the last bit before the next BF16 rounding, which can
# flip a near-tied greedy token, so one process and a TP job agree only to BF16 rounding there.
exact=(--matmul-precision f32)
# job WEFT_ARGS...: weft as one job of 4 ranks, mpirun on the first host.
job() { on_host0 timeout -k 5 120 mpirun -np 4 "${mpi_flags[@]}" "$weft" "$@"; }

# ---- 1. generate ----
t=$(now)
gen=(generate --model "$model" "${exact[@]}" --prompt "And God said" --max-tokens 24 --temperature 0)
timeout -k 5 60 "$weft" "${gen[@]}" --threads 1 >"$dir/generate_single.out" 2>"$dir/generate_single.log" ||
  fail "weft generate (one process) failed"
job "${gen[@]}" "${layout[@]}" \
  >"$dir/generate_job.out" 2>"$dir/generate_job.log" || fail "weft generate over 3 hosts failed"
[ -s "$dir/generate_single.out" ] || fail "one process generated nothing"
cmp -s "$dir/generate_single.out" "$dir/generate_job.out" ||
  fail "generate differs: '$(cat "$dir/generate_job.out")' vs one process '$(cat "$dir/generate_single.out")'"
# --map-by node: rank r on host r % 3, so both TP groups and both pipeline hops span two hosts.
for r in 0 1 2 3; do
  grep -q "weft: rank $r (stage $((r / 2)), tp rank $((r % 2))) on host ${hosts[$((r % 3))]}$" "$dir/generate_job.log" ||
    fail "weft's start-up lines do not put rank $r on ${hosts[$((r % 3))]}"
done
echo "ok generate TP2xPP2 over 3 hosts = one process ($(since "$t") s)"

# ---- 2. batch ----
t=$(now)
for i in 1 2 3 4; do
  printf '{"custom_id":"line-%d","method":"POST","url":"/v1/completions","body":{"prompt":"In the beginning %d","max_tokens":12,"temperature":0}}\n' "$i" "$i"
done >"$dir/batch_in.jsonl"
timeout -k 5 60 "$weft" batch --model "$model" "${exact[@]}" --threads 1 --input "$dir/batch_in.jsonl" \
  --output "$dir/batch_single.jsonl" >"$dir/batch_single.log" 2>&1 || fail "weft batch (one process) failed"
job batch --model "$model" "${exact[@]}" \
  "${layout[@]}" --input "$dir/batch_in.jsonl" --output "$dir/batch_job.jsonl" >"$dir/batch_job.log" 2>&1 ||
  fail "weft batch over 3 hosts failed"
texts() {
  python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in sorted(rows, key=lambda r: r["custom_id"]):
    print(r["custom_id"], json.dumps(r["response"]["body"]["choices"][0]["text"]))
PY
}
single=$(texts "$dir/batch_single.jsonl") || fail "cannot read the one-process batch output"
jobs_out=$(texts "$dir/batch_job.jsonl") || fail "cannot read the job's batch output"
[ "$(echo "$single" | wc -l)" -eq 4 ] || fail "one process wrote $(echo "$single" | wc -l) records, expected 4"
[ "$single" == "$jobs_out" ] || fail "batch differs: $jobs_out vs one process $single"
echo "ok batch TP2xPP2 over 3 hosts = one process, 4 records ($(since "$t") s)"

# ---- 3. serve ----
t=$(now)
in_gateway() { ip netns exec "$gateway_ns" "$@"; }
# wait_ready URL: until /ready answers 200 (at most 60 s).
wait_ready() {
  for _ in $(seq 600); do
    [ "$(in_gateway curl -s -o /dev/null -w '%{http_code}' "$1/ready")" == 200 ] && return 0
    sleep 0.1
  done
  return 1
}
body='{"model":"m","prompt":"The LORD is my shepherd","max_tokens":16,"temperature":0}'
complete() { in_gateway curl -s --max-time 60 "$1/v1/completions" -H 'content-type: application/json' -d "$body"; }
text_of() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["choices"][0]["text"])' "$1"; }

# One process, in the gateway namespace on its own loopback.
in_gateway timeout -k 5 120 "$weft" serve --model "$model" "${exact[@]}" --served-model-name m --threads 1 \
  --host 127.0.0.1 --port 8001 >"$dir/serve_single.log" 2>&1 &
single_pid=$!
wait_ready http://127.0.0.1:8001 || fail "the one-process server did not become ready"
single=$(complete http://127.0.0.1:8001) || fail "no answer from the one-process server"
kill -TERM $single_pid
wait $single_pid

server=http://$(addr_of 0):8000
job serve --model "$model" "${exact[@]}" \
  --served-model-name m "${layout[@]}" --host "$(addr_of 0)" --port 8000 >"$dir/serve_job.log" 2>&1 &
job_pid=$!
wait_ready "$server" || fail "the job's server did not become ready"
answer=$(complete "$server") || fail "no answer from the job's server"
[ -n "$(text_of "$single")" ] || fail "no text from the one-process server: $single"
[ "$(text_of "$single")" == "$(text_of "$answer")" ] ||
  fail "serve differs: '$(text_of "$answer")' vs one process '$(text_of "$single")'"
echo "ok serve TP2xPP2 over 3 hosts = one process ($(since "$t") s)"

# ---- 4. a host taken away under load ----
lost=2
lost_host=${hosts[$lost]}
lost_ranks=$(sed -n "s/.*weft: rank \([0-9]*\) (.*) on host $lost_host\b.*/\1/p" "$dir/serve_job.log" | sort -u | tr '\n' ' ')
[ -n "$lost_ranks" ] || fail "the job's log does not say which ranks run on $lost_host"
clients=4
long='{"model":"m","prompt":"And it came to pass","max_tokens":900,"ignore_eos":true,"temperature":0,"stream":true}'
for c in $(seq $clients); do
  (
    in_gateway curl -sN --max-time 120 "$server/v1/completions" -H 'content-type: application/json' \
      -d "$long" >"$dir/client$c.out" 2>&1
    echo "$? $(now)" >"$dir/client$c.end"
  ) &
done
# Every client is streaming before the host goes.
for _ in $(seq 300); do
  streaming=0
  for c in $(seq $clients); do grep -q '^data:' "$dir/client$c.out" 2>/dev/null && streaming=$((streaming + 1)); done
  [ $streaming -eq $clients ] && break
  sleep 0.1
done
[ $streaming -eq $clients ] || fail "only $streaming of $clients clients were streaming"
t_loss=$(now)
kill_namespace "$(host_ns $lost)"
echo "took $lost_host away (SIGKILL to every process in its namespace: ranks $lost_ranks)"

# wait_gone SECONDS: until mpirun has exited and no process is left on any host.
left_on_hosts() { for i in "${!hosts[@]}"; do ip netns pids "$(host_ns "$i")"; done; }
for _ in $(seq 600); do
  kill -0 $job_pid 2>/dev/null || [ -n "$(left_on_hosts)" ] || break
  sleep 0.1
done
job_end=$(since "$t_loss")
wait $job_pid
job_rc=$?
wait  # the clients
[ -z "$(left_on_hosts)" ] || fail "processes still running on the hosts 60 s after the loss: $(left_on_hosts | tr '\n' ' ')"
echo "mpirun exited with status $job_rc and every rank was gone ${job_end} s after the loss"
[ $job_rc -ne 0 ] || fail "the job exited 0 after losing a host"
(($(echo "$job_end < 30" | bc))) || fail "the job took ${job_end} s to end (limit 30 s)"
for c in $(seq $clients); do
  read -r rc end <"$dir/client$c.end"
  took=$(echo "$end - $t_loss" | bc)
  echo "client $c ended ${took} s after the loss (curl status $rc)"
  (($(echo "$took < 30" | bc))) || fail "client $c took ${took} s to end"
  grep -q '\[DONE\]' "$dir/client$c.out" && fail "client $c got a complete stream from a job that lost a host"
done
# Weft's start-up lines name the ranks on each host (checked above); OpenMPI's abort report must
# follow, and usually names the lost host ("Peer host: ..."). Under load it sometimes reports the
# lost daemon without naming it (seen in about 1 run in 6): weft cannot add the name then, since
# mpirun ends rank 0 along with the job, so that case is reported, not failed.
if grep -q "$lost_host" <(grep -v "weft: rank [0-9]* (.*) on host" "$dir/serve_job.log"); then
  grep -n "$lost_host" "$dir/serve_job.log" | head -n 8
elif grep -q "ORTE\|mpirun\|daemon" "$dir/serve_job.log"; then
  echo "NOTE: OpenMPI's abort report does not name $lost_host this time (weft's start-up lines do)"
else
  fail "no abort report after losing $lost_host"
fi
echo "PASS: 3 hosts, generate/batch/serve equal one process; host loss ended the job in ${job_end} s (total $(since "$t_start") s)"
