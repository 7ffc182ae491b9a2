#!/usr/bin/env bash
# A launch agent for OpenMPI's rsh launcher (`mpirun --mca plm_rsh_agent THIS`) that reaches the
# test "hosts" of scripts/multihost-test.sh -- network namespaces on this machine -- instead of
# ssh. mpirun calls it as ssh would be called:
#   netns-rsh-agent.sh HOST COMMAND...
# where COMMAND is a shell command line (environment set-up, then orted). The agent looks HOST up
# in the file named by $WEFT_NETNS_HOSTS (lines "HOST NAMESPACE"), enters that namespace, gives the
# process its own UTS namespace with HOST as its host name (so MPI_Get_processor_name, OpenMPI's
# messages and weft's say which "machine" a rank runs on) and runs COMMAND with sh -c, as sshd
# would run it with the login shell.
set -u
if [ $# -lt 2 ]; then
  echo "netns-rsh-agent: usage: netns-rsh-agent.sh HOST COMMAND..." >&2
  exit 2
fi
host=$1
shift
hosts=${WEFT_NETNS_HOSTS:-}
if [ -z "$hosts" ] || [ ! -r "$hosts" ]; then
  echo "netns-rsh-agent: WEFT_NETNS_HOSTS must name a readable file of 'HOST NAMESPACE' lines" >&2
  exit 2
fi
ns=$(awk -v h="$host" '$1 == h { print $2; exit }' "$hosts")
if [ -z "$ns" ]; then
  echo "netns-rsh-agent: host '$host' is not in $hosts" >&2
  exit 2
fi
# "$*" joins the words with spaces, which is what ssh sends to the remote shell.
exec ip netns exec "$ns" unshare --uts sh -c "hostname '$host' && $*"
