// xgrad's benchmark: the machine's limits (FMA peak, DRAM bandwidth), then the workloads of the
// performance issue, timed with the same sizes and accounting as bench_core.py, its PyTorch twin.
//
// Output protocol, read by join_results.awk (the table) and bench_docs.sh (docs/performance.md):
//   RESULT name median p10 p90 unit    a figure; p10/p90 are the 10th/90th percentiles of the
//                                      repetitions (for rates: of the rate, so p10 is the slow end)
//   GROUP title                        the rows that follow form a group of the table
//   GOAL name limit|ratio|scaling X    the target for row `name`: at least X % of the machine's
//                                      limit, X times PyTorch, X times faster at 2 threads than at 1
//   SWEEP series size seconds          one point of the docs' time-against-size plot (median time)
//   blas: OpenBLAS's CORE kernels (...) the kernels OpenBLAS runs in this process (limits group; bench_core.py
//                                      prints PyTorch's): join_results.awk and bench_docs.sh name them
// The "% limit" column compares GFLOP/s rows with `limit_gflops` (the single-core FMA peak × threads)
// and GB/s rows with `limit_gbs` (the triad bandwidth at the run's thread count or fewer), both the
// fast end (p90) of their measurements; a group that ends with a `limit_gbs_<group>` row (the triad
// measured again around that group, see GroupLimit) is compared with that instead.
// Human-readable lines come in between. Times are medians over many repetitions after a warm-up,
// because this machine is noisy; with one thread they are the process's CPU time, which time spent
// preempted does not inflate, with more threads wall time.
//
// Accounting (bench_core.py counts the same): a GFLOP/s row counts 2 flops per multiply-add of the
// mathematical product; a GB/s row counts the logical traffic of one pass: every input tensor read
// once, every output written once, whatever the implementation really moves.
#include <cblas.h>
#include <immintrin.h>
#include <omp.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/optim.hpp"
#include "xgrad/parallel.hpp"
#include "xgrad/random.hpp"
#include "xgrad/tensor.hpp"

#include "bench_inputs.hpp"
#include "bench_report.hpp"

extern char** environ;

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;

namespace {

using bench::goal;
using bench::group;
using bench::now_seconds;
using bench::pattern_tensor;
using bench::report_rate;
using bench::result;
using bench::Stats;
using bench::stats_of;
using bench::Timer;
using bench::TinyNet;
using Clock = std::chrono::steady_clock;

/// Threads of this run (OMP_NUM_THREADS or XGRAD_BENCH_THREADS), and the timer of its workloads: with
/// one thread the process's CPU time, which also counts any helper thread a library starts anyway (an
/// OpenBLAS pool that ignores the setting, say), else wall time.
int g_threads = 1;
Timer g_timer = Timer::kProcessCpu;

/// How long to measure: `warmup` unmeasured calls, then at least `min_reps` measured ones and more
/// until `min_seconds` of wall time have passed (at most `max_reps`). Each sample times `batch` calls.
struct Reps {
    int warmup, min_reps;
    double min_seconds;
    int max_reps, batch = 1;
};

/// Seconds per call of `fn`, one value per sample.
std::vector<double> measure(const std::function<void()>& fn, Reps r, Timer timer = g_timer) {
    for (int i = 0; i < r.warmup; ++i) fn();
    std::vector<double> per_call;
    const auto start = Clock::now();
    while (static_cast<int>(per_call.size()) < r.max_reps) {
        const double t0 = now_seconds(timer);
        for (int i = 0; i < r.batch; ++i) fn();
        per_call.push_back((now_seconds(timer) - t0) / r.batch);
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (static_cast<int>(per_call.size()) >= r.min_reps && elapsed >= r.min_seconds) break;
    }
    return per_call;
}

/// A memory figure of this process in MiB from /proc/self/status: "VmRSS" (resident now) or "VmHWM"
/// (the peak resident size).
double status_mib(const char* field = "VmRSS") {
    std::ifstream status("/proc/self/status");
    const std::string key = std::string(field) + ":";
    std::string line;
    while (std::getline(status, line))
        if (line.rfind(key, 0) == 0) return std::strtod(line.c_str() + key.size(), nullptr) / 1024.0;
    return -1;
}

double rss_mib() {
    return status_mib("VmRSS");
}

constexpr double kF = 4.0;  // bytes per float32

/// The ISA the library and this file were compiled for (the limits below pick theirs at run time).
#if defined(__AVX512F__)
constexpr const char* kBuiltFor = "AVX-512 (e.g. -Dnative=true)";
#elif defined(__AVX2__)
constexpr const char* kBuiltFor = "AVX2 (e.g. -Dnative=true)";
#else
constexpr const char* kBuiltFor = "baseline x86-64 (-Dnative=false, the default)";
#endif

// ---- limits: the machine's single-core FMA peak and its DRAM bandwidth ----------------------------
//
// The default build targets plain x86-64, so each kernel is compiled for several ISAs and the best one
// the CPU has is picked at run time. The FMA loop keeps independent accumulator chains in registers,
// enough of them to cover the FMA latency on every pipe; the flops are 2 per lane per FMA.

constexpr int kChains512 = 16, kChains256 = 12, kChains128 = 8;

__attribute__((target("avx512f"))) float fma_loop_avx512(std::int64_t iters, float m, float a) {
    __m512 acc[kChains512];
    for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(c));
    const __m512 vm = _mm512_set1_ps(m), va = _mm512_set1_ps(a);
    for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
        for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_fmadd_ps(acc[c], vm, va);
    }
    __m512 s = acc[0];
    for (int c = 1; c < kChains512; ++c) s = _mm512_add_ps(s, acc[c]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
    float total = 0;
    for (float x : lanes) total += x;
    return total;
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(std::int64_t iters, float m, float a) {
    __m256 acc[kChains256];
    for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_set1_ps(1.0f + 0.01f * static_cast<float>(c));
    const __m256 vm = _mm256_set1_ps(m), va = _mm256_set1_ps(a);
    for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_fmadd_ps(acc[c], vm, va);
    }
    __m256 s = acc[0];
    for (int c = 1; c < kChains256; ++c) s = _mm256_add_ps(s, acc[c]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    float total = 0;
    for (float x : lanes) total += x;
    return total;
}

/// Without FMA (plain x86-64): a multiply and an add per lane, counted as 2 flops like an FMA.
float mul_add_loop_sse2(std::int64_t iters, float m, float a) {
    __m128 acc[kChains128];
    for (int c = 0; c < kChains128; ++c) acc[c] = _mm_set1_ps(1.0f + 0.01f * static_cast<float>(c));
    const __m128 vm = _mm_set1_ps(m), va = _mm_set1_ps(a);
    for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 8
        for (int c = 0; c < kChains128; ++c) acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], vm), va);
    }
    __m128 s = acc[0];
    for (int c = 1; c < kChains128; ++c) s = _mm_add_ps(s, acc[c]);
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, s);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

