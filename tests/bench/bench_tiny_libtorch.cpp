// bench_core's tiny training step in xgrad and in libtorch (PyTorch's C++ API), in one process: the
// comparison the performance issue asks for, which bench_core.py's Python twin overstates by the
// interpreter's cost per op.
//
// Usage: bench_tiny_libtorch [--threads N]
// The two sides take turns (2000 xgrad steps, then 100 libtorch steps, a sample each) for at least 4 s,
// so that both meet the host in the same state: its speed drifts by up to half between minutes. Same
// net, values and update as bench_core's TinyNet; process CPU time at one thread, wall time at more.
// Prints readable lines, then xgrad's figure as `XGRAD RESULT tiny_step_libtorch ...` (with its GOAL)
// and libtorch's as `RESULT tiny_step_libtorch ...`: run_bench.sh files them on their sides.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_inputs.hpp"
#include "bench_report.hpp"
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

}  // namespace

int main(int argc, char** argv) {
    int threads = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: bench_tiny_libtorch [--threads N]\n");
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    torch::set_num_threads(threads);
    xgrad::set_num_threads(threads);

    TorchNet tnet;
    bench::TinyNet xnet;
    const double lr = 0.01;
    const bench::Timer timer = threads > 1 ? bench::Timer::kWall : bench::Timer::kProcessCpu;
    constexpr int kXgradBatch = 2000, kTorchBatch = 100;  // about as long each (a few ms)
    for (int i = 0; i < 2000; ++i) {
        tnet.step(lr);
        xnet.step(lr);
    }
    std::vector<double> xs, ts, ratios;  // µs per step; libtorch's time over xgrad's, per pair
    const auto start = std::chrono::steady_clock::now();
    while (xs.size() < 10000) {
        const double t0 = bench::now_seconds(timer);
        for (int i = 0; i < kXgradBatch; ++i) xnet.step(lr);
        const double t1 = bench::now_seconds(timer);
        for (int i = 0; i < kTorchBatch; ++i) tnet.step(lr);
        const double t2 = bench::now_seconds(timer);
        xs.push_back((t1 - t0) / kXgradBatch * 1e6);
        ts.push_back((t2 - t1) / kTorchBatch * 1e6);
        ratios.push_back(ts.back() / xs.back());
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (xs.size() >= 100 && elapsed >= 4.0) break;
    }
    const bench::Stats x = bench::stats_of(xs), t = bench::stats_of(ts), r = bench::stats_of(ratios);
    std::printf("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; %zu samples of %d steps, taking turns with libtorch)\n",
                "tiny_step (xgrad)", x.median, "us/step", x.p10, x.p90, xs.size(), kXgradBatch);
    std::printf("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; %zu samples of %d steps; libtorch %s)\n", "tiny_step_libtorch",
                t.median, "us/step", t.p10, t.p90, ts.size(), kTorchBatch, TORCH_VERSION);
    std::printf("%-26s %10.2f x       (p10 %.2f, p90 %.2f; libtorch's time over xgrad's, turn by turn)\n",
                "paired ratio", r.median, r.p10, r.p90);
    std::printf("XGRAD RESULT tiny_step_libtorch %.6g %.6g %.6g us\n", x.median, x.p10, x.p90);
    std::printf("XGRAD GOAL tiny_step_libtorch ratio 20\n");
    bench::result("tiny_step_libtorch", t, "us");
    return 0;
}
