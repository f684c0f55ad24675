// Workloads timed in xgrad and in libtorch (PyTorch's C++ API) in one process, taking turns: the tiny
// training step, which bench_core.py's Python twin overstates by the interpreter's cost per op, and the
// large matrix products, whose comparison across two processes minutes apart measures the host's phase
// as much as the libraries (both sides call the same OpenBLAS).
//
// Usage: bench_libtorch [--threads N] [tiny] [mm]     (no group: tiny)
// Each pair of samples is one turn of xgrad then one of libtorch, so that both meet the host in the same
// state: its speed drifts by up to half between minutes. Process CPU time at one thread, wall time at
// more. Prints readable lines, then each row twice: xgrad's figure as `XGRAD RESULT name ...` (with its
// GOAL lines) and libtorch's as `RESULT name ...`; run_bench.sh files them on their sides.
//   tiny: tiny_step_libtorch, the same net, values and update as bench_core's TinyNet.
//   mm:   matmul_1024_libtorch, matmul_2048_libtorch and bmm_32x256_libtorch, bench_core's products
//         and inputs.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_inputs.hpp"
#include "bench_report.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/parallel.hpp"

namespace {

/// 2x5 -> Linear(5, 6) -> relu -> Linear(6, 1) -> MSE, SGD, as bench_core's TinyNet, in libtorch.
struct TorchNet {
    torch::Tensor x = torch::tensor(bench::pattern(10, 1, 1.0)).reshape({2, 5});
    torch::Tensor y = torch::tensor(std::vector<float>{0.5f, -0.25f}).reshape({2, 1});
    torch::Tensor w1 = torch::tensor(bench::pattern(30, 2, 0.4)).reshape({6, 5}).requires_grad_();
    torch::Tensor b1 = torch::tensor(bench::pattern(6, 3, 0.1)).requires_grad_();
    torch::Tensor w2 = torch::tensor(bench::pattern(6, 4, 0.4)).reshape({1, 6}).requires_grad_();
    torch::Tensor b2 = torch::tensor(bench::pattern(1, 5, 0.1)).requires_grad_();