struct FmaKernel {
    const char* isa;
    int lanes, chains;
    float (*loop)(std::int64_t, float, float);
};

FmaKernel best_fma_kernel() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return {"avx512f", 16, kChains512, fma_loop_avx512};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return {"avx2+fma", 8, kChains256, fma_loop_avx2};
    return {"sse2, mul+add", 4, kChains128, mul_add_loop_sse2};
}

/// `a = b + s·c` (STREAM's triad), vectorised for the best ISA at run time.
__attribute__((target_clones("avx512f", "avx2", "default"))) void triad(float* __restrict a, const float* __restrict b,
                                                                        const float* __restrict c, float s,
                                                                        std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

/// The triad with non-temporal (streaming) stores, which write around the caches: SSE2, so any x86-64
/// has it. All three arrays are 16-byte aligned and n is a multiple of 4.
void triad_nt(float* a, const float* b, const float* c, float s, std::int64_t n) {
    const __m128 vs = _mm_set1_ps(s);
    for (std::int64_t i = 0; i < n; i += 4)
        _mm_stream_ps(a + i, _mm_add_ps(_mm_load_ps(b + i), _mm_mul_ps(vs, _mm_load_ps(c + i))));
    _mm_sfence();
}

/// Σ b (four chains of 16-float vectors; n a multiple of 64), the read-only pattern of a reduction,
/// for the best ISA at run time.
using Floats16 = float __attribute__((vector_size(64)));
__attribute__((target_clones("avx512f", "avx2", "default"))) float read_sum(const float* b, std::int64_t n) {
    Floats16 s[4] = {};
    for (std::int64_t i = 0; i + 64 <= n; i += 64)
        for (int k = 0; k < 4; ++k) {
            Floats16 v;
            std::memcpy(&v, b + i + 16 * k, sizeof v);
            s[k] += v;
        }
    float total = 0;
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 16; ++j) total += s[k][j];
    return total;
}

/// a = b with non-temporal stores (SSE2), the pattern of a one-input map or a norm's forward on a
/// tensor from memory. Both arrays are 16-byte aligned and n is a multiple of 4.
void copy_nt(float* a, const float* b, std::int64_t n) {
    for (std::int64_t i = 0; i < n; i += 4) _mm_stream_ps(a + i, _mm_load_ps(b + i));
    _mm_sfence();
}

/// a = b (+ c, when c is not null) with ordinary stores, for the best ISA at run time: the norms'
/// stores below kStreamBytes (8 MiB).
__attribute__((target_clones("avx512f", "avx2", "default"))) void pass_cached(float* __restrict a,
                                                                              const float* __restrict b,
                                                                              const float* __restrict c,
                                                                              std::int64_t n) {
    if (c)
        for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + c[i];
    else
        for (std::int64_t i = 0; i < n; ++i) a[i] = b[i];
}
/// a = b + c with non-temporal stores (SSE2), as copy_nt: all arrays 16-byte aligned, n a multiple of 4.
void add_nt(float* a, const float* b, const float* c, std::int64_t n) {
    for (std::int64_t i = 0; i < n; i += 4) _mm_stream_ps(a + i, _mm_add_ps(_mm_load_ps(b + i), _mm_load_ps(c + i)));
    _mm_sfence();
}

/// A 64-byte aligned float array filled with `value`.
struct AlignedFloats {
    float* data;
    AlignedFloats(std::int64_t n, float value)
        : data(static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(n) * sizeof(float)))) {
        if (!data) throw std::bad_alloc();
        std::fill(data, data + n, value);
    }
    ~AlignedFloats() { std::free(data); }
    AlignedFloats(const AlignedFloats&) = delete;
    AlignedFloats& operator=(const AlignedFloats&) = delete;
};

volatile float g_sink;  // keeps the FMA loops' results alive

/// A limit from repeated measurements: the 90th percentile of the rate, the fast end. Noise (other
/// processes, frequency changes) only slows a loop down, so the median would understate the machine;
/// the single fastest sample can be a fluke of the clock.
double fast_rate(const std::vector<double>& seconds, double work, double scale) {
    return work / stats_of(seconds).p10 / scale;
}

