#!/usr/bin/env bash
# Runs train_layernorm (the full run: three variants, 500 steps each) on the GPU and on the CPU, and
# compares their loss curves (train_layernorm.csv): each variant's final batch loss must be within an
# absolute 1e-4 of the CPU's; the largest difference at any step is reported. Exits 77 (a skip for
# meson) when no GPU is available.
#   compare_devices.sh TRAIN_LAYERNORM WORKDIR
set -uo pipefail
exe=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
if ! "$exe" --device cuda --out "$dir/cuda" > "$dir/cuda.log" 2>&1; then
    if grep -q "no CUDA GPU is available" "$dir/cuda.log"; then
        echo "no CUDA GPU: skipped"
        exit 77
    fi
    cat "$dir/cuda.log"
    echo "train_layernorm --device cuda failed"
    exit 1
fi
"$exe" --device cpu --out "$dir/cpu" > "$dir/cpu.log" 2>&1 || { cat "$dir/cpu.log"; echo "train_layernorm failed"; exit 1; }
grep -A4 "^variant" "$dir/cuda.log"
paste -d, "$dir/cuda/train_layernorm.csv" "$dir/cpu/train_layernorm.csv" | awk -F, '
    NR == 1 { n = NF / 2; for (c = 2; c <= n; ++c) name[c] = $c; next }
    { for (c = 2; c <= n; ++c) { d = $c - $(c + n); if (d < 0) d = -d; if (d > worst[c]) worst[c] = d; last[c] = d } }
    END { for (c = 2; c <= n; ++c) {
              printf "%-10s final loss differs by %.3g (tolerance 1e-4); largest difference at any step %.3g\n",
                     name[c], last[c], worst[c]
              if (last[c] > 1e-4) bad++ }
          exit bad > 0 }'
