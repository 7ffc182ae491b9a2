#!/usr/bin/env bash
# Starts a real single-node Slurm (munged + slurmctld + slurmd) on this machine, for tests and
# trying things out. Everything lives under STATE_DIR (config, keys, spool, logs, pid files);
# nothing in /etc is touched. Needs root (SlurmUser=root) and the Debian packages slurm-wlm and
# munge (scripts/install-deps.sh).
#   cluster/slurm/start-local-slurm.sh STATE_DIR       then: source STATE_DIR/env.sh; sinfo
#   cluster/slurm/stop-local-slurm.sh STATE_DIR
# Ports: WEFT_SLURM_PORT (slurmctld, default 6817) and WEFT_SLURM_PORT + 1 (slurmd).
# Exits non-zero, with the daemons' log tails, when a daemon dies or the node is not idle within
# 30 s.
set -euo pipefail

state=${1:?usage: start-local-slurm.sh STATE_DIR}
mkdir -p "$state"
state=$(cd "$state" && pwd)
port=${WEFT_SLURM_PORT:-6817}
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))

for tool in munged munge slurmctld slurmd sinfo; do
  command -v "$tool" >/dev/null || { echo "start-local-slurm: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
done
mkdir -p "$state"/{munge,spool/ctld,spool/d,log,run}
chmod 700 "$state/munge"

# munge: a private key and socket, so this instance never meets a system munged.
if [ ! -f "$state/munge/munge.key" ]; then
  dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$state/munge/munge.key"
fi
munged --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
  --pid-file="$state/run/munged.pid" --log-file="$state/log/munged.log" \
  --seed-file="$state/munge/munge.seed"
munge -S "$state/munge/munge.socket" -n | unmunge -S "$state/munge/munge.socket" >/dev/null

cat > "$state/slurm.conf" <<CONF
ClusterName=weft-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
# cred_expire also sets how long a requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$state/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$state/spool/d
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$state/run/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
JobRequeue=1
KillWait=10
MinJobAge=600
SchedulerType=sched/backfill
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF

cat > "$state/env.sh" <<ENV
export SLURM_CONF=$state/slurm.conf
ENV
export SLURM_CONF="$state/slurm.conf"

slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"

# Wait on a wall-clock deadline, not a count of polls: sinfo blocks for its message timeout when
# slurmctld is not answering, so every poll is bounded by `timeout`, and a daemon that died (a
# port already in use is fatal to slurmctld) ends the wait at once with its log.
fail() {
  echo "start-local-slurm: $1" >&2
  tail -n 20 "$state/log/slurmctld.log" "$state/log/slurmd.log" >&2 || true
  exit 1
}
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
  for daemon in slurmctld slurmd; do
    pidfile="$state/run/$daemon.pid"
    if [ -s "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      fail "$daemon exited during start-up (ports $port and $((port + 1)) must be free)"
    fi
  done
  node_state=$(timeout 5 sinfo -h -o %T 2>/dev/null | head -1 || true)
  if [ "$node_state" = idle ]; then
    echo "start-local-slurm: node $host idle (SLURM_CONF=$SLURM_CONF)"
    exit 0
  fi
  sleep 0.5
done
sinfo >&2 || true
fail "the node did not become idle within 30 s"