/// Which kernels OpenBLAS runs in this process: its pick for the CPU, or the one OPENBLAS_CORETYPE names
/// (read when the library loads; run_bench.sh's XGRAD_BENCH_BLAS sets it). Every GEMM row measures them.
void print_blas() {
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    std::printf("blas: OpenBLAS's %s kernels (OPENBLAS_CORETYPE=%s; %s)\n", openblas_get_corename(),
                forced != nullptr && *forced != '\0' ? forced : "unset", openblas_get_config());
}

/// The triad's three 64 MiB arrays, far larger than the caches, and its timing at t threads.
struct Triad {
    static constexpr std::int64_t kN = 16 << 20;
    AlignedFloats a{kN, 0.0f}, b{kN, 1.0f}, c{kN, 2.0f};

    static double bytes() { return 3.0 * kF * static_cast<double>(kN); }

    /// Seconds per triad over the arrays, split between t OpenMP threads.
    std::vector<double> seconds(int t, bool nt_stores, Reps reps) {
        auto kernel = nt_stores ? triad_nt : triad;
        auto run = [&] {
            if (t == 1) {
                kernel(a.data, b.data, c.data, 0.5f, kN);
                return;
            }
#pragma omp parallel num_threads(t)
            {
                const std::int64_t nt = omp_get_num_threads(), i = omp_get_thread_num();
                const std::int64_t lo = kN * i / nt / 16 * 16, hi = i + 1 == nt ? kN : kN * (i + 1) / nt / 16 * 16;
                kernel(a.data + lo, b.data + lo, c.data + lo, 0.5f, hi - lo);
            }
        };
        return measure(run, reps, t == 1 ? Timer::kThreadCpu : Timer::kWall);
    }

    /// limit_gbs measured now, shorter than the limits group does: the fast end of the triad with either
    /// store at 1 and at the run's threads.
    double limit_now() {
        std::vector<int> counts{1};
        if (g_threads > 1) counts.push_back(g_threads);
        double best = 0;
        for (int t : counts)
            for (bool nt_stores : {false, true})
                best = std::max(best, fast_rate(seconds(t, nt_stores, {2, 8, 0.15, 100}), bytes(), 1e9));
        return best;
    }
};

/// The host's memory bandwidth drifts by up to half between minutes (other tenants of the VM), so a
/// limit measured only at the start of a run can be far from the one a group meets. A GB/s group is
/// therefore bracketed: the triad limit is measured again just before and just after it, and the
/// faster of the two is reported as `limit_gbs_<group>`, which join_results.awk uses for that group's
/// "% limit" (limit_gbs stays the run's first measurement, in the limits group).
class GroupLimit {
public:
    explicit GroupLimit(std::string group) : name_("limit_gbs_" + std::move(group)), before_(triad_.limit_now()) {}
    ~GroupLimit() {
        const double after = triad_.limit_now();
        std::printf("%-26s %10.2f GB/s    (triad p90 %.2f before this group, %.2f after)\n", name_.c_str(),
                    std::max(before_, after), before_, after);
        result(name_, std::max(before_, after), "GB/s");
    }
    GroupLimit(const GroupLimit&) = delete;
    GroupLimit& operator=(const GroupLimit&) = delete;

private:
    std::string name_;
    Triad triad_;
    double before_;
};

