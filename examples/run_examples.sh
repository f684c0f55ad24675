#!/usr/bin/env bash
# Runs every example program given on the command line, each under a banner; fails if any fails.
set -euo pipefail
for exe in "$@"; do
    echo "===== $(basename "$exe") ====="
    "$exe"
    echo
done
echo "ran $# example(s)"
