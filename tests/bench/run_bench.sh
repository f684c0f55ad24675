#!/usr/bin/env bash
# Runs xgrad's bench_core, then its PyTorch twin with as many threads, and prints the joined table.
#
# Usage: run_bench.sh [--out DIR] [--libtorch EXE] BENCH_CORE_EXE BENCH_CORE_PY [GROUP...]
#   GROUP: limits tiny norm linear mm ew layers mlp mem sweep (default: all but sweep; the machine's limits
#          are always measured). Without GROUP arguments, XGRAD_BENCH_ONLY (e.g. "norm mm") picks them,
#          so that `XGRAD_BENCH_ONLY=norm meson compile -C build bench` runs a subset.
#   --out DIR: keep both raw outputs there (xgrad.txt, torch.txt), for bench_docs.sh.
#   --libtorch EXE: bench_libtorch (built where libtorch-dev is installed), run after the Python twin
#          in the tiny and mm groups: the tiny step and the large products in xgrad and in PyTorch's
#          C++ API, taking turns in one process (rows tiny_step_libtorch, matmul_*_libtorch,
#          bmm_32x256_libtorch).
# Environment: XGRAD_BENCH_PYTHON (default /usr/bin/python3, the interpreter that has torch);
#              XGRAD_BENCH_THREADS: threads for both sides (default 1). xgrad gets it as OMP_NUM_THREADS
#              (its parallel loops are OpenMP's), PyTorch as torch.set_num_threads, and both as
#              OPENBLAS_NUM_THREADS: PyTorch's BLAS here is OpenBLAS, whose pool otherwise takes every
#              core whatever torch.set_num_threads says (seen: "1-thread" GEMM on 2 cores). One thread is the
#              default because on a small shared machine a busy core stalls every OpenMP barrier for a
#              whole scheduler slice (seen: PyTorch's elementwise ops stuck at 8 ms with 2 threads).
#              XGRAD_BENCH_MALLOC: "hugepages" (the default) runs both sides with
#              GLIBC_TUNABLES=glibc.malloc.hugetlb=1, so that glibc asks for transparent huge pages as a
#              Debian machine with THP "always" gives them; "default" leaves the environment alone. On a
#              VM where every 4 KiB page fault costs µs (see fresh_pages_1t), a library that returns its
#              large blocks to the system (PyTorch 1.13 on CPU) otherwise spends most of its time
#              faulting memory back in, and the comparison measures the VM more than the library.
#              XGRAD_BENCH_BLAS: "auto" (the default) runs both sides on OpenBLAS's AVX-512 kernels when
#              the CPU has AVX-512 (avx512f in /proc/cpuinfo): it exports OPENBLAS_CORETYPE=SkylakeX,
#              unless OPENBLAS_CORETYPE names an AVX-512 core already (SkylakeX, Cooperlake,
#              SapphireRapids); a core without AVX-512 set before is replaced, with a note on stderr.
#              "default" leaves the environment alone. OpenBLAS reads the variable when it loads, and
#              PyTorch's matmuls run on the same OpenBLAS, so both sides run the same kernels and xgrad's
#              products stay bit-identical to PyTorch's (cores differ in their summation order:
#              SkylakeX's and Cooperlake's 2048³ products differ in low bits).
#              Measured on the 2-core AMD Zen 4 VM, 2048³ sgemm on one thread: OpenBLAS 0.3.21's Haswell
#              (AVX2) kernels ~100 GFLOP/s, 45 % of the FMA peak; its SkylakeX (AVX-512) kernels ~190
#              (85 %). That VM's shell sets OPENBLAS_CORETYPE=Haswell; unset, Debian 12's OpenBLAS picks
#              its Cooperlake (AVX-512) kernels there, as fast. "auto" names SkylakeX so that every
#              AVX-512 machine runs (and the page names) one core.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
keep= libtorch=
while [ $# -gt 0 ]; do
    case $1 in
        --out) keep=$2; shift 2 ;;
        --libtorch) libtorch=$2; shift 2 ;;
        *) break ;;
    esac
