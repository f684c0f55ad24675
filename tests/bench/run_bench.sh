#!/usr/bin/env bash
# Runs xgrad's bench_core, then its PyTorch twin with as many threads, and prints the comparison.
#
# Usage: run_bench.sh BENCH_CORE_EXE BENCH_CORE_PY [tiny] [ew] [mm] [mem]
# Environment: XGRAD_BENCH_PYTHON (default /usr/bin/python3, the interpreter that has torch);
#              XGRAD_BENCH_THREADS: threads for both sides (default 1). xgrad gets it as OMP_NUM_THREADS
#              (only its matmul is threaded), PyTorch as torch.set_num_threads. One thread is the
#              default because on a small shared machine a busy core stalls every OpenMP barrier for a
#              whole scheduler slice (seen: PyTorch's elementwise ops stuck at 8 ms with 2 threads).
set -euo pipefail

exe=$1 py=$2
shift 2
python=${XGRAD_BENCH_PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=${XGRAD_BENCH_THREADS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== xgrad ($exe)"
"$exe" "$@" | tee "$out/xgrad.txt"
threads=$(awk '$1 == "RESULT" && $2 == "threads" { print $3 }' "$out/xgrad.txt")

echo
if "$python" -c 'import torch' 2>/dev/null; then
    echo "== PyTorch ($python, torch.set_num_threads($threads))"
    "$python" "$py" --threads "$threads" "$@" | tee "$out/torch.txt"
else
    echo "== PyTorch: torch is not importable with $python; xgrad's figures only"
    : > "$out/torch.txt"
fi

# Joins the RESULT lines by name. "xgrad ×" says how many times better xgrad is: PyTorch's time
# over xgrad's for times, xgrad's rate over PyTorch's for rates; memory and losses are shown as is.
echo
awk '
    FNR == 1 { file++ }
    $1 != "RESULT" { next }
    file == 1 { order[++n] = $2; xm[$2] = $3; xlo[$2] = $4; xhi[$2] = $5; unit[$2] = $6 }
    file == 2 { tm[$2] = $3; tlo[$2] = $4; thi[$2] = $5 }
    END {
        printf "%-15s %-8s %24s %24s %9s\n", "benchmark", "unit", "xgrad median [p10 p90]", "PyTorch median [p10 p90]", "xgrad ×"
        for (i = 1; i <= n; i++) {
            k = order[i]; u = unit[k]
            x = sprintf("%.4g [%.4g %.4g]", xm[k], xlo[k], xhi[k])
            if (xlo[k] == xm[k] && xhi[k] == xm[k]) x = sprintf("%.5g", xm[k])
            t = "-"; r = "-"
            if (k in tm) {
                t = sprintf("%.4g [%.4g %.4g]", tm[k], tlo[k], thi[k])
                if (tlo[k] == tm[k] && thi[k] == tm[k]) t = sprintf("%.5g", tm[k])
                if (u == "us" && xm[k] > 0) r = sprintf("%.2f", tm[k] / xm[k])
                else if ((u == "GB/s" || u == "GFLOP/s") && tm[k] > 0) r = sprintf("%.2f", xm[k] / tm[k])
            }
            printf "%-15s %-8s %24s %24s %9s\n", k, u, x, t, r
        }
    }' "$out/xgrad.txt" "$out/torch.txt"
