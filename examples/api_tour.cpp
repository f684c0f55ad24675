// API tour: the program of the API contract (shared/API.md), compiled and run as a test so the contract holds.

#include <iostream>
#include <xgrad/xgrad.hpp>  // umbrella header; finer headers under include/xgrad/ are fine too

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;

int main() {
    // Random numbers: bit-identical to PyTorch's CPU generator for the same seed.
    xgrad::manual_seed(123);
    Tensor x = xgrad::randn({2, 5});  // float32, CPU
    Tensor u = xgrad::rand({1, 5, 10});
    Tensor c = xgrad::tensor({{0.2, 0.1, 0.3}, {0.5, 0.1, 0.1}});  // nested braces, float32
    Tensor d = xgrad::randn({3, 3}, xgrad::kFloat64);              // a dtype, or xgrad::TensorOptions
    Tensor z = xgrad::zeros({3}), o = xgrad::ones({2, 3}), f = xgrad::full({2, 2}, 0.5);

    // Printing: the same text PyTorch's Python repr prints, grad_fn included.
    nn::Sequential layer(nn::Linear(5, 6), nn::ReLU());
    Tensor out = layer(x);
    std::cout << out << "\n";          // tensor([[0.2260, 0.3470, ...]], grad_fn=<ReluBackward0>)
    std::cout << out.shape() << "\n";  // torch.Size([2, 6])
    xgrad::set_printoptions({.precision = 4, .sci_mode = false});

    // Reductions take a dim or a list of dims; the order of the flags is libtorch's.
    Tensor mean = out.mean(-1, /*keepdim=*/true);
    Tensor var = out.var(-1, /*unbiased=*/false, /*keepdim=*/true);
    Tensor m2 = out.mean({-2, -1}, true);
    Tensor s = out.std(-1, true, true), total = out.sum();

    // Elementwise maths with tensors and scalars on either side, broadcasting as in PyTorch.
    Tensor y = (out - mean) / (var + 1e-5).sqrt();
    Tensor r = x.pow(2).mean(-1, true).add(1e-6).rsqrt();  // also exp, log, abs, tanh, sigmoid, relu, ...
    Tensor p = xgrad::matmul(x, x.transpose(0, 1));        // and x.matmul(...), reshape, permute,
                                                           // unsqueeze, squeeze, view, slicing
    // Modules.
    nn::LayerNorm ln(1);  // giagrad's form: normalise over the last `dimensions` axes
    nn::LayerNorm ln2(2, 1e-5, /*elementwise_affine=*/false);
    nn::LayerNorm ln3(xgrad::Shape{5, 10});  // PyTorch's form: normalized_shape
    nn::RMSNorm rms(1);                      // same two forms; eps defaults as in torch.nn.RMSNorm
    std::cout << layer << "\n";              // Sequential(\n  (0): Linear(in_features=5, ...
    for (auto& [name, param] : layer.named_parameters()) std::cout << name << "\n";  // 0.weight ...

    // A user's own module: submodules as members, named "fc1.weight" etc. in named_parameters().
    //   struct Net : nn::Module { ... Tensor forward(const Tensor& x) override; };

    // Training.
    optim::Adam opt(layer.parameters(), {.lr = 1e-3});  // also SGD (momentum), AdamW
    Tensor target = xgrad::randn({2, 6});
    for (int step = 0; step < 100; ++step) {
        opt.zero_grad();
        Tensor loss = F::mse_loss(layer(x), target);  // also cross_entropy, nn::MSELoss ...
        loss.backward();
        opt.step();
    }
    {
        xgrad::NoGradGuard no_grad;  // no graph is recorded in this scope
        Tensor pred = layer(x);
    }
    xgrad::save(layer, "model.safetensors");  // PyTorch-compatible parameter names
    xgrad::load(layer, "model.safetensors");

    // Devices (when built with CUDA and a GPU is present).
    if (xgrad::cuda::is_available()) {
        Tensor g = xgrad::randn({2, 3}, xgrad::TensorOptions{.device = xgrad::kCUDA});  // same values as on the CPU
        Tensor h = g.cpu(), k = h.cuda(), m = h.to(xgrad::Device(xgrad::kCUDA, 0));
        layer.to(xgrad::kCUDA);
        Tensor xg = x.to(xgrad::kCUDA);
        std::cerr << layer(xg).cpu() << "\n";  // stderr: the checked output is the same with or without a GPU
    }
}
