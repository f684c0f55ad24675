#!/usr/bin/env bash
# Runs xgrad's GPU bench (bench_cuda), then its PyTorch twin (bench_cuda.py) on the same GPU, and
# prints the joined table (join_results.awk). Without a GPU it says so and stops.
#
# Usage: bench_cuda.sh [--out DIR] BENCH_CUDA_EXE BENCH_CUDA_PY [GROUP...]
#   --out DIR: keep both raw outputs there (xgrad.txt, torch.txt).
#   GROUP: norm linear mlp tiny (default: all); without them, XGRAD_BENCH_ONLY (e.g. "norm mlp")
#          picks them, as run_bench.sh does.
# Environment: XGRAD_BENCH_PYTHON (default python3 on PATH: the interpreter with a CUDA build of torch).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
keep=
if [ "${1:-}" = --out ]; then
    keep=$2
    shift 2
fi
exe=$1 py=$2
shift 2
if [ $# -eq 0 ] && [ -n "${XGRAD_BENCH_ONLY:-}" ]; then
    read -r -a only <<< "$XGRAD_BENCH_ONLY"
    set -- "${only[@]}"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== xgrad ($exe)"
"$exe" "$@" | tee "$out/xgrad.txt"
if ! grep -q '^RESULT' "$out/xgrad.txt"; then
    exit 0  # no GPU: bench_cuda said so
fi
python=${XGRAD_BENCH_PYTHON:-python3}
echo
echo "== PyTorch ($python)"
"$python" "$py" "$@" | tee "$out/torch.txt" || echo "(the PyTorch twin failed: its column stays empty)"
echo
awk -v x="$out/xgrad.txt" -v t="$out/torch.txt" -f "$here/join_results.awk"
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    cp "$out/xgrad.txt" "$out/torch.txt" "$keep/"
fi
