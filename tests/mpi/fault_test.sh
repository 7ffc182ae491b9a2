#!/usr/bin/env bash
# Failure handling of an MPI job, with bounded waits throughout.
#   fault_test.sh kill MPIRUN PROG      SIGKILL one of 3 ranks while the others wait in a barrier:
#                                       mpirun must exit non-zero within 30 s, all ranks gone.
#   fault_test.sh watchdog MPIRUN PROG  a rank sleeps past its step deadline: the StepWatchdog of
#                                       another rank must abort the job naming its rank and step.
set -u
mode=$1
mpirun=$2
prog=$3
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
  cat "$log"
  exit 1
}

# Alive = exists and is not a zombie.
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z* ]]
}

now() { date +%s.%N; }

timeout -k 10 60 "$mpirun" --allow-run-as-root --oversubscribe -np 3 "$prog" "$mode" "$dir" \
  >"$log" 2>&1 &
runner=$!

for _ in $(seq 300); do
  [[ $(ls "$dir"/rank_*.pid 2>/dev/null | wc -l) -eq 3 ]] && break
  sleep 0.1
done
[[ $(ls "$dir"/rank_*.pid 2>/dev/null | wc -l) -eq 3 ]] || fail "the 3 ranks did not start"
for r in 0 1 2; do pids+=("$(cat "$dir/rank_$r.pid")"); done

if [[ $mode == kill ]]; then
  sleep 1  # let ranks 0 and 2 reach the barrier
  t0=$(now)
  kill -9 "${pids[1]}"
  echo "killed rank 1 (pid ${pids[1]}) with SIGKILL"
else
  t0=$(now)
fi

wait "$runner"
rc=$?
elapsed=$(echo "$(now) - $t0" | bc)
echo "mpirun exited with status $rc, ${elapsed} s after the kill / start"
[[ $rc -ne 124 ]] || fail "mpirun hung and was stopped by timeout after 60 s"
[[ $rc -ne 0 ]] || fail "mpirun exited 0"
(( $(echo "$elapsed < 30" | bc) )) || fail "mpirun took ${elapsed} s (more than 30 s)"
for _ in $(seq 50); do
  any=0
  for p in "${pids[@]}"; do alive "$p" && any=1; done
  [[ $any -eq 0 ]] && break
  sleep 0.1
done
for p in "${pids[@]}"; do alive "$p" && fail "rank process $p is still running"; done

if [[ $mode == watchdog ]]; then
  grep -Eq "rank [02]: step 7 exceeded its deadline of 1 s" "$log" ||
    fail "no watchdog message naming rank 0 or 2 and step 7"
fi
echo "----- mpirun output -----"
cat "$log"
echo PASS
