#!/usr/bin/env bash
# Fails if any C++ or CUDA source of the project differs from what .clang-format makes of it.
set -euo pipefail
cd "$1"
mapfile -t files < <(find src include tests examples -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' | sort)
clang-format --dry-run --Werror "${files[@]}"
echo "${#files[@]} files formatted as .clang-format says"
