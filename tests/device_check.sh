#!/usr/bin/env bash
# The CUDA backend's whole check, in one command, on a machine with an NVIDIA GPU: build with the CUDA
# backend, the CUDA suite (tests/test_cuda.cpp), the training example on the GPU against the CPU,
# compute-sanitizer memcheck over the CUDA suite, and the GPU bench beside PyTorch on the same GPU.
# Every step writes its log to $OUT (the device tool's folder; else build-gpu/device-logs), and a summary
# line per step to $OUT/summary.txt; a failing step does not stop the later ones. Eight files at most
# (summary, configure, build, test_cuda, test_nccl, train_devices, sanitizer, bench), as the device tool
# brings back.
#
#   bash tests/device_check.sh [build] [test] [sanitize] [bench]      (default: all four, in order)
#
# On the device machine of the developers' tools, which reaches no package registry, first pack the
# header-only dependencies here: `bash ../shared/device/make-kit.sh libcli11-dev nlohmann-json3-dev`,
# then run with carry [".device-kit"]: `source .device-kit/setup.sh && bash tests/device_check.sh`.
# XGRAD_DEVICE_BUILD names the build directory (default build-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."

build=${XGRAD_DEVICE_BUILD:-build-gpu}
out=${OUT:-$build/device-logs}
mkdir -p "$out"
summary=$out/summary.txt
: > "$summary"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build test sanitize bench)

note() { echo "$*" | tee -a "$summary"; }
# run NAME LOG SECONDS COMMAND...: runs the command with a time limit, its output into LOG, and notes
# the exit status and the time taken.
run() {
    local name=$1 log=$2 limit=$3
    shift 3
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
    local rc=$?
    note "$name: exit $rc in $((SECONDS - t0)) s (log $(basename "$log"))"
    return $rc
}

{
    echo "date: $(date -u)"
    if command -v nvidia-smi > /dev/null; then
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    else
        echo "nvidia-smi: not found (no NVIDIA driver here)"
    fi
    nvcc --version 2>&1 | tail -1
    c++ --version 2>&1 | head -1
    echo "meson $(meson --version 2>&1), ninja $(ninja --version 2>&1), $(nproc) CPUs"
} | tee -a "$summary"

for step in "${steps[@]}"; do
    case $step in
    build)
        # Only what the later steps run: the library, the CUDA suite, train_layernorm and bench_cuda.
        if [ -f "$build/build.ninja" ]; then
            run "configure" "$out/configure.log" 300 meson setup --reconfigure "$build" -Dcuda=enabled -Dmpi=disabled
        else
            run "configure" "$out/configure.log" 300 meson setup "$build" -Dcuda=enabled -Dmpi=disabled -Dtests=enabled
        fi
        grep -E "CUDA backend|NCCL|ERROR" "$out/configure.log" >> "$summary"
        nccl_target=()  # the NCCL transport's test, where the toolkit has NCCL
        grep -q "NCCL (CUDA collectives): True" "$out/configure.log" && nccl_target=(tests/test_nccl)
        run "build" "$out/build.log" 540 ninja -C "$build" -j "$(nproc)" tests/test_cuda examples/train_layernorm \
            tests/bench/bench_cuda "${nccl_target[@]}"
        tail -n 30 "$out/build.log" | grep -E "error|FAILED" | head -n 10 >> "$summary"
        ;;
    test)
        # The suite with doctest's per-case durations; then the training example on both devices.
        run "test_cuda" "$out/test_cuda.log" 300 env XGRAD_GOLDEN_DIR="$PWD/tests/golden" \
            "$build/tests/test_cuda" --duration=true
        grep -E "^\[doctest\] (test cases|assertions|Status)" "$out/test_cuda.log" >> "$summary"
        if [ -x "$build/tests/test_nccl" ]; then  # NCCL's collectives in a world of one rank
            run "test_nccl" "$out/test_nccl.log" 120 "$build/tests/test_nccl"
            grep -E "^\[doctest\] (test cases|assertions|Status)" "$out/test_nccl.log" >> "$summary"
        fi
        run "train_layernorm --device cuda vs cpu" "$out/train_devices.log" 300 \
            tests/compare_devices.sh "$build/examples/train_layernorm" "$build/train_layernorm_devices"
        grep -E "final loss differs" "$out/train_devices.log" >> "$summary"
        ;;
    sanitize)
        # memcheck over the whole suite but the out-of-memory case, whose failed cudaMalloc the sanitizer
        # reports as an API error by design.
        run "compute-sanitizer memcheck" "$out/sanitizer.log" 540 compute-sanitizer --tool memcheck \
            --error-exitcode 3 "$build/tests/test_cuda" \
            --test-case-exclude='*more than the card has*'
        grep -E "ERROR SUMMARY|\[doctest\] Status" "$out/sanitizer.log" >> "$summary"
        ;;
    bench)
        run "bench_cuda (xgrad and PyTorch)" "$out/bench.log" 400 tests/bench/bench_cuda.sh \
            "$build/tests/bench/bench_cuda" tests/bench/bench_cuda.py
        sed -n '/^workload/,$p' "$out/bench.log" >> "$summary"
        ;;
    *)
        echo "device_check.sh: unknown step $step (build, test, sanitize, bench)" >&2
        exit 2
        ;;
    esac
done
cat "$summary"
