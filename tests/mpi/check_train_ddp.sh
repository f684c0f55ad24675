#!/bin/sh
# train_ddp on two ranks for 10 steps: both ranks must print the same final losses, and within 0.002
# of one process training on the same global batches. Not closer: in float32 the two runs sum in
# different orders (two 64-sample means against one 128-sample mean; OpenBLAS splits products by
# thread count, and each rank runs one thread), and Adam amplifies the last bits (seen: 1e-4 apart
# after 10 steps, 0.01 after 40). tests/mpi/test_mpi.cpp checks the equality itself, in float64.
#   check_train_ddp.sh RUN_MPI_SH TRAIN_DDP
one=$("$2" --steps 10) || exit 1
two=$("$1" 2 "$2" --steps 10)
status=$?
echo "$one"
echo "$two"
[ "$status" = 77 ] && exit 77
[ "$status" = 0 ] || { echo "FAIL: mpirun exited $status"; exit 1; }
losses=$(echo "$two" | sed -n 's/^rank [01] of 2: final batch loss \([0-9.]*\), held-out loss \([0-9.]*\)$/\1 \2/p' | sort -u)
[ "$(echo "$losses" | wc -l)" = 1 ] && [ -n "$losses" ] || { echo "FAIL: the ranks disagree: $losses"; exit 1; }
single=$(echo "$one" | sed -n 's/^rank 0 of 1: final batch loss \([0-9.]*\), held-out loss \([0-9.]*\)$/\1 \2/p')
[ -n "$single" ] || { echo "FAIL: no final line from one process"; exit 1; }
echo "$losses $single" | awk '{ d1 = $1 - $3; d2 = $2 - $4; if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2;
    exit !(d1 <= 0.002 && d2 <= 0.002) }' || { echo "FAIL: two ranks ended at $losses, one process at $single"; exit 1; }
echo "PASS: both ranks end at $losses; one process at $single"
