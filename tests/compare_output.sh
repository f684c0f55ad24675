#!/usr/bin/env bash
# Runs a program and compares its whole standard output with an expected file, byte for byte.
set -uo pipefail
exe=$1 expected=$2
actual=$("$exe") || { echo "$exe exited with status $?"; exit 1; }
if [ "$actual" != "$(cat "$expected")" ]; then
    echo "output of $exe differs from $expected:"
    diff <(printf '%s\n' "$actual") "$expected"
    exit 1
fi
echo "output matches $expected"