    void step(double lr) {
        torch::Tensor h = torch::matmul(x, w1.t()).add(b1).relu();  // (2, 6)
        torch::Tensor pred = torch::matmul(h, w2.t()).add(b2);      // (2, 1)
        torch::Tensor loss = (pred - y).pow(2).mean();              // ()
        loss.backward();
        torch::NoGradGuard no_grad;
        for (torch::Tensor* p : {&w1, &b1, &w2, &b2}) {
            p->add_(p->grad(), -lr);
            p->mutable_grad() = torch::Tensor();
        }
    }
};

/// Seconds per call of each side, sample by sample, and libtorch's time over xgrad's, turn by turn.
struct Turns {
    std::vector<double> xgrad, torch, ratio;
};

/// `xgrad_batch` calls of `xgrad_fn`, then `torch_batch` calls of `torch_fn`, a sample each, for at
/// least `min_samples` turns and `min_seconds` of wall time (at most 10000 turns).
Turns take_turns(const std::function<void()>& xgrad_fn, int xgrad_batch, const std::function<void()>& torch_fn,
                 int torch_batch, std::size_t min_samples, double min_seconds, bench::Timer timer) {
    Turns t;
    const auto start = std::chrono::steady_clock::now();
    while (t.xgrad.size() < 10000) {
        const double t0 = bench::now_seconds(timer);
        for (int i = 0; i < xgrad_batch; ++i) xgrad_fn();
        const double t1 = bench::now_seconds(timer);
        for (int i = 0; i < torch_batch; ++i) torch_fn();
        const double t2 = bench::now_seconds(timer);
        t.xgrad.push_back((t1 - t0) / xgrad_batch);
        t.torch.push_back((t2 - t1) / torch_batch);
        t.ratio.push_back(t.torch.back() / t.xgrad.back());
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (t.xgrad.size() >= min_samples && elapsed >= min_seconds) break;
    }
    return t;
}

void tiny(bench::Timer timer) {
    TorchNet tnet;
    bench::TinyNet xnet;
    const double lr = 0.01;
    constexpr int kXgradBatch = 2000, kTorchBatch = 100;  // about as long each (a few ms)
    for (int i = 0; i < 2000; ++i) {
        tnet.step(lr);
        xnet.step(lr);
    }
    Turns t = take_turns([&] { xnet.step(lr); }, kXgradBatch, [&] { tnet.step(lr); }, kTorchBatch, 100, 4.0, timer);
    for (std::vector<double>* v : {&t.xgrad, &t.torch})
        for (double& s : *v) s *= 1e6;  // µs per step
    const bench::Stats x = bench::stats_of(t.xgrad), p = bench::stats_of(t.torch), r = bench::stats_of(t.ratio);
    std::printf("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; %zu samples of %d steps, taking turns with libtorch)\n",
                "tiny_step (xgrad)", x.median, "us/step", x.p10, x.p90, t.xgrad.size(), kXgradBatch);
    std::printf("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; %zu samples of %d steps; libtorch %s)\n", "tiny_step_libtorch",
                p.median, "us/step", p.p10, p.p90, t.torch.size(), kTorchBatch, TORCH_VERSION);
    std::printf("%-26s %10.2f x       (p10 %.2f, p90 %.2f; libtorch's time over xgrad's, turn by turn)\n",
                "paired ratio", r.median, r.p10, r.p90);
    std::printf("XGRAD RESULT tiny_step_libtorch %.6g %.6g %.6g us\n", x.median, x.p10, x.p90);
    std::printf("XGRAD GOAL tiny_step_libtorch ratio 20\n");
    bench::result("tiny_step_libtorch", p, "us");
}

/// bench_core's matrix products (its pattern inputs), one xgrad call then one libtorch call a turn.
void matmul(bench::Timer timer) {
    struct Case {
        std::string name;
        std::vector<std::int64_t> shape;
    };
    for (const Case& c : {Case{"matmul_1024_libtorch", {1024, 1024}}, Case{"matmul_2048_libtorch", {2048, 2048}},
                          Case{"bmm_32x256_libtorch", {32, 256, 256}}}) {
        const xgrad::Shape shape(c.shape);
        const xgrad::Tensor xa = bench::pattern_tensor(shape, 8, 1.0), xb = bench::pattern_tensor(shape, 9, 1.0);
        const torch::Tensor ta = torch::tensor(bench::pattern(shape.numel(), 8, 1.0)).reshape(c.shape);
        const torch::Tensor tb = torch::tensor(bench::pattern(shape.numel(), 9, 1.0)).reshape(c.shape);
        const std::int64_t n = c.shape.back();
        const double flops = 2.0 * static_cast<double>(shape.numel()) * static_cast<double>(n);
        auto x_call = [&] { xgrad::Tensor r = xgrad::matmul(xa, xb); };
        auto t_call = [&] { torch::Tensor r = torch::matmul(ta, tb); };
        x_call();
        t_call();
        const Turns t = take_turns(x_call, 1, t_call, 1, 9, 2.5, timer);
        auto rate = [&](const std::vector<double>& s) {
            const bench::Stats q = bench::stats_of(s);
            return bench::Stats{flops / q.median / 1e9, flops / q.p90 / 1e9, flops / q.p10 / 1e9};
        };
        const bench::Stats x = rate(t.xgrad), p = rate(t.torch), r = bench::stats_of(t.ratio);
        std::printf("%-26s %10.2f GFLOP/s (p10 %.2f, p90 %.2f; xgrad, %zu turns with libtorch)\n", c.name.c_str(),
                    x.median, x.p10, x.p90, t.xgrad.size());
        std::printf("%-26s %10.2f GFLOP/s (p10 %.2f, p90 %.2f; libtorch %s)\n", c.name.c_str(), p.median, p.p10, p.p90,
                    TORCH_VERSION);
        std::printf("%-26s %10.2f x       (p10 %.2f, p90 %.2f; libtorch's time over xgrad's, turn by turn)\n",
                    "paired ratio", r.median, r.p10, r.p90);
        std::printf("XGRAD RESULT %s %.6g %.6g %.6g GFLOP/s\n", c.name.c_str(), x.median, x.p10, x.p90);
        std::printf("XGRAD GOAL %s limit 80\n", c.name.c_str());
        bench::result(c.name, p, "GFLOP/s");
    }
}

}  // namespace

int main(int argc, char** argv) {
    int threads = 1;
    bool want_tiny = false, want_mm = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "tiny") == 0) {
            want_tiny = true;
        } else if (std::strcmp(argv[i], "mm") == 0) {
            want_mm = true;
        } else {
            std::fprintf(stderr, "usage: bench_libtorch [--threads N] [tiny] [mm]\n");
            return 2;
        }
    }
    if (!want_tiny && !want_mm) want_tiny = true;
    if (threads < 1) threads = 1;
    torch::set_num_threads(threads);
    xgrad::set_num_threads(threads);
    const bench::Timer timer = threads > 1 ? bench::Timer::kWall : bench::Timer::kProcessCpu;
    if (want_tiny) tiny(timer);
    if (want_mm) matmul(timer);
    return 0;
}