void bench_limits() {
    group("machine limits, measured; % limit compares with limit_* (the fast end, p90, of the rates)");
    const FmaKernel k = best_fma_kernel();
    volatile float m = 0.999999f, a = 1e-6f;
    const std::int64_t iters = 4'000'000;
    const double flops = 2.0 * k.lanes * k.chains * static_cast<double>(iters);
    auto seconds = measure([&] { g_sink = k.loop(iters, m, a); }, {1, 15, 0.3, 200}, Timer::kThreadCpu);
    std::printf("fma: %s, %d chains of %d lanes\n", k.isa, k.chains, k.lanes);
    print_blas();
    report_rate("fma_peak_1t", seconds, flops, 1e9, "GFLOP/s");
    const double fma_fast = fast_rate(seconds, flops, 1e9);

    const std::int64_t n = Triad::kN;  // 64 MiB of float32, far larger than the caches
    // What an output costs when its memory is new to the process: malloc, write, free of 64 MiB, which
    // glibc maps and unmaps each time, so every page faults in (on a VM each fault can cost many µs).
    // Not a limit: it shows why a library that does not reuse large blocks falls far below the triad.
    auto fresh = [&] {
        void* p = std::malloc(static_cast<std::size_t>(n) * sizeof(float));
        float* volatile q = static_cast<float*>(p);
        std::memset(q, 1, static_cast<std::size_t>(n) * sizeof(float));
        g_sink = q[n / 2];
        std::free(p);
    };
    report_rate("fresh_pages_1t", measure(fresh, {1, 5, 0.3, 100}, Timer::kThreadCpu), kF * static_cast<double>(n), 1e9,
                "GB/s");

    // DRAM: the triad on three such arrays, 12 bytes per element as the elementwise rows count them,
    // with ordinary stores (whose write-allocate read is not counted, as in those rows) and with
    // non-temporal stores (which skip it). The limit at T threads is the faster of either at T threads
    // or fewer: T threads can always leave some idle.
    Triad triad_arrays;
    const int procs = omp_get_num_procs();
    std::vector<int> counts{1};
    for (int t : {g_threads, procs})
        if (std::find(counts.begin(), counts.end(), t) == counts.end()) counts.push_back(t);
    std::sort(counts.begin(), counts.end());
    double bw_fast = 0;
    for (int t : counts) {
        for (bool nt_stores : {false, true}) {
            auto s = triad_arrays.seconds(t, nt_stores, {3, 20, t == 1 ? 0.3 : 0.6, 400});
            report_rate(std::string(nt_stores ? "dram_triad_nt_" : "dram_triad_") + std::to_string(t) + "t", s,
                        triad_arrays.bytes(), 1e9, "GB/s");
            if (t <= g_threads) bw_fast = std::max(bw_fast, fast_rate(s, triad_arrays.bytes(), 1e9));
        }
    }
    float* va = triad_arrays.a.data;
    float* vb = triad_arrays.b.data;
    float* vc = triad_arrays.c.data;
    // Not limits either: what one thread reaches for the other access patterns of the tables, beside
    // the triad (two reads, one write). A reduction only reads (dram_read_1t); a one-input map or a
    // norm's forward on 64 MiB reads one array and writes another (dram_copy_nt_1t); the 1024x1500
    // norms work on 6 MiB that stay in the caches between calls (cache_copy_1t: a plain copy of that
    // size, ordinary stores, counted as read + write).
    report_rate("dram_read_1t", measure([&] { g_sink = read_sum(vb, n); }, {3, 20, 0.3, 400}, Timer::kThreadCpu),
                kF * static_cast<double>(n), 1e9, "GB/s");
    report_rate("dram_copy_nt_1t", measure([&] { copy_nt(va, vb, n); }, {3, 20, 0.3, 400}, Timer::kThreadCpu),
                2.0 * kF * static_cast<double>(n), 1e9, "GB/s");
    const std::int64_t small = 1024 * 1500;
    report_rate("cache_copy_1t",
                measure([&] { std::memcpy(va, vc, static_cast<std::size_t>(small) * sizeof(float)); },
                        {20, 20, 0.3, 1000, 10}, Timer::kThreadCpu),
                2.0 * kF * static_cast<double>(small), 1e9, "GB/s");
    std::printf("%-26s %10.2f GFLOP/s (p90 of fma_peak_1t x %d thread(s))\n", "limit_gflops", fma_fast * g_threads,
                g_threads);
    result("limit_gflops", fma_fast * g_threads, "GFLOP/s");
    std::printf("%-26s %10.2f GB/s    (best p90 of dram_triad* at %d thread(s) or fewer)\n", "limit_gbs", bw_fast,
                g_threads);
    result("limit_gbs", bw_fast, "GB/s");
}

// ---- the tiny training step -------------------------------------------------------------------------

constexpr double kLr = 0.01;

void bench_tiny_step() {
    group("tiny training step: 2x5 -> Linear(5,6) -> relu -> Linear(6,1) -> MSE, SGD");
    TinyNet net;
    auto samples = measure([&] { net.step(kLr); }, {2000, 100, 2.0, 100000, 100});
    std::vector<double> us;
    for (double s : samples) us.push_back(s * 1e6);
    Stats s = stats_of(us);
    std::printf("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; %zu samples of 100 steps)\n", "tiny_step", s.median, "us/step",
                s.p10, s.p90, samples.size());
    result("tiny_step", s, "us");
}

/// Flat memory: RSS after 10^3 and after 10^5 steps of a fresh net. The losses double as a
/// cross-check with PyTorch (same values in, same ops, float32).
void bench_memory() {
    group("memory: RSS over 10^5 tiny steps (flat), and the tiny loss as a cross-check");
    TinyNet net;
    Tensor loss;
    double rss_1k = 0;
    float loss_1k = 0;
    for (int i = 1; i <= 100000; ++i) {
        loss = net.step(kLr);
        if (i == 1000) {
            rss_1k = rss_mib();
            loss_1k = loss.item<float>();
        }
    }
    const double rss_100k = rss_mib();
    std::printf("%-26s %10.2f MiB after 10^3 steps, %.2f MiB after 10^5 (growth %.2f MiB)\n", "rss", rss_1k, rss_100k,
                rss_100k - rss_1k);
    std::printf("%-26s %.8g after 10^3 steps, %.8g after 10^5\n", "tiny_loss", loss_1k, loss.item<float>());
    result("rss_1e3_steps", rss_1k, "MiB");
    result("rss_1e5_steps", rss_100k, "MiB");
    result("rss_growth", rss_100k - rss_1k, "MiB");
    result("tiny_loss_1e3", loss_1k, "loss");
    result("tiny_loss_1e5", loss.item<float>(), "loss");
}

// ---- LayerNorm and RMSNorm ----------------------------------------------------------------------------

constexpr double kLnEps = 1e-5, kRmsEps = 1e-6;

/// One normalisation workload on (rows, cols): its call and the bytes it moves. Forward: x read, y
/// written, the parameters read (no tensor requires grad, so nothing is recorded). Forward+backward:
/// that, then dy and x read, dx written, the weight read and its gradients written; the gradients are
/// reset to undefined after each call.
struct NormCase {
    std::function<void()> call;
    double bytes;
};

