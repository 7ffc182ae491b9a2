#!/usr/bin/env bash
# Stops what start-local-slurm.sh STATE_DIR started (by its pid files), cancelling its jobs first.
set -uo pipefail
state=${1:?usage: stop-local-slurm.sh STATE_DIR}
if [ -f "$state/slurm.conf" ]; then
  SLURM_CONF="$state/slurm.conf" scancel --quiet --user "$(id -un)" 2>/dev/null || true
fi
for daemon in slurmd slurmctld munged; do
  pidfile="$state/run/$daemon.pid"
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
done
echo "stop-local-slurm: stopped"
