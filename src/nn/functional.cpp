// torch.nn.functional's layer functions: linear, relu, gelu, dropout.
#include "xgrad/nn/functional.hpp"

#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/random.hpp"

namespace xgrad::nn::functional {

using detail::fail;
using Grads = std::vector<Tensor>;

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
    detail::check_defined(input, "linear");
    detail::check_defined(weight, "linear");
    if (weight.dim() != 2)
        fail("linear", "weight must be 2-D (out_features, in_features), got " + to_string(weight.shape()));
    if (input.dim() == 0 || input.size(-1) != weight.size(1))
        fail("linear", "input of shape " + to_string(input.shape()) + " does not match weight of shape " +
                           to_string(weight.shape()) + " (last dimension must be " + std::to_string(weight.size(1)) +
                           ")");
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0)))
        fail("linear", "bias of shape " + to_string(bias.shape()) + " does not match weight of shape " +
                           to_string(weight.shape()));
    Tensor out;
    {
        NoGradGuard no_grad;  // one node for the whole layer, recorded below
        out = matmul(input, weight.t());
        if (bias.defined()) out = out + bias;
    }
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    const char* name = input.dim() == 1   ? (bias.defined() ? "AddBackward0" : "SqueezeBackward1")
                       : input.dim() == 2 ? (bias.defined() ? "AddmmBackward0" : "MmBackward0")
                                          : (bias.defined() ? "ViewBackward0" : "UnsafeViewBackward0");
    detail::record(out, name, {&input, &weight, &bias},
                   [x = input.detach(), w = weight.detach(), has_bias = bias.defined()](const Tensor& g,
                                                                                        const detail::NeedsGrad& n) {
                       const std::int64_t in = w.size(1), outf = w.size(0);
                       Tensor g2 = g.reshape(Shape{-1, outf});  // (N, out)
                       Grads r(3);
                       if (n[0]) r[0] = matmul(g, w).reshape(x.shape());
                       if (n[1]) r[1] = matmul(g2.t(), x.reshape(Shape{-1, in}));
                       if (n[2] && has_bias) r[2] = g2.sum(0);
                       return r;
                   });
    return out;
}

Tensor relu(const Tensor& input) {
    return input.relu();
}

Tensor gelu(const Tensor& input, const std::string& approximate) {
    return input.gelu(approximate);
}

Tensor dropout(const Tensor& input, double p, bool training, Generator* gen) {
    detail::check_defined(input, "dropout");
    if (p < 0 || p > 1) fail("dropout", "probability has to be between 0 and 1, but got " + std::to_string(p));
    if (!training || p == 0) return input;
    if (p == 1) return input * zeros(Shape{}, TensorOptions(input.dtype()).device(input.device()));
    // PyTorch: noise = empty_like(input).bernoulli_(1 - p); noise.div_(1 - p); input * noise.
    Tensor noise = empty_like(input);
    bernoulli_(noise, 1 - p, gen);
    noise.div_(1 - p);
    return input * noise;
}

}  // namespace xgrad::nn::functional
