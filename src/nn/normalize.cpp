// F::normalize: rows divided by their clamped p-norm, with a norm whose gradient is 0 at 0.
#include <cmath>
#include <limits>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::nn::functional {

namespace {

/// `‖x‖_p` along `dim`, kept as a size-1 dim (PyTorch's `LinalgVectorNormBackward0`).
Tensor vector_norm_keepdim(const Tensor& x, double p, std::int64_t dim) {
    Tensor out;
    {
        NoGradGuard no_grad;
        Tensor xd = x.detach();
        out = p == 2.0 ? (xd * xd).sum({dim}, true).sqrt() : xd.abs().pow(p).sum({dim}, true).pow(1.0 / p);
    }
    if (detail::needs_grad({&x}))
        detail::record(
            out, "LinalgVectorNormBackward0", {&x},
            [sx = detail::Saved(x.detach()), sn = detail::Saved(out), p](const Tensor& g, const detail::NeedsGrad&) {
                const Tensor &x = sx, &n = sn;
                // d‖x‖/dx = x |x|^(p-2) / ‖x‖^(p-1); clamping |x| and ‖x‖ at the smallest
                // normal number makes it exactly 0 where x (or the whole row) is 0.
                const double tiny = x.dtype() == kFloat64 ? std::numeric_limits<double>::min()
                                                          : static_cast<double>(std::numeric_limits<float>::min());
                if (p == 2.0) return std::vector<Tensor>{x * (g / n.clamp(tiny))};
                Tensor scale = x.abs().clamp(tiny).pow(p - 2.0);
                return std::vector<Tensor>{x * scale * (g / n.clamp(tiny).pow(p - 1.0))};
            });
    return out;
}

}  // namespace

Tensor normalize(const Tensor& input, double p, std::int64_t dim, double eps) {
    const char* op = "normalize";
    detail::check_defined(input, op);
    if (!input.is_floating_point()) detail::fail(op, "needs a floating-point tensor, got " + to_string(input.dtype()));
    if (!(p >= 1.0) || std::isinf(p)) detail::fail(op, "p must be a finite number >= 1, got " + python_float_repr(p));
    const std::int64_t d = detail::wrap_dim(dim, std::max<std::int64_t>(input.dim(), 1), op);
    return input / vector_norm_keepdim(input, p, d).clamp(eps).expand_as(input);
}

}  // namespace xgrad::nn::functional
