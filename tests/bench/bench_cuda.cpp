// xgrad's GPU benchmark: the CUDA workloads of the CUDA issue, timed with the same sizes, values and
// accounting as bench_cuda.py, its PyTorch twin on the same GPU. bench_cuda.sh runs both and joins
// them with join_results.awk (the output protocol is bench_core.cpp's: RESULT, GROUP and GOAL lines).
//
// Timing: wall time around a batch of calls, closed by xgrad::cuda::synchronize(), so that a sample
// is the time the GPU (and the host's launches) took per call; medians over many samples after a
// warm-up that also fills the caching allocator. The "% limit" column compares GB/s rows with
// `limit_gbs`: a device-to-device copy of 1 GiB measured in the same run, counted as bytes read plus
// bytes written (the fast end, p90, of its samples).
//
// Groups named on the command line (norm linear mlp tiny; none means all) run alone, as in
// bench_core; the copy that sets the limit always runs. bench_cuda.sh passes XGRAD_BENCH_ONLY's.
//
// Without a GPU (or without the CUDA backend) it says so and exits 0: there is nothing to measure.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "xgrad/autograd.hpp"
#include "xgrad/cuda.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/optim.hpp"
#include "xgrad/random.hpp"
#include "xgrad/tensor.hpp"

#include "bench_inputs.hpp"
#include "bench_report.hpp"

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;

namespace {

using bench::goal;
using bench::group;
using bench::report_rate;
using bench::result;
using bench::Stats;
using bench::stats_of;
using Clock = std::chrono::steady_clock;

/// Seconds per call of `fn`: `warmup` unmeasured calls, then samples of `batch` calls each (closed by a
/// synchronisation), at least `min_reps` of them and more until `min_seconds` have passed.
std::vector<double> measure(const std::function<void()>& fn, int warmup, int min_reps, double min_seconds, int batch) {
    for (int i = 0; i < warmup; ++i) fn();
    xgrad::cuda::synchronize();
    std::vector<double> per_call;
    const auto start = Clock::now();
    for (;;) {
        const auto t0 = Clock::now();
        for (int i = 0; i < batch; ++i) fn();
        xgrad::cuda::synchronize();
        per_call.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / batch);
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (static_cast<int>(per_call.size()) >= min_reps && (elapsed >= min_seconds || per_call.size() >= 10000))
            break;
    }
    return per_call;
}

/// pattern_tensor() on the GPU: made on the CPU and copied.
Tensor pattern_tensor(const xgrad::Shape& shape, std::int64_t salt, double scale) {
    return bench::pattern_tensor(shape, salt, scale, xgrad::kCUDA);
}

constexpr double kF = 4.0;  // bytes per float32

void bench_copy() {
    group("device limits, measured");
    const std::int64_t n = std::int64_t{256} << 20;  // 1 GiB of float32
    const xgrad::TensorOptions gpu{.device = xgrad::kCUDA};
    Tensor a = xgrad::zeros({n}, gpu), b = xgrad::ones({n}, gpu);
    const double fast = report_rate("dram_copy_gpu", measure([&] { a.copy_(b); }, 3, 20, 1.0, 5),
                                    2.0 * kF * static_cast<double>(n), 1e9, "GB/s")
                            .p90;
    result("limit_gbs", fast, "GB/s");
}

// ---- LayerNorm and RMSNorm (bench_core.cpp's accounting) ------------------------------------------

constexpr double kLnEps = 1e-5, kRmsEps = 1e-6;

void bench_norms() {
    group("LayerNorm and RMSNorm on the GPU, float32 (PyTorch: F.layer_norm and F.rms_norm)");
    const std::pair<std::int64_t, std::int64_t> sizes[] = {{16384, 768}, {4096, 4096}, {1024, 1500}};
    for (auto [rows, cols] : sizes) {
        const std::string size = std::to_string(rows) + "x" + std::to_string(cols);
        const double n = static_cast<double>(rows * cols), c = static_cast<double>(cols);
        Tensor x = pattern_tensor({rows, cols}, 10, 1.0);
        Tensor w = pattern_tensor({cols}, 11, 0.5).add(1.0);
        Tensor b = pattern_tensor({cols}, 12, 0.1);
        Tensor dy = pattern_tensor({rows, cols}, 13, 1.0);
        const xgrad::Shape shape{cols};
        {  // what a plain copy of x achieves at this size: the norms' ceiling short of the 1 GiB limit
            Tensor x2 = x.clone();
            report_rate("copy_" + size, measure([&] { x2.copy_(x); }, 5, 20, 0.5, 20), 2 * n * kF, 1e9, "GB/s");
        }
        for (bool rms : {false, true}) {
            const std::string kind = rms ? "rmsnorm" : "layernorm";
            {
                xgrad::NoGradGuard no_grad;
                auto fwd = [&] {
                    Tensor y = rms ? F::rms_norm(x, shape, w, kRmsEps) : F::layer_norm(x, shape, w, b, kLnEps);
                };
                report_rate(kind + "_fwd_" + size, measure(fwd, 5, 20, 0.5, 20), (2 * n + (rms ? 1 : 2) * c) * kF, 1e9,
                            "GB/s");
                goal(kind + "_fwd_" + size, "limit", 85);
                goal(kind + "_fwd_" + size, "ratio", 1);
            }
            Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_(), bg = b.detach().requires_grad_();
            auto fwd_bwd = [&] {
                Tensor y = rms ? F::rms_norm(xg, shape, wg, kRmsEps) : F::layer_norm(xg, shape, wg, bg, kLnEps);
                y.backward(dy);
                for (Tensor* p : {&xg, &wg, &bg}) p->mutable_grad() = Tensor();
            };
            report_rate(kind + "_fwdbwd_" + size, measure(fwd_bwd, 5, 20, 0.5, 10), (5 * n + (rms ? 3 : 5) * c) * kF,
                        1e9, "GB/s");
            goal(kind + "_fwdbwd_" + size, "limit", 75);
            goal(kind + "_fwdbwd_" + size, "ratio", 1);
        }
    }
}

