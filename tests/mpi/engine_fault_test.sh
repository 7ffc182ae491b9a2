#!/usr/bin/env bash
# A weft job (2 ranks, TP 2) loses a rank mid-run; every rank must exit, non-zero, within 30 s.
#   engine_fault_test.sh kill  MPIRUN PROG MODEL   rank 1 is killed with SIGKILL
#   engine_fault_test.sh stall MPIRUN PROG MODEL   rank 1 is stopped (SIGSTOP): rank 0's step
#                                                  watchdog (deadline 2 s) must end the job, naming
#                                                  the rank and the step
#   engine_fault_test.sh stall-adaptive MPIRUN ...  the same with the default 300 s step timeout
#                                                  and a 3 s floor: the adaptive deadline (10 x
#                                                  the recent p99 step time, floored) must end
#                                                  the job in seconds, not after 300 s
set -u
mode=$1 mpirun=$2 prog=$3 model=$4
dir=$(mktemp -d)
log=$dir/mpirun.log
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "----- mpirun output -----"
  tail -40 "$log"
  exit 1
}
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z* ]]
}

deadline_args=(2)
[[ $mode == stall-adaptive ]] && deadline_args=(300 3)
timeout -k 10 90 "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$prog" "$dir" "$model" "${deadline_args[@]}" \
  >"$log" 2>&1 &
runner=$!
for _ in $(seq 300); do
  [[ $(ls "$dir"/rank_*.pid 2>/dev/null | wc -l) -eq 2 ]] && break
  sleep 0.1
done
[[ $(ls "$dir"/rank_*.pid 2>/dev/null | wc -l) -eq 2 ]] || fail "the 2 ranks did not start"
for r in 0 1; do pids+=("$(cat "$dir/rank_$r.pid")"); done
sleep 1  # generating now
start=$(date +%s.%N)
if [[ $mode == kill ]]; then kill -9 "${pids[1]}"; else kill -STOP "${pids[1]}"; fi
wait "$runner"
rc=$?
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
echo "mpirun exited with status $rc, ${elapsed} s after the $mode of rank 1"
[[ $rc -ne 0 ]] || fail "the job exited 0 after losing a rank"
[[ $rc -ne 124 ]] || fail "the job hung until the test's timeout"
(( $(echo "$elapsed < 30" | bc) )) || fail "the job took ${elapsed} s (limit 30 s)"
sleep 1
for p in "${pids[@]}"; do alive "$p" && fail "rank pid $p is still running"; done
if [[ $mode == stall ]]; then
  grep -q "rank 0: step [0-9]* exceeded its deadline of 2 s" "$log" || fail "no watchdog message naming rank 0 and its step"
fi
if [[ $mode == stall-adaptive ]]; then
  grep -o "rank 0: step [0-9]* exceeded its deadline of [0-9.]* s" "$log" || fail "no watchdog message naming rank 0 and its step"
  grep -q "deadline of 300 s" "$log" && fail "the fixed 300 s timeout, not the adaptive deadline, ended the job"
fi
echo "PASS"
