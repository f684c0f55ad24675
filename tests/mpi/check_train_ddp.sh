#!/bin/sh
# train_ddp on two ranks for 40 steps: both ranks must print the same final losses, and the same as
# one process training on the same global batches (up to float32 rounding of the sums' order).
#   check_train_ddp.sh RUN_MPI_SH TRAIN_DDP
one=$("$2" --steps 40) || exit 1
two=$("$1" 2 "$2" --steps 40)
status=$?
echo "$one"
echo "$two"
[ "$status" = 77 ] && exit 77
[ "$status" = 0 ] || { echo "FAIL: mpirun exited $status"; exit 1; }
losses=$(echo "$two" | sed -n 's/^rank [01] of 2: final batch loss \([0-9.]*\), held-out loss \([0-9.]*\)$/\1 \2/p' | sort -u)
[ "$(echo "$losses" | wc -l)" = 1 ] && [ -n "$losses" ] || { echo "FAIL: the ranks disagree: $losses"; exit 1; }
single=$(echo "$one" | sed -n 's/^rank 0 of 1: final batch loss \([0-9.]*\), held-out loss \([0-9.]*\)$/\1 \2/p')
[ "$losses" = "$single" ] || { echo "FAIL: two ranks ended at $losses, one process at $single"; exit 1; }
echo "PASS: both ranks and one process end at: $losses"