NormCase norm_case(bool rms, bool backward, std::int64_t rows, std::int64_t cols) {
    const double n = static_cast<double>(rows * cols), c = static_cast<double>(cols);
    Tensor x = pattern_tensor({rows, cols}, 10, 1.0);
    Tensor w = pattern_tensor({cols}, 11, 0.5).add(1.0);
    Tensor b = pattern_tensor({cols}, 12, 0.1);
    Tensor dy = pattern_tensor({rows, cols}, 13, 1.0);
    const xgrad::Shape shape{cols};
    if (!backward) {
        if (rms) return {[=] { Tensor y = F::rms_norm(x, shape, w, kRmsEps); }, (2 * n + c) * kF};
        return {[=] { Tensor y = F::layer_norm(x, shape, w, b, kLnEps); }, (2 * n + 2 * c) * kF};
    }
    x.requires_grad_();
    w.requires_grad_();
    b.requires_grad_();
    auto reset = [=]() mutable {
        for (Tensor* p : {&x, &w, &b}) p->mutable_grad() = Tensor();
    };
    if (rms)
        return {[=]() mutable {
                    Tensor y = F::rms_norm(x, shape, w, kRmsEps);
                    y.backward(dy);
                    reset();
                },
                (5 * n + 3 * c) * kF};
    return {[=]() mutable {
                Tensor y = F::layer_norm(x, shape, w, b, kLnEps);
                y.backward(dy);
                reset();
            },
            (5 * n + 5 * c) * kF};
}

/// What streaming alone reaches on a norm's forward+backward bytes: `y = x`, then `dx = x + dy`, on
/// (rows × cols) floats, written as the norms write them (pass_cached, or copy_nt and add_nt), on g_threads threads.
/// Not a limit (% limit still compares with the triad), and not a goal: the rate of the same traffic
/// over the same four tensors, without a norm's arithmetic and its passes over each row.
void bench_norm_streaming(std::int64_t rows, std::int64_t cols, const std::string& size) {
    const std::int64_t n = rows * cols;
    AlignedFloats x{n, 1.0f}, y{n, 0.0f}, dy{n, 2.0f}, dx{n, 0.0f};
    const bool nt = static_cast<double>(n) * kF >= 8.0 * (1 << 20);
    auto pass = [&](float* a, const float* b, const float* c) {
        auto run = [&](std::int64_t lo, std::int64_t hi) {
            if (!nt)
                pass_cached(a + lo, b + lo, c ? c + lo : nullptr, hi - lo);
            else if (c)
                add_nt(a + lo, b + lo, c + lo, hi - lo);
            else
                copy_nt(a + lo, b + lo, hi - lo);
        };
        if (g_threads == 1) return run(0, n);
#pragma omp parallel num_threads(g_threads)
        {
            const std::int64_t t = omp_get_num_threads(), i = omp_get_thread_num();
            run(n * i / t / 16 * 16, i + 1 == t ? n : n * (i + 1) / t / 16 * 16);
        }
    };
    report_rate("streaming_fwdbwd_" + size,
                measure(
                    [&] {
                        pass(y.data, x.data, nullptr);
                        pass(dx.data, x.data, dy.data);
                    },
                    {3, 7, 0.4, 1000}),
                5.0 * kF * static_cast<double>(n), 1e9, "GB/s");
}

void bench_norms() {
    group("LayerNorm (F::layer_norm, weight+bias) and RMSNorm (F::rms_norm; PyTorch 1.13: its composite)");
    GroupLimit limit("norm");
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1024, 1500}, {16384, 768}}) {
        const std::string size = std::to_string(rows) + "x" + std::to_string(cols);
        bench_norm_streaming(rows, cols, size);
        for (bool rms : {false, true}) {
            for (bool backward : {false, true}) {
                const std::string name =
                    std::string(rms ? "rmsnorm" : "layernorm") + (backward ? "_fwdbwd_" : "_fwd_") + size;
                NormCase nc = norm_case(rms, backward, rows, cols);
                report_rate(name, measure(nc.call, {3, 7, 0.4, 1000}), nc.bytes, 1e9, "GB/s");
                goal(name, "limit", 80);
                if (rms) goal(name, "ratio", 5);
                if (rows == 16384) goal(name, "scaling", 1.7);
            }
        }
    }
}

/// The docs' plot: fwd+bwd time against rows at width 768.
void sweep_norms() {
    for (bool rms : {false, true})
        for (std::int64_t rows = 256; rows <= 16384; rows *= 2) {
            NormCase nc = norm_case(rms, true, rows, 768);
            Stats t = stats_of(measure(nc.call, {2, 5, 0.25, 1000}));
            std::printf("SWEEP %s %lld %.6g\n", rms ? "rmsnorm_fwdbwd" : "layernorm_fwdbwd",
                        static_cast<long long>(rows), t.median);
            std::fflush(stdout);
        }
}

// ---- Linear and matmul ----------------------------------------------------------------------------

void bench_linear() {
    group("Linear 2048 -> 1500 on a batch of 1024 (nn::Linear, PyTorch's init)");
    const std::int64_t n = 1024, k = 2048, m = 1500;
    xgrad::manual_seed(0);
    nn::Linear fc(k, m);
    Tensor x = pattern_tensor({n, k}, 14, 1.0);
    Tensor dy = pattern_tensor({n, m}, 15, 0.01);
    const double flops = 2.0 * n * k * m;
    {
        xgrad::NoGradGuard no_grad;
        report_rate("linear_fwd", measure([&] { Tensor y = fc(x); }, {1, 4, 0.8, 200}), flops, 1e9, "GFLOP/s");
    }
    goal("linear_fwd", "limit", 80);
    x.requires_grad_();
    auto fwd_bwd = [&] {
        Tensor y = fc(x);
        y.backward(dy);  // dx = dy·W, dW = dyᵀ·x, db = Σ dy
        for (Tensor* p : {&x, &fc.weight, &fc.bias}) p->mutable_grad() = Tensor();
    };
    report_rate("linear_fwdbwd", measure(fwd_bwd, {1, 3, 1.0, 200}), 3 * flops, 1e9, "GFLOP/s");
    goal("linear_fwdbwd", "limit", 80);
    goal("linear_fwdbwd", "scaling", 1.7);
}