// ---- Linear, the MLP step and the tiny step ---------------------------------------------------------

void bench_linear() {
    group("Linear 4096 -> 4096 on a batch of 4096, float32 through cuBLAS (TF32 off on both sides)");
    const std::int64_t n = 4096, k = 4096, m = 4096;
    xgrad::manual_seed(0);
    nn::Linear fc(k, m);
    fc.to(xgrad::kCUDA);
    Tensor x = pattern_tensor({n, k}, 14, 1.0).requires_grad_();
    Tensor dy = pattern_tensor({n, m}, 15, 0.01);
    auto fwd_bwd = [&] {
        Tensor y = fc(x);
        y.backward(dy);
        for (Tensor* p : {&x, &fc.weight, &fc.bias}) p->mutable_grad() = Tensor();
    };
    report_rate("linear_fwdbwd_4096", measure(fwd_bwd, 3, 10, 1.0, 5), 3 * 2.0 * n * k * m, 1e9, "GFLOP/s");
    goal("linear_fwdbwd_4096", "ratio", 0.95);
}

/// bench_core.cpp's MLP step (784-512-512-10, LayerNorm after each hidden Linear, batch 256,
/// cross-entropy, Adam lr 1e-3; PyTorch's weights for manual_seed(0)), on the GPU.
void bench_mlp() {
    group("MLP training step on the GPU: 784-512-512-10, LayerNorm, batch 256, cross-entropy, Adam");
    xgrad::manual_seed(0);
    nn::Sequential model(nn::Linear(784, 512), nn::LayerNorm({512}), nn::ReLU(), nn::Linear(512, 512),
                         nn::LayerNorm({512}), nn::ReLU(), nn::Linear(512, 10));
    model.to(xgrad::kCUDA);
    xgrad::optim::Adam opt(model.parameters(), {.lr = 1e-3});
    Tensor x = pattern_tensor({256, 784}, 17, 1.0);
    std::vector<std::int64_t> y(256);
    for (std::int64_t i = 0; i < 256; ++i) y[static_cast<std::size_t>(i)] = (i * 7 + 3) % 10;
    Tensor labels = xgrad::from_vector(y, {256}, xgrad::kInt64).to(xgrad::kCUDA);
    Tensor loss;
    auto step = [&] {
        opt.zero_grad();
        loss = F::cross_entropy(model(x), labels);
        loss.backward();
        opt.step();
    };
    for (int i = 0; i < 3; ++i) step();
    const float loss3 = loss.item<float>();  // the same weights, data and maths as PyTorch's
    Stats t = stats_of(measure(step, 5, 20, 2.0, 10));
    std::printf("%-26s %10.2f steps/s (median %.4f ms)\n", "mlp_step_gpu", 1 / t.median, t.median * 1e3);
    result("mlp_step_gpu", {1 / t.median, 1 / t.p90, 1 / t.p10}, "steps/s");
    goal("mlp_step_gpu", "ratio", 1.5);
    result("mlp_loss_3_gpu", loss3, "loss");
}

/// bench_core.cpp's tiny step (2x5 -> Linear(5,6) -> relu -> Linear(6,1) -> MSE, SGD by hand), on the
/// GPU: launch-bound, µs per step.
void bench_tiny() {
    group("tiny training step on the GPU (launch-bound)");
    bench::TinyNet net(xgrad::kCUDA);
    auto step = [&] { net.step(0.01); };
    std::vector<double> us;
    for (double s : measure(step, 200, 20, 2.0, 100)) us.push_back(s * 1e6);
    Stats s = stats_of(us);
    std::printf("%-26s %10.2f us/step (p10 %.2f, p90 %.2f)\n", "tiny_step_gpu", s.median, s.p10, s.p90);
    result("tiny_step_gpu", s, "us");
    goal("tiny_step_gpu", "ratio", 1);
}

}  // namespace

int main(int argc, char** argv) {
    if (!xgrad::cuda::is_available()) {
        std::printf("bench_cuda: no CUDA GPU (or xgrad built without its CUDA backend): nothing to measure\n");
        return 0;
    }
    std::printf("xgrad GPU bench: float32, %d CUDA device(s), timed by wall time around synchronised batches\n",
                xgrad::cuda::device_count());
    auto wanted = [&](const std::string& what) {
        if (argc < 2) return true;
        for (int i = 1; i < argc; ++i)
            if (what == argv[i]) return true;
        return false;
    };
    bench_copy();
    if (wanted("norm")) bench_norms();
    if (wanted("linear")) bench_linear();
    if (wanted("mlp")) bench_mlp();
    if (wanted("tiny")) bench_tiny();
    return 0;
}
