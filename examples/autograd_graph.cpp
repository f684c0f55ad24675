// The autograd graph of a small MLP's loss as Graphviz DOT text (render it with `dot -Tsvg`).
#include <xgrad/xgrad.hpp>

#include <iostream>

int main() {
    namespace nn = xgrad::nn;
    namespace F = xgrad::nn::functional;
    xgrad::manual_seed(0);
    nn::Sequential model(nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 2));
    xgrad::Tensor x = xgrad::randn({5, 3}), target = xgrad::randn({5, 2});
    xgrad::Tensor loss = F::mse_loss(model(x), target);
    std::cout << xgrad::autograd::to_dot(loss, model.named_parameters());
}
