#!/usr/bin/env bash
# Regenerates the measured parts of docs/performance.md and its plot, docs/performance.png: the whole
# benchmark plus the norm sweep at 1 and at 2 threads (run_bench.sh), the tables in markdown
# (join_results.awk), the plot (plot_performance.gp). Only the text between the page's
# `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` markers is replaced; the prose around it stays.
#
# Usage: bench_docs.sh [--libtorch EXE] BENCH_CORE_EXE BENCH_CORE_PY DOCS_DIR
#        (`meson compile -C build bench-docs`; --libtorch as for run_bench.sh)
# Environment: XGRAD_BENCH_PYTHON, XGRAD_BENCH_MALLOC and XGRAD_BENCH_BLAS, as for run_bench.sh (which
# reads them itself; the page names the heap and the OpenBLAS kernels each side ran). XGRAD_BENCH_RAW=DIR
# keeps the raw outputs in DIR/t1 and DIR/t2; when they are there already, the benchmark is not run
# again and only the page and the plot are rebuilt from them. Takes about 6 minutes on 2 idle cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
libtorch=()
if [ "${1:-}" = --libtorch ]; then
    libtorch=(--libtorch "$2")
    shift 2
fi
exe=$1 py=$2 docs=$3
page=$docs/performance.md
python=${XGRAD_BENCH_PYTHON:-/usr/bin/python3}
[ -f "$page" ] || { echo "bench_docs.sh: $page not found" >&2; exit 1; }
command -v gnuplot > /dev/null || { echo "bench_docs.sh: gnuplot is needed (apt-get install gnuplot-nox)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=${XGRAD_BENCH_RAW:-$work}

if [ -s "$raw/t1/xgrad.txt" ] && [ -s "$raw/t2/xgrad.txt" ]; then
    echo "bench_docs.sh: reusing the outputs in $raw"
    load_start=$(cat "$raw/load_start" 2> /dev/null || echo unknown)
    load_end=$(cat "$raw/load_end" 2> /dev/null || echo unknown)
else
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    if awk -v n="$(nproc)" '{ exit !($1 > n / 2) }' /proc/loadavg; then
        echo "bench_docs.sh: warning: load average $load_start on $(nproc) cores; other jobs will slow" \
             "the 2-thread runs most (a parallel region waits for its slowest thread)" >&2
    fi
    for t in 1 2; do
        echo "==== $t thread(s)"
        XGRAD_BENCH_THREADS=$t "$here/run_bench.sh" --out "$raw/t$t" "${libtorch[@]}" "$exe" "$py" \
            limits tiny norm linear mm ew layers mlp mem sweep
    done
    load_end=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "$load_start" > "$raw/load_start"
    echo "$load_end" > "$raw/load_end"
    date -u '+%Y-%m-%d %H:%M UTC' > "$raw/date"
    git -C "$docs" describe --always --dirty > "$raw/commit" 2> /dev/null || echo unknown > "$raw/commit"
fi

# ---- the machine, the software, the date
field() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'; }
model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
isa=$(sed -n 's/^fma: //p' "$raw/t1/xgrad.txt")
limit() { awk -v k="$2" '$1 == "RESULT" && $2 == k { printf "%.0f", $3 }' "$raw/t$1/xgrad.txt"; }
torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "not installed")
compiler=$(readelf -p .comment "$exe" 2>/dev/null | sed -n 's/.*GCC: \(.*\)/GCC \1/p' | head -1)
build=$(sed -n 's/^xgrad bench: .*code built for \(.*\)$/\1/p' "$raw/t1/xgrad.txt" | head -1)
commit=$(cat "$raw/commit")
# The kernels OpenBLAS ran on one side (its `blas:` line), and OpenBLAS's version from xgrad's.
blas_core() { awk '$1 == "blas:" { print $3; found = 1; exit } END { if (!found) print "?" }' "$1"; }
blas_version() { sed -n 's/^blas: .*; OpenBLAS \([^ ]*\) .*/OpenBLAS \1/p' "$raw/t1/xgrad.txt" | head -1; }
os=$(. /etc/os-release && echo "$PRETTY_NAME")
{
    echo "- **Measured** $(cat "$raw/date"), xgrad at commit \`$commit\`."
    echo "- **CPU:** $model (family $(field 'cpu family'), model $(field 'model')), $(nproc) cores," \
         "$(free -g | awk '/^Mem:/ { print $2 }') GiB of memory; $os."
    echo "- **Limits measured by the benchmark** (medians): FMA peak $(limit 1 fma_peak_1t) GFLOP/s on one" \
         "core ($isa); DRAM triad $(limit 1 dram_triad_1t) GB/s on 1 thread ($(limit 1 dram_triad_nt_1t) with" \
         "non-temporal stores), $(limit 2 dram_triad_2t) GB/s on 2 ($(limit 2 dram_triad_nt_2t))."
    echo "- **Software:** xgrad built by $compiler for $build; PyTorch $torch_version ($python)."
    echo "- **Heap:** $(sed -n 's/^MALLOC //p' "$raw/t1/xgrad.txt") (run_bench.sh's XGRAD_BENCH_MALLOC; see below)."
    echo "- **BLAS:** OpenBLAS's $(blas_core "$raw/t1/xgrad.txt") kernels for xgrad, $(blas_core "$raw/t1/torch.txt")" \
         "for PyTorch ($(blas_version)); run_bench.sh's XGRAD_BENCH_BLAS=$(sed -n 's/^BLASENV //p' "$raw/t1/xgrad.txt")" \
         "(see below)."
    echo "- **Load:** the cores are shared with other jobs (load average $load_start at the start," \
         "$load_end at the end), so figures move by 10 to 30 % between runs; the medians are quoted."
} > "$work/machine.md"

