#!/usr/bin/env bash
# Runs train_layernorm (the full run: three variants, 500 steps each) on the GPU and on the CPU, and
# compares their loss curves (train_layernorm.csv).
#
# The check is made in float64 (--dtype float64): each variant's final batch loss must be within an
# absolute 1e-4 of the CPU's. In float32 the run is chaotic (Adam at lr 1e-3 has loss spikes), so a
# rounding difference of 1e-7 grows to 1e-2 within a few hundred steps: the CPU alone, on one thread
# and on two, ends 0.04 apart. The float32 difference is reported, not checked. The largest
# difference at any step is reported too. Exits 77 (a skip for meson) when no GPU is available.
#   compare_devices.sh TRAIN_LAYERNORM WORKDIR
set -uo pipefail
exe=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"

# compare A B TOLERANCE: each variant's final loss in A/train_layernorm.csv against B's; TOLERANCE
# "-" reports without checking.
compare() {
    paste -d, "$1/train_layernorm.csv" "$2/train_layernorm.csv" | awk -F, -v tol="$3" '
        NR == 1 { n = NF / 2; for (c = 2; c <= n; ++c) name[c] = $c; next }
        { for (c = 2; c <= n; ++c) { d = $c - $(c + n); if (d < 0) d = -d; if (d > worst[c]) worst[c] = d; last[c] = d } }
        END { for (c = 2; c <= n; ++c) {
                  printf "  %-10s final loss differs by %.3g (%s); largest difference at any step %.3g\n", name[c],
                         last[c], tol == "-" ? "not checked" : "tolerance " tol, worst[c]
                  if (tol != "-" && last[c] > tol + 0) bad++ }
              exit bad > 0 }'
}

for dtype in float64 float32; do
    if ! "$exe" --device cuda --dtype $dtype --out "$dir/cuda_$dtype" > "$dir/cuda_$dtype.log" 2>&1; then
        if grep -q "no CUDA GPU is available" "$dir/cuda_$dtype.log"; then
            echo "no CUDA GPU: skipped"
            exit 77
        fi
        cat "$dir/cuda_$dtype.log"
        echo "train_layernorm --device cuda --dtype $dtype failed"
        exit 1
    fi
    "$exe" --device cpu --dtype $dtype --out "$dir/cpu_$dtype" > "$dir/cpu_$dtype.log" 2>&1 ||
        { cat "$dir/cpu_$dtype.log"; echo "train_layernorm --dtype $dtype failed"; exit 1; }
done
status=0
for dtype in float64 float32; do
    echo "$dtype, on the GPU:"
    grep -A4 "^variant" "$dir/cuda_$dtype.log"
    echo "$dtype, the GPU against the CPU:"
    if [ $dtype = float64 ]; then compare "$dir/cuda_$dtype" "$dir/cpu_$dtype" 1e-4 || status=1
    else compare "$dir/cuda_$dtype" "$dir/cpu_$dtype" -; fi
done
exit $status
