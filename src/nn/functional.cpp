// torch.nn.functional's layer functions: linear, the activations, dropout.
#include "xgrad/nn/functional.hpp"

#include <cmath>
#include <optional>
#include <utility>

#include "detail/linalg.hpp"
#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/random.hpp"

namespace xgrad::nn::functional {

using detail::fail;
using Grads = detail::GradList;

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
    detail::check_defined(input, "linear");
    detail::check_defined(weight, "linear");
    if (weight.dim() != 2)
        fail("linear", "weight must be 2-D (out_features, in_features), got " + to_string(weight.shape()));
    if (input.dim() == 0 || input.size(-1) != weight.size(1))
        fail("linear", "input of shape " + to_string(input.shape()) + " does not match weight of shape " +
                           to_string(weight.shape()) + " (last dimension must be " + std::to_string(weight.size(1)) +
                           ")");
    // As PyTorch: no silent promotion, which would train a float32 layer in float64 (or the reverse).
    if (input.dtype() != weight.dtype())
        fail("linear", "expected input and weight to have the same dtype, but got " + to_string(input.dtype()) +
                           " (input) and " + to_string(weight.dtype()) + " (weight)");
    if (bias.defined() && bias.dtype() != weight.dtype())
        fail("linear", "expected bias and weight to have the same dtype, but got " + to_string(bias.dtype()) +
                           " (bias) and " + to_string(weight.dtype()) + " (weight)");
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0)))
        fail("linear", "bias of shape " + to_string(bias.shape()) + " does not match weight of shape " +
                           to_string(weight.shape()));
    // As PyTorch's F.linear: a 2-D input with a bias is one addmm (the bias copied into the output,
    // then BLAS adds x·Wᵀ to it, reading W transposed in place), and so is a contiguous 3-D input
    // viewed as 2-D; anything else is matmul(x, Wᵀ), then + bias. One node records the whole layer,
    // named as PyTorch names its output's grad_fn.
    const bool fused = bias.defined() && (input.dim() == 2 || (input.dim() == 3 && input.is_contiguous()));
    Tensor out;
    detail::BackwardFn backward;
    {
        NoGradGuard no_grad;
        DType t = detail::promote(input.dtype(), weight.dtype());
        if (bias.defined()) t = detail::promote(t, bias.dtype());
        const Tensor x = input.detach().to(t), wt = weight.detach().to(t).t();  // (..., in), (in, out)
        const Tensor b = bias.defined() ? bias.detach().to(t) : Tensor();
        if (fused) {
            const Tensor x2 = x.dim() == 3 ? x.view(Shape{-1, x.size(-1)}) : x;  // (N, in)
            const Tensor out2 = detail::addmm(b, x2, wt);                        // (N, out)
            out = x.dim() == 3 ? out2.view(Shape{x.size(0), x.size(1), wt.size(1)}) : out2;
            backward = [saved_x = detail::Saved(x2), saved_w = detail::Saved(wt), sx = x.shape(), sb = b.shape()](
                           const Tensor& g, const detail::NeedsGrad& n) {
                const Tensor &x2 = saved_x, &wt = saved_w;
                const Tensor g2 = g.dim() == 2 ? g : g.reshape(Shape{x2.size(0), wt.size(1)});  // (N, out)
                Grads r = detail::mm_backward(g2, x2, wt, n[0], n[1]);
                if (r[0].defined() && sx.size() != 2) r[0] = r[0].reshape(sx);
                if (r[1].defined()) r[1] = r[1].t();
                r.push_back(n[2] ? detail::sum_to(g2, sb) : Tensor());
                return r;
            };
        } else {
            detail::Product p = detail::matmul_product(x, wt);
            out = b.defined() ? p.out + b : p.out;
            backward = [bw = std::move(p.backward), sb = b.defined() ? b.shape() : Shape{}, has_bias = b.defined()](
                           const Tensor& g, const detail::NeedsGrad& n) {
                Grads r = bw(g, n);  // inputs 0 and 1 are x and Wᵀ
                if (r[1].defined()) r[1] = r[1].t();
                r.push_back(has_bias && n[2] ? detail::sum_to(g, sb) : Tensor());
                return r;
            };
        }
    }
    if (!detail::needs_grad({&input, &weight, &bias})) return out;
    const char* name = input.dim() == 1   ? (bias.defined() ? "AddBackward0" : "SqueezeBackward3")
                       : input.dim() == 2 ? (bias.defined() ? "AddmmBackward0" : "MmBackward0")
                       : bias.defined()   ? (fused ? "ViewBackward0" : "AddBackward0")
                                          : "UnsafeViewBackward0";
    detail::record(out, name, {&input, &weight, &bias}, std::move(backward));
    return out;
}

Tensor relu(const Tensor& input) {
    return input.relu();
}

Tensor gelu(const Tensor& input, const std::string& approximate) {
    return input.gelu(approximate);
}

namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;

