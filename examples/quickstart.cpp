// Quickstart: fit a linear model with xgrad's tensors, autograd and a hand-written SGD step.
#include <xgrad/xgrad.hpp>

#include <cstdio>

int main() {
    using xgrad::Tensor;
    // y = x · w_true + 0.5 with w_true = (1, -2, 0.5); xgrad must find w and b.
    Tensor x = xgrad::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.5}, {-1.0, 0.5, 2.0}, {0.0, -3.0, 1.0}});  // (4, 3)
    Tensor y = xgrad::matmul(x, xgrad::tensor({{1.0}, {-2.0}, {0.5}})) + 0.5;                          // (4, 1)

    Tensor w = xgrad::zeros({3, 1}).requires_grad_();  // leaves that require grad
    Tensor b = xgrad::zeros({1}).requires_grad_();
    const double lr = 0.02;
    for (int step = 0; step <= 2000; ++step) {
        Tensor loss = (xgrad::matmul(x, w) + b - y).pow(2).mean();  // mean squared error
        w.mutable_grad() = Tensor();                                // zero the gradients
        b.mutable_grad() = Tensor();
        loss.backward();
        {
            xgrad::NoGradGuard no_grad;  // the update must not be recorded
            w.sub_(w.grad() * lr);
            b.sub_(b.grad() * lr);
        }
        if (step % 500 == 0) std::printf("step %4d  loss %.6f\n", step, loss.item<double>());
    }
    auto wv = w.to_vector<double>();
    std::printf("w = (%.3f, %.3f, %.3f), b = %.3f\n", wv[0], wv[1], wv[2], b.item<double>());
}
