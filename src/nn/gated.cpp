// F::prelu and F::glu (computed without a record, then recorded with PyTorch's grad_fn and backward
// formulas), and their modules PReLU and GLU.
#include <string>
#include <vector>

#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/activation.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/ops.hpp"

namespace xgrad::nn::functional {

using detail::NeedsGrad;
using detail::Saved;
using Grads = detail::GradList;

Tensor prelu(const Tensor& input, const Tensor& weight) {
    const char* op = "prelu";
    detail::check_defined(input, op);
    detail::check_defined(weight, op);
    if (!input.is_floating_point() || weight.dtype() != input.dtype())
        detail::fail(op, "needs a floating-point input and a weight of its dtype, got " + to_string(input.dtype()) +
                             " and " + to_string(weight.dtype()));
    // One slope for everything, or one per channel: dim 1 of an input of two or more dims.
    const std::int64_t channels = input.dim() >= 2 ? input.size(1) : 1;
    if (weight.numel() != 1 && weight.numel() != channels)
        detail::fail(op, "Mismatch of parameter numbers and input channel size. Found parameter numbers = " +
                             std::to_string(weight.numel()) + " and channel size = " + std::to_string(channels) +
                             " (input shape " + to_string(input.shape()) + ")");
    Shape wshape(std::vector<std::int64_t>(static_cast<std::size_t>(input.dim()), 1));
    if (weight.numel() > 1) wshape[1] = channels;
    Tensor out;
    {
        NoGradGuard no_grad;
        const Tensor w = weight.reshape(wshape);
        out = where(input.gt(0.0), input, w * input);  // PyTorch's kernel: x > 0 ? x : w * x
    }
    if (detail::needs_grad({&input, &weight}))
        detail::record(out, "PreluBackward0", {&input, &weight},
                       [sx = Saved(input), sw = Saved(weight), wshape](const Tensor& g, const NeedsGrad& need) {
                           const Tensor &x = sx, &weight = sw;
                           const Tensor positive = x.gt(0.0), w = weight.reshape(wshape);
                           Tensor gx, gw;
                           if (need[0]) gx = where(positive, g, w * g);
                           if (need[1])
                               gw = detail::sum_to(where(positive, 0.0, x * g), wshape).reshape(weight.shape());
                           return Grads{gx, gw};
                       });
    return out;
}

Tensor glu(const Tensor& input, std::int64_t dim) {
    const char* op = "glu";
    detail::check_defined(input, op);
    if (input.dim() == 0) detail::fail(op, "does not support scalars because halving size must be even");
    const std::int64_t d = detail::wrap_dim(dim, input.dim(), op);
    if (input.size(d) % 2 != 0)
        detail::fail(op, "Halving dimension must be even, but dimension " + std::to_string(d) + " is size " +
                             std::to_string(input.size(d)) + " (shape " + to_string(input.shape()) + ")");
    const std::int64_t half = input.size(d) / 2;
    // One pass over the halves a and b, as PyTorch's glu kernel: a * (1 / (1 + exp(-b))).
    Tensor out = detail::map_binary(input.detach().narrow(d, 0, half), input.detach().narrow(d, half, half), op,
                                    kernels::BinaryOp::kGlu);
    if (detail::needs_grad({&input}))
        detail::record(out, "GluBackward0", {&input}, [sx = Saved(input), d, half](const Tensor& g, const NeedsGrad&) {
            // d(a σ(b)) = σ(b) da + (1 - σ(b)) σ(b) a db, the halves joined back along d, as PyTorch's
            // glu_backward: s = σ(b) from its sigmoid kernel, s g for the first half, and
            // (1 - s) s a g (its fused kernel's order) for the second; σ(b) recomputed in each pass.
            const Tensor& x = sx;
            const Tensor a = x.narrow(d, 0, half), b = x.narrow(d, half, half);
            return Grads{cat({detail::map_binary(g, b, "glu", kernels::BinaryOp::kGluBackwardFirst),
                              detail::map_binary(a, b, "glu", kernels::BinaryOp::kGluBackwardSecond) * g},
                             d)};
        });
    return out;
}

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

PReLU::PReLU(std::int64_t num_parameters, double init) : num_parameters_(num_parameters), init_(init) {
    if (num_parameters < 1)
        detail::fail("PReLU", "num_parameters must be positive, got " + std::to_string(num_parameters));
    weight = empty({num_parameters});
    register_parameter("weight", weight);
    initialize_parameters();
}

void PReLU::reset_parameters() {
    NoGradGuard no_grad;
    weight.fill_(init_);
}

Tensor PReLU::forward(const Tensor& input) {
    return functional::prelu(input, weight);
}

std::string PReLU::extra_repr() const {
    return "num_parameters=" + std::to_string(num_parameters_);
}

Tensor GLU::forward(const Tensor& input) {
    return functional::glu(input, dim_);
}

std::string GLU::extra_repr() const {
    return "dim=" + std::to_string(dim_);
}

}  // namespace xgrad::nn