/// An activation with a kernel of its own forward (`fwd`) and backward (`bwd`, from g and the input),
/// recorded as `name`; `a` and `b` are its parameters.
/// `fwd` of input with parameters (a, b), recorded with `bwd` of (g, input) and parameters (a, b_backward),
/// b_backward defaulting to b.
Tensor activation(const Tensor& input, const char* op, UnaryOp fwd, BinaryOp bwd, const char* name, double a = 0,
                  double b = 0, std::optional<double> b_backward = std::nullopt) {
    detail::check_defined(input, op);
    if (!input.is_floating_point()) fail(op, "needs a floating-point tensor, got " + to_string(input.dtype()));
    Tensor out = detail::map_unary(input, fwd, a, b);
    if (detail::needs_grad({&input}))
        detail::record(out, name, {&input},
                       [x = detail::Saved(input), op, bwd, a, b = b_backward.value_or(b)](const Tensor& g,
                                                                                          const detail::NeedsGrad&) {
                           // leaky_relu_backward's iterator lists the input before the gradient (its
                           // layout first); the others list the gradient first.
                           return Grads{detail::map_binary(g, x->to(g.dtype()), op, bwd, a, b,
                                                           bwd == BinaryOp::kLeakyReluBackward)};
                       });
    return out;
}

}  // namespace

Tensor silu(const Tensor& input) {
    return activation(input, "silu", UnaryOp::kSilu, BinaryOp::kSiluBackward, "SiluBackward0");
}

Tensor leaky_relu(const Tensor& input, double negative_slope) {
    return activation(input, "leaky_relu", UnaryOp::kLeakyRelu, BinaryOp::kLeakyReluBackward, "LeakyReluBackward0",
                      negative_slope);
}

Tensor elu(const Tensor& input, double alpha) {
    return activation(input, "elu", UnaryOp::kElu, BinaryOp::kEluBackward, "EluBackward0", alpha, 1.0);
}

Tensor selu(const Tensor& input) {
    return activation(input, "selu", UnaryOp::kSelu, BinaryOp::kSeluBackward, "EluBackward0");
}

Tensor celu(const Tensor& input, double alpha) {
    if (alpha == 0) fail("celu", "ZeroDivisionError: alpha cannot be 0 for CELU");
    // PyTorch 1.13's backward scales the input by 1 / alpha.toFloat(): alpha rounded to float first.
    return activation(input, "celu", UnaryOp::kElu, BinaryOp::kEluBackward, "CeluBackward0", alpha, 1.0 / alpha,
                      1.0 / static_cast<double>(static_cast<float>(alpha)));
}

Tensor softplus(const Tensor& input, double beta, double threshold) {
    return activation(input, "softplus", UnaryOp::kSoftplus, BinaryOp::kSoftplusBackward, "SoftplusBackward0", beta,
                      threshold);
}

Tensor mish(const Tensor& input) {
    return activation(input, "mish", UnaryOp::kMish, BinaryOp::kMishBackward, "MishBackward0");
}

Tensor hardtanh(const Tensor& input, double min_val, double max_val) {
    detail::check_defined(input, "hardtanh");
    if (input.dtype() == kBool) fail("hardtanh", "Bool inputs not supported for hardtanh");
    if (!input.is_floating_point()) {  // an integer clamp, the limits cast to the integer type, as PyTorch's
        if (input.dtype() == kUInt8 && (min_val < 0 || max_val < 0))
            fail("hardtanh", "cannot do hardtanh on an unsigned type with negative limits");
        return input.clamp(std::trunc(min_val), std::trunc(max_val));
    }
    return activation(input, "hardtanh", UnaryOp::kClamp, BinaryOp::kHardtanhBackward, "HardtanhBackward0", min_val,
                      max_val);
}

Tensor relu6(const Tensor& input) {
    return hardtanh(input, 0.0, 6.0);
}

Tensor hardswish(const Tensor& input) {
    return activation(input, "hardswish", UnaryOp::kHardswish, BinaryOp::kHardswishBackward, "HardswishBackward0");
}

Tensor hardsigmoid(const Tensor& input) {
    return activation(input, "hardsigmoid", UnaryOp::kHardsigmoid, BinaryOp::kHardsigmoidBackward,
                      "HardsigmoidBackward0");
}

Tensor logsigmoid(const Tensor& input) {
    return activation(input, "logsigmoid", UnaryOp::kLogSigmoid, BinaryOp::kLogSigmoidBackward, "LogSigmoidBackward0");
}

Tensor softsign(const Tensor& input) {
    detail::check_defined(input, "softsign");
    return input / (input.abs() + 1.0);
}

Tensor quick_gelu(const Tensor& input) {
    detail::check_defined(input, "quick_gelu");
    return input * (input * 1.702).sigmoid();
}

Tensor dropout(const Tensor& input, double p, bool training, Generator* gen) {
    detail::check_defined(input, "dropout");
    if (p < 0 || p > 1) fail("dropout", "probability has to be between 0 and 1, but got " + std::to_string(p));
    if (!training || p == 0) return input;
    if (p == 1) return input * zeros(Shape{}, FactoryOptions(input.dtype()).device(input.device()));
    // PyTorch: noise = empty_like(input).bernoulli_(1 - p); noise.div_(1 - p); input * noise.
    Tensor noise = empty_like(input);
    bernoulli_(noise, 1 - p, gen);
    noise.div_(1 - p);
    return input * noise;
}

}  // namespace xgrad::nn::functional