awk -v fmt=md -v x="$raw/t1/xgrad.txt" -v t="$raw/t1/torch.txt" -v x2="$raw/t2/xgrad.txt" \
    -v t2="$raw/t2/torch.txt" -f "$here/join_results.awk" > "$work/tables.md"

# ---- the plot: one data file per series: size, then seconds for xgrad 1t, PyTorch 1t, xgrad 2t,
# PyTorch 2t, and the time the machine's 1-thread limit allows ("?" where missing).
for series in layernorm_fwdbwd rmsnorm_fwdbwd matmul; do
    awk -v s="$series" -v f1="$raw/t1/xgrad.txt" -v f2="$raw/t1/torch.txt" -v f3="$raw/t2/xgrad.txt" \
        -v f4="$raw/t2/torch.txt" '
        { file = FILENAME == f1 ? 1 : FILENAME == f2 ? 2 : FILENAME == f3 ? 3 : 4 }
        $1 == "RESULT" && file == 1 && $2 == "limit_gbs" { gbs = $3 }
        $1 == "RESULT" && file == 1 && $2 == "limit_gflops" { gflops = $3 }
        $1 == "SWEEP" && $2 == s { if (!($3 in seen)) { seen[$3] = 1; size[++n] = $3 }; v[$3, file] = $4 }
        END {
            for (i = 1; i <= n; i++) {
                z = size[i]
                if (s == "matmul") lim = 2 * z * z * z / (gflops * 1e9)
                else lim = (5 * z * 768 + (s == "rmsnorm_fwdbwd" ? 3 : 5) * 768) * 4 / (gbs * 1e9)
                line = z
                for (f = 1; f <= 4; f++) line = line " " (((z SUBSEP f) in v) ? v[z, f] : "?")
                print line, lim
            }
        }' "$raw/t1/xgrad.txt" "$raw/t1/torch.txt" "$raw/t2/xgrad.txt" "$raw/t2/torch.txt" \
        > "$work/$series.dat"
done
gnuplot -e "dir='$work'; out='$docs/performance.png'; subtitle='$model, $(nproc) cores, $(cut -c1-10 "$raw/date")'" \
    "$here/plot_performance.gp"

# ---- the page: replace what lies between each pair of markers
awk -v machine="$work/machine.md" -v tables="$work/tables.md" '
    function emit(file,    line) { while ((getline line < file) > 0) print line; close(file) }
    /^<!-- \/bench:/ { skip = 0 }
    !skip { print }
    /^<!-- bench:machine -->/ { emit(machine); skip = 1 }
    /^<!-- bench:tables -->/ { emit(tables); skip = 1 }
' "$page" > "$work/page.md"
cp "$work/page.md" "$page"
echo "bench_docs.sh: wrote $page and $docs/performance.png"
