// The benches' shared inputs: the deterministic values every bench and its PyTorch twins use, and the
// tiny training step that bench_core, bench_cuda and bench_libtorch time.
#pragma once

#include <cstdint>
#include <vector>

#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace bench {

/// Deterministic float values with no RNG (bench_core.py and bench_cuda.py compute the same list):
/// `count` values in about [-scale, scale], spread by a multiplicative hash so that nothing is
/// constant or sorted.
inline std::vector<float> pattern(std::int64_t count, std::int64_t salt, double scale) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t k = (i * 37 + salt * 11) % 23;  // 0..22
        v[static_cast<std::size_t>(i)] = static_cast<float>((static_cast<double>(k) - 11.0) / 11.0 * scale);
    }
    return v;
}

/// pattern() as a tensor of `shape` on `device`.
inline xgrad::Tensor pattern_tensor(const xgrad::Shape& shape, std::int64_t salt, double scale,
                                    xgrad::Device device = xgrad::kCPU) {
    return xgrad::from_vector(pattern(shape.numel(), salt, scale), shape).to(device);
}

/// 2×5 input → Linear(5, 6) → relu → Linear(6, 1) → MSE, written with core ops only.
struct TinyNet {
    xgrad::Tensor x, y, w1, b1, w2, b2;

    explicit TinyNet(xgrad::Device device = xgrad::kCPU)
        : x(pattern_tensor({2, 5}, 1, 1.0, device)),
          y(xgrad::from_vector(std::vector<float>{0.5f, -0.25f}, {2, 1}).to(device)),
          w1(pattern_tensor({6, 5}, 2, 0.4, device).requires_grad_()),
          b1(pattern_tensor({6}, 3, 0.1, device).requires_grad_()),
          w2(pattern_tensor({1, 6}, 4, 0.4, device).requires_grad_()),
          b2(pattern_tensor({1}, 5, 0.1, device).requires_grad_()) {}

    /// One forward, backward and SGD update (`p -= lr * p.grad`, then grads reset to undefined, as
    /// `zero_grad(set_to_none=True)`); returns the loss before the update.
    xgrad::Tensor step(double lr) {
        xgrad::Tensor h = xgrad::matmul(x, w1.t()).add(b1).relu();  // (2, 6)
        xgrad::Tensor pred = xgrad::matmul(h, w2.t()).add(b2);      // (2, 1)
        xgrad::Tensor loss = (pred - y).pow(2).mean();              // ()
        loss.backward();
        xgrad::NoGradGuard no_grad;
        for (xgrad::Tensor* p : {&w1, &b1, &w2, &b2}) {
            p->add_(p->grad(), -lr);
            p->mutable_grad() = xgrad::Tensor();
        }
        return loss;
    }
};

}  // namespace bench