void bench_matmul() {
    group("matmul: square n x n . n x n, and a batch of 32 (256x256 . 256x256)");
    for (std::int64_t n = 64; n <= 2048; n *= 2) {
        Tensor a = pattern_tensor({n, n}, 8, 1.0);
        Tensor b = pattern_tensor({n, n}, 9, 1.0);
        const std::string name = "matmul_" + std::to_string(n);
        auto seconds = measure([&] { Tensor c = xgrad::matmul(a, b); }, {n >= 1024 ? 1 : 3, 3, 0.5, 2000});
        report_rate(name, seconds, 2.0 * n * n * n, 1e9, "GFLOP/s");
        std::printf("SWEEP matmul %lld %.6g\n", static_cast<long long>(n), stats_of(seconds).median);
        if (n >= 1024) {
            goal(name, "limit", 80);
            goal(name, "scaling", 1.7);
        }
    }
    Tensor a = pattern_tensor({32, 256, 256}, 8, 1.0);
    Tensor b = pattern_tensor({32, 256, 256}, 9, 1.0);
    report_rate("bmm_32x256", measure([&] { Tensor c = xgrad::matmul(a, b); }, {2, 3, 0.5, 2000}),
                2.0 * 32 * 256 * 256 * 256, 1e9, "GFLOP/s");
    goal("bmm_32x256", "limit", 80);
}

// ---- batch and group norm, cdist ------------------------------------------------------------------

/// Not goals: the newer CPU kernels that give PyTorch's bits (batch_norm and group_norm in training on
/// (32, 64, 56, 56) = 6.4M floats, 25 MiB; the direct cdist of 256 by 200 rows of 64), beside PyTorch's
/// own kernels. The norms count their bytes as the LayerNorm rows do (forward: x read, y written;
/// forward+backward: x, y, dy, x again and dx), cdist is timed per call.
void bench_layers() {
    group("BatchNorm2d and GroupNorm (training, 32x64x56x56), cdist (256x64 to 200x64, direct); not goals");
    GroupLimit limit("layers");
    const xgrad::Shape shape{32, 64, 56, 56};
    const double n = 32.0 * 64 * 56 * 56, c = 64;
    Tensor x = pattern_tensor(shape, 18, 1.0);
    Tensor dy = pattern_tensor(shape, 19, 1.0);
    Tensor w = pattern_tensor({64}, 20, 1.0);
    Tensor b = pattern_tensor({64}, 21, 0.1);
    Tensor mean = xgrad::zeros({64}), var = xgrad::ones({64});
    auto norm = [&](bool batch, const Tensor& in) {
        return batch ? F::batch_norm(in, mean, var, w, b, true) : F::group_norm(in, 32, w, b);
    };
    for (bool batch : {true, false}) {
        const std::string name = batch ? "batch_norm" : "group_norm";
        {
            xgrad::NoGradGuard no_grad;
            report_rate(name + "_fwd", measure([&] { Tensor y = norm(batch, x); }, {2, 5, 0.4, 400}),
                        (2 * n + 4 * c) * kF, 1e9, "GB/s");
        }
        Tensor xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_(), bl = b.detach().requires_grad_();
        auto fwd_bwd = [&] {
            Tensor y = batch ? F::batch_norm(xl, mean, var, wl, bl, true) : F::group_norm(xl, 32, wl, bl);
            y.backward(dy);
            for (Tensor* p : {&xl, &wl, &bl}) p->mutable_grad() = Tensor();
        };
        report_rate(name + "_fwdbwd", measure(fwd_bwd, {2, 5, 0.4, 400}), (5 * n + 6 * c) * kF, 1e9, "GB/s");
    }
    Tensor q = pattern_tensor({256, 64}, 22, 1.0), k = pattern_tensor({200, 64}, 23, 1.0);
    Tensor g = pattern_tensor({256, 200}, 24, 1.0);
    for (double p : {2.0, 1.0}) {
        const std::string name = std::string("cdist_p") + (p == 2.0 ? "2" : "1") + "_fwdbwd";
        Tensor ql = q.detach().requires_grad_(), kl = k.detach().requires_grad_();
        auto call = [&] {
            Tensor d = xgrad::cdist(ql, kl, p, "donot_use_mm_for_euclid_dist");
            d.backward(g);
            for (Tensor* t : {&ql, &kl}) t->mutable_grad() = Tensor();
        };
        Stats t = stats_of(measure(call, {2, 10, 0.4, 2000}));
        std::printf("%-26s %10.3f ms      (p10 %.3f, p90 %.3f)\n", name.c_str(), t.median * 1e3, t.p10 * 1e3,
                    t.p90 * 1e3);
        result(name, {t.median * 1e3, t.p10 * 1e3, t.p90 * 1e3}, "ms");
    }
}

// ---- elementwise and reductions on 4096×4096 (16M) float32 ---------------------------------------

