# Sourced by scripts/test.sh: the environment every MPI job of a test run shares.
#
# - mpirun as root (containers, CI) needs Open MPI's explicit consent.
# - One session-directory top for the run that no job removes. Open MPI 4 (orte) puts every job's
#   session directory, mpirun's and an MPI singleton's alike, under one top directory per host
#   and user (/tmp/ompi.<host>.<uid>), creates the top when it is missing and removes it when it
#   is empty as the job ends. With ctest -j, one job's removal can fall between another's
#   creation of the top and of its own pid.<n> directory under it; that job then dies in
#   orte_init ("orte_session_dir failed ... No such file or directory"; seen once in CI, in
#   mpi_load_errors). The top named here holds a non-empty file whose name starts with
#   "output-": orte's cleanup keeps such files, so the top is never empty and never removed.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
weft_mpi_session_top="${TMPDIR:-/tmp}/weft-mpi-sessions.$(id -u)"
mkdir -p -m 700 "$weft_mpi_session_top"
echo "kept so that concurrent MPI jobs never see this directory removed" \
  > "$weft_mpi_session_top/output-weft-keep"
export OMPI_MCA_orte_top_session_dir="$weft_mpi_session_top"
