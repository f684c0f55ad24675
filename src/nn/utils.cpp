// clip_grad_norm_ and clip_grad_value_, as PyTorch 1.13's torch.nn.utils.clip_grad.
#include "xgrad/nn/utils.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/module.hpp"
#include "xgrad/ops.hpp"

namespace xgrad::nn::utils {

namespace {

/// torch.norm(g, p) of one tensor: max |g| for p = inf, else (Σ|g|^p)^(1/p), in PyTorch's order (norm()).
Tensor norm_of(const Tensor& g, double p) {
    if (std::isinf(p)) return g.abs().max();
    return g.norm(p);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
    if (!(norm_type > 0.0))
        xgrad::detail::fail("clip_grad_norm_",
                            "norm_type must be positive or inf, got " + python_float_repr(norm_type));
    NoGradGuard no_grad;
    std::vector<Tensor> grads;
    for (const auto& p : parameters)
        if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
    if (grads.empty()) return full({}, 0.0, kFloat32);
    const Device device = grads.front().device();
    std::vector<Tensor> norms;
    for (const auto& g : grads) norms.push_back(norm_of(g, norm_type).to(device));
    DType dtype = norms.front().dtype();
    for (const auto& n : norms)
        if (n.dtype() == kFloat64) dtype = kFloat64;  // torch.stack promotes
    for (auto& n : norms) n = n.to(dtype);
    const Tensor total = norms.size() == 1 && std::isinf(norm_type) ? norms.front() : norm_of(stack(norms), norm_type);
    if (error_if_nonfinite && !std::isfinite(total.to(kFloat64).item<double>()))
        throw std::runtime_error("clip_grad_norm_: The total norm of order " + python_float_repr(norm_type) +
                                 " for gradients from `parameters` is non-finite, so it cannot be clipped. To "
                                 "disable this error and scale the gradients by the non-finite norm anyway, set "
                                 "`error_if_nonfinite=False`");
    const Tensor coef = (max_norm / (total + 1e-6)).clamp(std::nullopt, 1.0);
    for (const auto& p : parameters)
        if (p.defined() && p.grad().defined()) {
            Tensor g = p.grad();
            g.mul_(coef.to(g.dtype()).to(g.device()));
        }
    return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
    NoGradGuard no_grad;
    for (const auto& p : parameters)
        if (p.defined() && p.grad().defined()) {
            Tensor g = p.grad();
            g.copy_(g.clamp(-clip_value, clip_value));
        }
}

}  // namespace xgrad::nn::utils
