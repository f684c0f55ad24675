// Benchmarks of xgrad's core: a tiny training step, elementwise and reduction bandwidth, a large
// matmul and flat memory over 10^5 steps. bench_core.py is the PyTorch twin; run_bench.sh compares.
//
// Every figure is printed twice: as a readable line and as `RESULT name median p10 p90 unit`, where
// p10/p90 are the 10th/90th percentiles of the repetitions (for rates: of the rate, so p10 is the
// slow end). Times are medians over many repetitions after a warm-up, because this machine is noisy;
// with one thread they are the thread's CPU time, which time spent preempted does not inflate.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

using xgrad::Tensor;

namespace {

using Clock = std::chrono::steady_clock;

/// Quantiles of a sample, in the sample's unit.
struct Stats {
    double median, p10, p90;
};

Stats stats_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)]; };
    return {at(0.5), at(0.1), at(0.9)};
}

/// Which clock times the benchmarks: the calling thread's CPU time when everything runs on this one
/// thread (so that time spent descheduled, while other processes share the cores, is not counted),
/// else wall time.
bool g_thread_clock = true;

double now_seconds() {
    if (g_thread_clock) {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

/// Seconds per call of `fn`: `warmup` unmeasured calls, then at least `min_reps` measured ones and
/// more until `min_seconds` of wall time have passed (at most `max_reps`). Each sample times `batch` calls.
std::vector<double> measure(const std::function<void()>& fn, int warmup, int min_reps, double min_seconds, int max_reps,
                            int batch = 1) {
    for (int i = 0; i < warmup; ++i) fn();
    std::vector<double> per_call;
    const auto start = Clock::now();
    while (static_cast<int>(per_call.size()) < max_reps) {
        const double t0 = now_seconds();
        for (int i = 0; i < batch; ++i) fn();
        per_call.push_back((now_seconds() - t0) / batch);
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (static_cast<int>(per_call.size()) >= min_reps && elapsed >= min_seconds) break;
    }
    return per_call;
}

void result(const std::string& name, Stats s, const char* unit) {
    std::printf("RESULT %s %.6g %.6g %.6g %s\n", name.c_str(), s.median, s.p10, s.p90, unit);
}

/// Reports seconds-per-call samples as a rate `work / seconds` (bytes or flops, scaled by `scale`).
void report_rate(const std::string& name, const std::vector<double>& seconds, double work, double scale,
                 const char* unit) {
    Stats t = stats_of(seconds);
    Stats r{work / t.median / scale, work / t.p90 / scale, work / t.p10 / scale};
    std::printf("%-22s %10.2f %-8s (p10 %.2f, p90 %.2f; median %.3f ms, %zu reps)\n", name.c_str(), r.median, unit,
                r.p10, r.p90, t.median * 1e3, seconds.size());
    result(name, r, unit);
}

/// Resident set size of this process in MiB, from /proc/self/status.
double rss_mib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
    return -1;
}

/// Deterministic float values with no RNG (bench_core.py computes the same list): `count` values
/// in about [-scale, scale], spread by a multiplicative hash so that nothing is constant or sorted.
std::vector<float> pattern(std::int64_t count, std::int64_t salt, double scale) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t k = (i * 37 + salt * 11) % 23;  // 0..22
        v[static_cast<std::size_t>(i)] = static_cast<float>((static_cast<double>(k) - 11.0) / 11.0 * scale);
    }
    return v;
}

// ---- (1) the tiny training step -------------------------------------------------------------------

/// 2×5 input → Linear(5, 6) → relu → Linear(6, 1) → MSE, written with core ops only.
struct TinyNet {
    Tensor x, y, w1, b1, w2, b2;

    TinyNet()
        : x(xgrad::from_vector(pattern(10, 1, 1.0), {2, 5})),
          y(xgrad::from_vector(std::vector<float>{0.5f, -0.25f}, {2, 1})),
          w1(xgrad::from_vector(pattern(30, 2, 0.4), {6, 5}).requires_grad_()),
          b1(xgrad::from_vector(pattern(6, 3, 0.1), {6}).requires_grad_()),
          w2(xgrad::from_vector(pattern(6, 4, 0.4), {1, 6}).requires_grad_()),
          b2(xgrad::from_vector(pattern(1, 5, 0.1), {1}).requires_grad_()) {}

    /// One forward, backward and SGD update (`p -= lr * p.grad`, then grads reset to undefined, as
    /// `zero_grad(set_to_none=True)`); returns the loss before the update.
    Tensor step(double lr) {
        Tensor h = xgrad::matmul(x, w1.t()).add(b1).relu();  // (2, 6)
        Tensor pred = xgrad::matmul(h, w2.t()).add(b2);      // (2, 1)
        Tensor loss = (pred - y).pow(2).mean();              // ()
        loss.backward();
        xgrad::NoGradGuard no_grad;
        for (Tensor* p : {&w1, &b1, &w2, &b2}) {
            p->add_(p->grad(), -lr);
            p->mutable_grad() = Tensor();
        }
        return loss;
    }
};

constexpr double kLr = 0.01;