void bench_elementwise_and_reductions() {
    group("elementwise and reductions on 4096x4096 = 16M float32 (64 MiB per tensor)");
    GroupLimit limit("ew");
    const std::int64_t rows = 4096, cols = 4096;
    const double n = static_cast<double>(rows * cols);
    Tensor a = pattern_tensor({rows, cols}, 6, 2.0);
    Tensor b = pattern_tensor({rows, cols}, 7, 2.0);
    Tensor row = pattern_tensor({cols}, 16, 1.0);
    auto bytes = [&](const std::string& name, double moved, const std::function<Tensor()>& fn) {
        report_rate(name, measure([&] { Tensor r = fn(); }, {2, 5, 0.4, 400}), moved, 1e9, "GB/s");
        goal(name, "limit", 85);
        goal(name, "scaling", 1.7);
    };
    bytes("add", 3 * n * kF, [&] { return a + b; });
    bytes("mul", 3 * n * kF, [&] { return a * b; });
    bytes("mul_scalar", 2 * n * kF, [&] { return a * 0.5; });
    bytes("exp", 2 * n * kF, [&] { return a.exp(); });
    bytes("tanh", 2 * n * kF, [&] { return a.tanh(); });
    bytes("gelu", 2 * n * kF, [&] { return a.gelu(); });
    bytes("add_row", (2 * n + cols) * kF, [&] { return a + row; });  // (4096, 4096) + (4096)
    bytes("sum_dim", (n + rows) * kF, [&] { return a.sum(-1); });
    bytes("var_dim", (n + rows) * kF, [&] { return a.var(-1); });
    bytes("sum_all", (n + 1) * kF, [&] { return a.sum(); });
    // Not goals: softmax over rows of 32 (attention's short rows: the per-row work counts) and
    // log_softmax over a middle dim (lane by lane down the dim, as PyTorch's kernel), in and out moved.
    auto rate = [&](const std::string& name, const std::function<Tensor()>& fn) {
        report_rate(name, measure([&] { Tensor r = fn(); }, {2, 5, 0.4, 400}), 2 * n * kF, 1e9, "GB/s");
    };
    rate("softmax_rows32", [&] { return F::softmax(a.view({-1, 32}), -1); });
    rate("log_softmax_dim1", [&] { return F::log_softmax(a.view({64, 64, 4096}), 1); });
    // Not goals: an in-place update by a 0-d tensor (read and written), a sum over a broadcast (stride 0)
    // dim (the expanded view's bytes counted as if read), and smooth_l1_loss forward+backward (input and
    // target read, the input's gradient written).
    Tensor c = a.clone(), one = xgrad::full({}, 1.0), col = pattern_tensor({rows, 1}, 25, 1.0);
    report_rate("mul_inplace_0d", measure([&] { c.mul_(one); }, {2, 5, 0.4, 400}), 2 * n * kF, 1e9, "GB/s");
    report_rate("sum_expanded_dim1",
                measure(
                    [&] {
                        Tensor r = col.expand({rows, cols}).sum(1);
                    },
                    {2, 5, 0.4, 400}),
                n * kF, 1e9, "GB/s");
    Tensor al = a.detach().requires_grad_();
    auto smooth_l1 = [&] {
        F::smooth_l1_loss(al, b, {.beta = 0.3}).backward();
        al.mutable_grad() = Tensor();
    };
    report_rate("smooth_l1_fwdbwd", measure(smooth_l1, {2, 5, 0.4, 400}), 3 * n * kF, 1e9, "GB/s");
    // Not a goal: glu over the last dim, forward and backward (the input read by both, the halves'
    // output written, the output's gradient read, the input's gradient written).
    const Tensor glu_grad = b.narrow(1, 0, cols / 2).contiguous();
    auto glu = [&] {
        F::glu(al, -1).backward(glu_grad);
        al.mutable_grad() = Tensor();
    };
    report_rate("glu_fwdbwd", measure(glu, {2, 5, 0.4, 400}), 4 * n * kF, 1e9, "GB/s");
    // Not goals: the transcendental maps on 256x256 floats, input and output in the level-2 cache, where
    // memory does not limit them. Their rate there is what their arithmetic allows (with PyTorch's
    // algorithms, for PyTorch's bits), and a ceiling on the rows above.
    Tensor small = pattern_tensor({256, 256}, 17, 2.0);
    const double small_bytes = 2.0 * 256 * 256 * kF;
    const std::vector<std::pair<std::string, std::function<Tensor()>>> maps = {
        {"exp_cached", [&] { return small.exp(); }},
        {"tanh_cached", [&] { return small.tanh(); }},
        {"gelu_cached", [&] { return small.gelu(); }}};
    for (const auto& m : maps)
        report_rate(m.first, measure([&] { Tensor r = m.second(); }, {5, 20, 0.2, 2000, 10}), small_bytes, 1e9, "GB/s");
}

// ---- the MLP training step --------------------------------------------------------------------------

/// 784-512-512-10 with LayerNorm after each hidden Linear (Linear → LayerNorm → ReLU), batch 256,
/// cross-entropy, Adam (lr 1e-3). The weights are PyTorch's for manual_seed(0); the data are patterns.
struct Mlp {
    nn::Sequential model;
    xgrad::optim::Adam opt;
    Tensor x, labels;

    static nn::Sequential make() {
        xgrad::manual_seed(0);
        return nn::Sequential(nn::Linear(784, 512), nn::LayerNorm({512}), nn::ReLU(), nn::Linear(512, 512),
                              nn::LayerNorm({512}), nn::ReLU(), nn::Linear(512, 10));
    }
    static Tensor make_labels() {
        std::vector<std::int64_t> y(256);
        for (std::int64_t i = 0; i < 256; ++i) y[static_cast<std::size_t>(i)] = (i * 7 + 3) % 10;
        return xgrad::from_vector(y, {256}, xgrad::kInt64);
    }

    Mlp()
        : model(make()),
          opt(model.parameters(), {.lr = 1e-3}),
          x(pattern_tensor({256, 784}, 17, 1.0)),
          labels(make_labels()) {}

