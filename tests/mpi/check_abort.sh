#!/bin/sh
# A rank that throws must end the job within the time limit, with a non-zero status and the rank and
# the error in the output.
#   check_abort.sh RUN_MPI_SH THROWING_RANK_PROGRAM
out=$(XGRAD_MPI_TIMEOUT=60 "$1" 2 "$2" 2>&1)
status=$?
echo "$out"
[ "$status" = 77 ] && exit 77
[ "$status" != 0 ] || { echo "FAIL: the job exited 0"; exit 1; }
[ "$status" != 124 ] || { echo "FAIL: the job hung (killed by timeout)"; exit 1; }
expected="xgrad::distributed: rank 1 of 2: uncaught exception: the data file of rank 1 is missing (thrown on purpose); aborting the job (MPI_Abort)"
echo "$out" | grep -qF "$expected" || { echo "FAIL: no line: $expected"; exit 1; }
echo "PASS: the job ended with status $status and said why"
