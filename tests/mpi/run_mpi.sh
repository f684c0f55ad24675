#!/bin/sh
# Runs a program under mpirun on this machine only (shared memory and TCP over loopback), with a time
# limit; exits 77 (meson's SKIP) where mpirun is missing.
#   run_mpi.sh NP PROGRAM [ARGS...]
np=$1
shift
command -v mpirun > /dev/null 2>&1 || { echo "mpirun not found: skipped"; exit 77; }
# Root in containers and CI: Open MPI refuses it unless told twice.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec timeout "${XGRAD_MPI_TIMEOUT:-240}" mpirun -np "$np" --oversubscribe --bind-to none \
    --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "$@"
