// A first training script: a small MLP learns y = x^3 - x with nn::Sequential, Adam and mse_loss.
// The getting-started page shows it; the install tests build it against an installed xgrad (with
// pkg-config and with CMake) and in a meson project that uses xgrad as a subproject.
#include <xgrad/xgrad.hpp>

#include <cstdio>
#include <iostream>

namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
using xgrad::Tensor;

int main() {
    xgrad::manual_seed(0);  // the same initial weights as torch.manual_seed(0) gives in PyTorch

    Tensor x = xgrad::arange(-2.0, 2.0, 0.1).reshape({-1, 1});  // (40, 1)
    Tensor y = x.pow(3) - x;                                    // (40, 1)

    nn::Sequential model(nn::Linear(1, 16), nn::Tanh(), nn::Linear(16, 1));
    xgrad::optim::Adam opt(model.parameters(), {.lr = 0.05});
    for (int step = 1; step <= 300; ++step) {
        opt.zero_grad();
        Tensor loss = F::mse_loss(model(x), y);
        loss.backward();
        opt.step();
        if (step % 100 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item<float>());
    }

    xgrad::NoGradGuard no_grad;  // evaluation only: no graph is recorded
    Tensor probe = xgrad::tensor({{-1.5}, {0.5}, {1.5}});
    std::cout << "x^3 - x at -1.5, 0.5, 1.5:\n" << (probe.pow(3) - probe).t() << "\n";
    std::cout << "the model's prediction:\n" << model(probe).t() << "\n";
}
