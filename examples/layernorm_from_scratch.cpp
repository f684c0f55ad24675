// Notebook 002 ("LayerNorm from scratch") reproduced with xgrad, output for output.
//
// Each `>>>` line is the notebook's Python statement; the lines after it are what it printed.
// The values come from torch.manual_seed(123); the `notebook_layernorm_from_scratch` test checks
// them against the notebook. Two of its printed lines cannot be reproduced, by PyTorch 1.13 either:
// see the comments at "In [13]" and "In [14]".
//
// The idea: layer normalisation gives each sample's outputs mean 0 and variance 1,
//   mean u = (x1 + ... + xn) / n,   variance v = ((x1 - u)² + ... + (xn - u)²) / n,
//   normalised xi = (xi - u) / sqrt(v).
#include <xgrad/xgrad.hpp>

#include <iostream>

using xgrad::Tensor;
namespace nn = xgrad::nn;

// The notebook's LayerNorm: eps keeps the division finite; scale and shift (one per feature) let
// training undo the normalisation where that helps.
struct LayerNorm : nn::Module {
    double eps = 1e-5;
    Tensor scale, shift;

    explicit LayerNorm(std::int64_t emb_dim)
        : scale(xgrad::ones({emb_dim}).requires_grad_()), shift(xgrad::zeros({emb_dim}).requires_grad_()) {
        register_parameter("scale", scale);
        register_parameter("shift", shift);
    }

    Tensor forward(const Tensor& x) override {
        Tensor mean = x.mean(-1, /*keepdim=*/true);
        Tensor var = x.var(-1, /*unbiased=*/false, /*keepdim=*/true);  // divide by n, not n - 1
        Tensor norm_x = (x - mean) / xgrad::sqrt(var + eps);
        return scale * norm_x + shift;
    }
};

int main() {
    // In [3]: two samples of five features through Linear(5, 6) + ReLU.
    xgrad::manual_seed(123);
    Tensor batch_example = xgrad::randn({2, 5});
    std::cout << ">>> print(batch_example.shape)\n" << batch_example.shape() << "\n";

    nn::Sequential layer(nn::Linear(5, 6), nn::ReLU());
    Tensor out = layer(batch_example);
    std::cout << ">>> print(out)\n" << out << "\n";
    std::cout << ">>> print(out.shape)\n" << out.shape() << "\n\n";

    // In [None]: the mean and variance of each row.
    // The cell reads `variance = out.var(dim=-1, keepdim=True)`, yet the notebook printed for
    // `variance` the mean's numbers and grad_fn (MeanBackward1), and the next cell's printed
    // `out_norm` is (out - mean) / sqrt(mean), digit for digit. So when these cells ran, `variance`
    // held out.mean(dim=-1, keepdim=True); the cell was edited afterwards (it has no execution
    // count). We compute what actually ran, so that every later output follows.
    Tensor mean = out.mean(-1, /*keepdim=*/true);
    Tensor variance = out.mean(-1, /*keepdim=*/true);  // what ran; the cell shows out.var(...)
    std::cout << ">>> print(mean)\n" << mean << "\n";
    std::cout << ">>> print(variance)\n" << variance << "\n";
    std::cout << ">>> print(out.var(dim=-1, keepdim=True))  # not in the notebook: the variance the code asks for\n"
              << out.var(-1, /*unbiased=*/true, /*keepdim=*/true) << "\n\n";

    // In [13]: normalise. Because `variance` is the mean, the rows do not get variance 1 here.
    Tensor out_norm = (out - mean) / xgrad::sqrt(variance);
    std::cout << ">>> print(out_norm)\n" << out_norm << "\n";
    Tensor mean_norm = out_norm.mean(-1, /*keepdim=*/true);
    Tensor variance_norm = out_norm.var(-1, /*unbiased=*/true, /*keepdim=*/true);
    // The means are rounding noise, a few float32 ulps, which depend on the last bits of the Linear
    // outputs and so on the BLAS that computed them. The notebook printed 2.4835e-09 and 1.9868e-08;
    // from the same seed, PyTorch 1.13 on Debian's OpenBLAS prints 7.4506e-09 and -9.9341e-09, and
    // so does xgrad, which makes the same OpenBLAS calls and sums in PyTorch's order.
    std::cout << ">>> print(\" mean : \",mean_norm)\n"
              << " mean :  " << mean_norm << "\n";
    std::cout << ">>> print(\"var : \", variance_norm)\n"
              << "var :  " << variance_norm << "\n\n";

    // In [14]: without scientific notation the means print as zeros (with the sign of the noise,
    // so the second row reads -0.0000 here and 0.0000 in the notebook, as explained above).
    xgrad::set_printoptions({.sci_mode = false});
    std::cout << ">>> torch.set_printoptions(sci_mode=False)\n";
    std::cout << ">>> print(\" mean : \",mean_norm)\n"
              << " mean :  " << mean_norm << "\n";
    std::cout << ">>> print(\"var : \", variance_norm)\n"
              << "var :  " << variance_norm << "\n\n";

    // In [16], In [17]: the LayerNorm module on the raw batch: mean 0, (biased) variance 1.
    LayerNorm ln(/*emb_dim=*/5);
    Tensor out_ln = ln(batch_example);
    Tensor mean_ln = out_ln.mean(-1, /*keepdim=*/true);
    Tensor var_ln = out_ln.var(-1, /*unbiased=*/false, /*keepdim=*/true);
    std::cout << ">>> print(\"Mean:\\n\", mean)\n"
              << "Mean:\n " << mean_ln << "\n";
    std::cout << ">>> print(\"Variance:\\n\", var)\n"
              << "Variance:\n " << var_ln << "\n\n";

    // xgrad's built-in nn::LayerNorm computes the same thing in one fused kernel.
    nn::LayerNorm builtin({5});
    double diff = (builtin(batch_example) - out_ln).abs().max().item<double>();
    std::cout << "xgrad: " << builtin
              << " gives the same outputs (max |difference| < 1e-6): " << (diff < 1e-6 ? "True" : "False") << "\n";
    return diff < 1e-6 ? 0 : 1;
}