void bench_tiny_step() {
    TinyNet net;
    auto samples = measure([&] { net.step(kLr); }, /*warmup=*/2000, /*min_reps=*/100, /*min_seconds=*/3.0,
                           /*max_reps=*/100000, /*batch=*/100);
    std::vector<double> us;
    for (double s : samples) us.push_back(s * 1e6);
    Stats s = stats_of(us);
    std::printf("%-22s %10.2f %-8s (p10 %.2f, p90 %.2f; %zu samples of 100 steps)\n", "tiny_step", s.median, "us/step",
                s.p10, s.p90, samples.size());
    result("tiny_step", s, "us");
}

/// (5) Flat memory: RSS after 10^3 and after 10^5 steps of a fresh net. The losses double as a
/// cross-check with PyTorch (same values in, same ops, float32).
void bench_memory() {
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
    std::printf("%-22s %10.2f MiB after 10^3 steps, %.2f MiB after 10^5 (growth %.2f MiB)\n", "rss", rss_1k, rss_100k,
                rss_100k - rss_1k);
    std::printf("%-22s %.8g after 10^3 steps, %.8g after 10^5\n", "tiny_loss", loss_1k, loss.item<float>());
    result("rss_1e3_steps", {rss_1k, rss_1k, rss_1k}, "MiB");
    result("rss_1e5_steps", {rss_100k, rss_100k, rss_100k}, "MiB");
    result("rss_growth", {rss_100k - rss_1k, rss_100k - rss_1k, rss_100k - rss_1k}, "MiB");
    result("tiny_loss_1e3", {loss_1k, loss_1k, loss_1k}, "loss");
    const float l = loss.item<float>();
    result("tiny_loss_1e5", {l, l, l}, "loss");
}

// ---- (2) elementwise and (3) reductions on 1024×1500 float32 --------------------------------------

constexpr std::int64_t kRows = 1024, kCols = 1500, kN = kRows * kCols;
constexpr double kF = 4.0;  // bytes per float32

/// Times `fn` (which returns a tensor that is dropped at once) and reports GB/s for `bytes` moved.
void bench_bytes(const std::string& name, double bytes, const std::function<Tensor()>& fn) {
    auto seconds = measure([&] { Tensor r = fn(); }, /*warmup=*/5, /*min_reps=*/30, /*min_seconds=*/0.5,
                           /*max_reps=*/400);
    report_rate(name, seconds, bytes, 1e9, "GB/s");
}

void bench_elementwise_and_reductions() {
    Tensor a = xgrad::from_vector(pattern(kN, 6, 2.0), {kRows, kCols});
    Tensor b = xgrad::from_vector(pattern(kN, 7, 2.0), {kRows, kCols});
    // Bytes counted as the logical traffic: every input read once, the output written once.
    bench_bytes("add", 3 * kN * kF, [&] { return a + b; });
    bench_bytes("mul", 3 * kN * kF, [&] { return a * b; });
    bench_bytes("exp", 2 * kN * kF, [&] { return a.exp(); });
    bench_bytes("relu", 2 * kN * kF, [&] { return a.relu(); });
    bench_bytes("mul2_add1", 2 * kN * kF, [&] { return a * 2.0 + 1.0; });  // two ops, counted as one pass
    bench_bytes("sum_dim", (kN + kRows) * kF, [&] { return a.sum(-1); });
    bench_bytes("mean_dim", (kN + kRows) * kF, [&] { return a.mean(-1); });
    bench_bytes("var_dim", (kN + kRows) * kF, [&] { return a.var(-1); });
    bench_bytes("sum_all", (kN + 1) * kF, [&] { return a.sum(); });
}

// ---- (4) matmul 1024×2048 · 2048×1500 ---------------------------------------------------------------

void bench_matmul() {
    const std::int64_t n = 1024, k = 2048, m = 1500;
    Tensor a = xgrad::from_vector(pattern(n * k, 8, 1.0), {n, k});
    Tensor b = xgrad::from_vector(pattern(k * m, 9, 1.0), {k, m});
    auto seconds = measure([&] { Tensor c = xgrad::matmul(a, b); }, /*warmup=*/1, /*min_reps=*/5,
                           /*min_seconds=*/4.0, /*max_reps=*/30);
    report_rate("matmul", seconds, 2.0 * n * k * m, 1e9, "GFLOP/s");
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
    // Optional filter: run only the benchmarks named on the command line (tiny, ew, mm, mem).
    auto wanted = [&](const char* what) {
        if (argc < 2) return true;
        for (int i = 1; i < argc; ++i)
            if (std::strcmp(argv[i], what) == 0) return true;
        return false;
    };
    const int threads = omp_get_max_threads();
    g_thread_clock = threads == 1;
    std::printf("xgrad bench: float32, %d OpenMP thread(s) (only matmul is threaded), timed by %s\n", threads,
                g_thread_clock ? "thread CPU time" : "wall time");
    std::printf("RESULT threads %d %d %d count\n", threads, threads, threads);
    if (wanted("tiny")) bench_tiny_step();
    if (wanted("ew")) bench_elementwise_and_reductions();
    if (wanted("mm")) bench_matmul();
    if (wanted("mem")) bench_memory();
    return 0;
}