    Tensor step() {
        opt.zero_grad();
        Tensor loss = F::cross_entropy(model(x), labels);
        loss.backward();
        opt.step();
        return loss;
    }
};

double cpu_seconds_of_process() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto sec = [](timeval t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return sec(ru.ru_utime) + sec(ru.ru_stime);
}

/// The child process of the peak-RSS measurement: a fresh process that builds the MLP, trains 20
/// steps and reports its peak RSS and how much that is above its RSS at the start. The peak is VmHWM,
/// not getrusage's ru_maxrss: Linux carries ru_maxrss over an exec from the process image before, so
/// a child spawned by a big parent would report the parent's peak.
int mlp_rss_child() {
    const double start = rss_mib();
    Mlp mlp;
    for (int i = 0; i < 20; ++i) mlp.step();
    const double peak = status_mib("VmHWM");
    std::printf("%-26s %10.2f MiB (%.2f MiB above the %.2f MiB at the process's start)\n", "mlp_peak_rss", peak,
                peak - start, start);
    result("mlp_peak_rss", peak, "MiB");
    result("mlp_rss_growth", peak - start, "MiB");
    goal("mlp_peak_rss", "ratio", 1);
    goal("mlp_rss_growth", "ratio", 1);
    return 0;
}

void bench_mlp() {
    group(
        "MLP training step: 784-512-512-10, LayerNorm after each hidden layer, batch 256, "
        "cross-entropy, Adam");
    Mlp mlp;
    const double wall0 = now_seconds(Timer::kWall), cpu0 = cpu_seconds_of_process();
    Tensor loss;
    for (int i = 0; i < 3; ++i) loss = mlp.step();
    const float loss3 = loss.item<float>();
    Stats t = stats_of(measure([&] { mlp.step(); }, {0, 10, 2.0, 1000}));
    const double wall = now_seconds(Timer::kWall) - wall0, cpu = cpu_seconds_of_process() - cpu0;
    Stats rate{1 / t.median, 1 / t.p90, 1 / t.p10};
    std::printf("%-26s %10.2f steps/s (p10 %.2f, p90 %.2f; median %.3f ms)\n", "mlp_step", rate.median, rate.p10,
                rate.p90, t.median * 1e3);
    result("mlp_step", rate, "steps/s");
    goal("mlp_step", "ratio", 1.2);
    std::printf("%-26s %10.2f (process CPU %.2f s over %.2f s of wall time)\n", "mlp_cpu_per_wall", cpu / wall, cpu,
                wall);
    result("mlp_cpu_per_wall", cpu / wall, "cpu/wall");
    result("mlp_loss_3", loss3, "loss");  // after 3 steps: the same weights, data and maths as PyTorch's

    std::fflush(stdout);
    std::string arg0 = "bench_core", arg1 = "mlp-rss-child";
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = 0;
    int status = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) != 0 || waitpid(pid, &status, 0) != pid ||
        status != 0)
        std::printf("mlp_peak_rss: the child process (bench_core mlp-rss-child) failed\n");
}

}  // namespace

int main(int argc, char** argv) {
    // `bench_core profile [steps]` runs only tiny steps, untimed, for perf or callgrind.
    if (argc >= 2 && std::strcmp(argv[1], "profile") == 0) {
        TinyNet net;
        const int steps = argc >= 3 ? std::atoi(argv[2]) : 2000;
        Tensor loss;
        for (int i = 0; i < steps; ++i) loss = net.step(kLr);
        std::printf("%d tiny steps, loss %.8g\n", steps, loss.item<float>());
        return 0;
    }
    // Threads: XGRAD_BENCH_THREADS, else xgrad's default (OMP_NUM_THREADS, else the CPUs). The
    // bench's own DRAM probe runs on OpenMP with as many.
    if (const char* t = std::getenv("XGRAD_BENCH_THREADS")) xgrad::set_num_threads(std::max(1, std::atoi(t)));
    g_threads = xgrad::get_num_threads();
    omp_set_num_threads(g_threads);
    g_timer = g_threads == 1 ? Timer::kProcessCpu : Timer::kWall;
    if (argc >= 2 && std::strcmp(argv[1], "mlp-rss-child") == 0) return mlp_rss_child();

    // Optional filter: the groups named on the command line (limits tiny norm linear mm ew layers mlp mem,
    // and sweep, which only bench_docs.sh runs); none means all but sweep. run_bench.sh runs each
    // group in a process of its own, so that no group inherits another's heap (xgrad's block cache,
    // glibc's free lists and mmap threshold), and `limits` once for the "% limit" column.
    auto wanted = [&](const char* what) {
        if (argc < 2) return std::strcmp(what, "sweep") != 0;
        for (int i = 1; i < argc; ++i)
            if (std::strcmp(argv[i], what) == 0) return true;
        return false;
    };
    std::printf("xgrad bench: float32, %d OpenMP thread(s) of %d cores, timed by %s, code built for %s\n", g_threads,
                omp_get_num_procs(), g_threads == 1 ? "process CPU time" : "wall time", kBuiltFor);
    result("threads", g_threads, "count");
    if (wanted("limits")) bench_limits();
    if (wanted("tiny")) bench_tiny_step();
    if (wanted("norm")) bench_norms();
    if (wanted("linear")) bench_linear();
    if (wanted("mm")) bench_matmul();
    if (wanted("ew")) bench_elementwise_and_reductions();
    if (wanted("layers")) bench_layers();
    if (wanted("mlp")) bench_mlp();
    if (wanted("mem")) bench_memory();
    if (wanted("sweep")) sweep_norms();
    return 0;
}
