#!/usr/bin/env bash
# Gives each rank of a job its own GPU, then runs the command:
#   mpirun ... cluster/bind-gpu.sh weft serve ...     (or srun ..., or in a Kubernetes pod)
# The rank's index on its machine comes from the launcher: OMPI_COMM_WORLD_LOCAL_RANK (OpenMPI's
# mpirun, also under the MPI Operator), SLURM_LOCALID (srun), LOCAL_RANK (others). With
# CUDA_VISIBLE_DEVICES already set to a list (a container runtime or Slurm's --gpus-per-task
# chose the machine's GPUs), the rank takes the entry of that list at its index; otherwise GPU
# number <index>. A rank whose index has no GPU is an error, not a silent share.
set -eu
if [ $# -eq 0 ]; then
  echo "bind-gpu: usage: bind-gpu.sh COMMAND [ARGS...]" >&2
  exit 2
fi
index=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-${LOCAL_RANK:-}}}
if [ -z "$index" ]; then
  echo "bind-gpu: no local rank (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID or LOCAL_RANK); start it under mpirun or srun" >&2
  exit 2
fi
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=, read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
  if [ "$index" -ge "${#visible[@]}" ]; then
    echo "bind-gpu: local rank $index but only ${#visible[@]} GPU(s) visible (CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES)" >&2
    exit 2
  fi
  export CUDA_VISIBLE_DEVICES=${visible[$index]}
else
  export CUDA_VISIBLE_DEVICES=$index
fi
exec "$@"
