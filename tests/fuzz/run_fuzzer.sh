#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time: run_fuzzer.sh FUZZER SEED_DIR DICT SECONDS.
# New inputs go to a scratch corpus beside the seeds' copy (the committed seeds stay unchanged);
# a crash, leak, timeout or out-of-memory input is written to ./crash-* and makes the exit non-zero.
set -euo pipefail
fuzzer=$1 seeds=$2 dict=$3 seconds=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/xgrad-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$fuzzer" "$work" "$seeds" -dict="$dict" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix=./
