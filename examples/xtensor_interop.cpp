// xtensor interop: data prepared with xtensor, a model trained with xgrad, results read back through
// zero-copy xtensor views. xgrad/xtensor.hpp is opt-in; xgrad/xgrad.hpp does not include xtensor.
#include <xgrad/xgrad.hpp>
#include <xgrad/xtensor.hpp>

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xreducer.hpp>

int main() {
    using xgrad::Tensor;
    xgrad::manual_seed(0);

    // Data from xtensor: 8 points on y = 3x - 1, copied into tensors (float, so float32).
    xt::xarray<float> xs = xt::linspace<float>(-1.0f, 1.0f, 8);
    Tensor x = xgrad::from_xtensor(xs).reshape({8, 1});
    Tensor y = xgrad::from_xtensor(3.0f * xs - 1.0f).reshape({8, 1});

    xgrad::nn::Linear fit(1, 1);
    xgrad::optim::SGD opt(fit.parameters(), {.lr = 0.5});
    for (int step = 0; step < 50; ++step) {
        opt.zero_grad();
        xgrad::nn::functional::mse_loss(fit(x), y).backward();
        opt.step();
    }

    // The parameters through views of their memory: no copy (detach(): a view must not require grad).
    auto w = xgrad::as_xtensor<const float>(fit.weight.detach());
    auto b = xgrad::as_xtensor<const float>(fit.bias.detach());
    std::printf("fitted: w = %.3f, b = %.3f (the data: 3 and -1)\n", w(0, 0), b(0));

    // A view honours strides: the transpose of a (2, 3) tensor, summed by xtensor along its rows (the
    // lazy xtensor expression becomes a tensor again, to print it as PyTorch does).
    Tensor m = xgrad::arange(6.0, xgrad::kFloat64).reshape({2, 3});
    auto mt = xgrad::as_xtensor<double>(m.t());
    std::printf("mt(2, 1) = %.1f, the element at row 1, column 2 of m\n", mt(2, 1));
    std::cout << "sum over mt's axis 1: " << xgrad::from_xtensor(xt::sum(mt, {1})) << "\n";
    mt(2, 0) = -1.0;  // writes reach the tensor
    std::cout << "after mt(2, 0) = -1:\n" << m << "\n";

    // The view's element type must be the tensor's.
    try {
        xgrad::as_xtensor<float>(m);
    } catch (const std::invalid_argument& e) {
        std::cout << e.what() << "\n";
    }
}