done
exe=$1 py=$2
shift 2
if [ $# -eq 0 ] && [ -n "${XGRAD_BENCH_ONLY:-}" ]; then
    read -r -a only <<< "$XGRAD_BENCH_ONLY"
    set -- "${only[@]}"
fi
python=${XGRAD_BENCH_PYTHON:-/usr/bin/python3}
export XGRAD_BENCH_THREADS=${XGRAD_BENCH_THREADS:-1}
export OMP_NUM_THREADS=$XGRAD_BENCH_THREADS OPENBLAS_NUM_THREADS=$XGRAD_BENCH_THREADS
malloc=${XGRAD_BENCH_MALLOC:-hugepages}
case $malloc in
    hugepages) export GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1 ;;
    default) ;;
    *) echo "run_bench.sh: XGRAD_BENCH_MALLOC is hugepages or default, not $malloc" >&2; exit 2 ;;
esac
blas=${XGRAD_BENCH_BLAS:-auto}
case $blas in
    auto)
        if grep -qw avx512f /proc/cpuinfo 2> /dev/null; then
            case ${OPENBLAS_CORETYPE:-} in
                [Ss]kylake[Xx] | [Cc]ooperlake | [Ss]apphire[Rr]apids) ;;
                *)
                    [ -z "${OPENBLAS_CORETYPE:-}" ] ||
                        echo "run_bench.sh: note: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE (a core without AVX-512) is" \
                             "replaced by SkylakeX on both sides; XGRAD_BENCH_BLAS=default keeps it" >&2
                    export OPENBLAS_CORETYPE=SkylakeX
                    ;;
            esac
        fi
        ;;
    default) ;;
    *) echo "run_bench.sh: XGRAD_BENCH_BLAS is auto or default, not $blas" >&2; exit 2 ;;
esac
blas_note="$blas, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
if [ -n "$keep" ]; then
    out=$keep
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

# Each group runs in a fresh process on each side (no group inherits another's heap or caches); the
# machine's limits first, which the "% limit" column needs. The two sides take turns group by group, so
# that both meet the host in the same state: its bandwidth drifts by up to half over minutes.
groups=(limits)
for g in "${@:-tiny norm linear mm ew layers mlp mem}"; do
    for w in $g; do
        [ "$w" = limits ] || groups+=("$w")
    done
done

: > "$out/xgrad.txt"
: > "$out/torch.txt"
have_torch=false
"$python" -c 'import torch' 2>/dev/null && have_torch=true
echo "== xgrad ($exe) and PyTorch ($python), groups: ${groups[*]}; threads $XGRAD_BENCH_THREADS; malloc: $malloc${GLIBC_TUNABLES:+, GLIBC_TUNABLES=$GLIBC_TUNABLES}; BLAS: $blas_note"
$have_torch || echo "== PyTorch: torch is not importable with $python; xgrad's figures only"
threads=
for g in "${groups[@]}"; do
    echo "== xgrad: $g"
    "$exe" "$g" | tee -a "$out/xgrad.txt"
    [ -n "$threads" ] || threads=$(awk '$1 == "RESULT" && $2 == "threads" { print $3; exit }' "$out/xgrad.txt")
    if $have_torch && [ "$g" != limits ]; then
        echo "== PyTorch: $g (torch.set_num_threads($threads))"
        "$python" "$py" --threads "$threads" "$g" | tee -a "$out/torch.txt"
    fi
    if { [ "$g" = tiny ] || [ "$g" = mm ]; } && [ -n "$libtorch" ]; then
        # xgrad and libtorch in one process, taking turns; its XGRAD lines are xgrad's side of the rows.
        echo "== xgrad and libtorch, taking turns: $g (set_num_threads($threads))"
        "$libtorch" --threads "$threads" "$g" | tee "$out/libtorch_$g.txt"
        sed -n 's/^XGRAD //p' "$out/libtorch_$g.txt" >> "$out/xgrad.txt"
        grep -v '^XGRAD ' "$out/libtorch_$g.txt" >> "$out/torch.txt" || true
    fi
done

echo
echo "MALLOC $malloc ${GLIBC_TUNABLES:-}" >> "$out/xgrad.txt"
echo "BLASENV $blas_note" >> "$out/xgrad.txt"
awk -v x="$out/xgrad.txt" -v t="$out/torch.txt" -f "$here/join_results.awk"
