#!/usr/bin/env bash
# Fails if a per-arch vec_math library defines an external symbol that is not tagged with its arch:
# the linker could then hand that (e.g. AVX-512) copy of an inline function to code that runs on any
# CPU. Arguments: pairs of `<static library> <tag its symbols must contain>`.
set -euo pipefail
status=0
while [ $# -ge 2 ]; do
    lib=$1 tag=$2
    shift 2
    # Defined, non-local symbols (nm's lowercase types t/d/b/r are local); the personality routine's
    # DWARF reference is the compiler's, not code, and so is the type information UBSan's function
    # checks emit (data, identical in every copy).
    bad=$(nm --defined-only --format=posix "$lib" | awk '$2 ~ /^[A-Zuvw]$/ {print $1}' |
        grep -v '^DW\.ref\.__gxx_personality_v0$' | c++filt | grep -v -- "$tag" |
        grep -v '^typeinfo \(name \)\?for ' || true)
    if [ -n "$bad" ]; then
        echo "$lib: symbols without '$tag' (may leak $tag instructions into other code):"
        echo "$bad"
        status=1
    else
        echo "$lib: every external symbol names $tag"
    fi
done
exit $status
