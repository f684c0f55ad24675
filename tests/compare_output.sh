#!/usr/bin/env bash
# Runs a program and compares its whole standard output with an expected file, byte for byte.
#
# Except on the lines that EXPECTED's sidecar NAME.noise lists (when there is one): those print
# values that are rounding noise of a matrix product (a normalised row's mean, ~1e-8, or its sign
# as -0.0000), whose last bits come from the kernels OpenBLAS picks for the CPU. OpenBLAS's AVX2 and
# AVX-512 kernels agree on them, but on a CPU that OpenBLAS 0.3.21 does not know by model (seen: an
# Intel Xeon of family 6, model 207, where openblas_get_corename() says "Prescott") it runs another
# set, and PyTorch prints other noise there too. On those lines the numbers may differ; the text
# around them (and how many numbers there are) may not.
set -uo pipefail
exe=$1 expected=$2
noise=${expected%.txt}.noise
actual=$("$exe") || { echo "$exe exited with status $?"; exit 1; }
[ "$actual" == "$(cat "$expected")" ] && { echo "output matches $expected"; exit 0; }

# The lines listed in $noise (line numbers, '#' starts a comment) with each number replaced by N and
# the spaces removed (a tensor's column width follows its widest number); every other line as is.
mask() {
    awk -v lines="$1" 'BEGIN { n = split(lines, l, " "); for (i = 1; i <= n; i++) noisy[l[i]] = 1 }
        NR in noisy { gsub(/-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?/, "N"); gsub(/[ \t]/, "") } { print }'
}
if [ -f "$noise" ]; then
    lines=$(sed 's/#.*//' "$noise" | xargs)
    if [ "$(printf '%s\n' "$actual" | mask "$lines")" == "$(mask "$lines" < "$expected")" ]; then
        echo "output matches $expected (the rounding noise on lines $lines of $noise differs)"
        exit 0
    fi
fi
echo "output of $exe differs from $expected:"
diff <(printf '%s\n' "$actual") "$expected"
exit 1
