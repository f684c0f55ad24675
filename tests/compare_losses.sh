#!/usr/bin/env bash
# Runs an example with `--steps N --print-losses` and compares its N losses with a PyTorch twin's
# curve (tests/golden/<name>.txt, one loss a line): each must be within an absolute 1e-4.
set -uo pipefail
exe=$1 golden=$2 steps=$(wc -l < "$2")
actual=$("$exe" --steps "$steps" --print-losses) || { echo "$exe exited with status $?"; exit 1; }
paste <(printf '%s\n' "$actual") "$golden" | awk -v n="$steps" '
    { d = $1 - $2; if (d < 0) d = -d; if (d > worst) worst = d
      if ($1 == "" || d > 1e-4) { printf "step %d: xgrad %s, torch %s (difference %.3g)\n", NR, $1, $2, d; bad++ } }
    END { if (NR != n) { printf "%d lines, expected %d\n", NR, n; exit 1 }
          printf "%d losses, largest difference from torch %.3g (tolerance 1e-4 absolute)\n", NR, worst
          exit bad > 0 }'
