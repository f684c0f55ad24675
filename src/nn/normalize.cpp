// F::normalize: rows divided by their clamped p-norm (any p, ±∞ included), with PyTorch's norm gradient.
#include <cmath>
#include <limits>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::nn::functional {

namespace {

/// `‖x‖_p` along `dim`, kept as a size-1 dim (PyTorch's `LinalgVectorNormBackward0`): Σ|x|^p to the
/// 1/p for a finite non-zero p, max |x| for +∞, min |x| for -∞, and the count of non-zeros for 0
/// (whose gradient is zero).
Tensor vector_norm_keepdim(const Tensor& x, double p, std::int64_t dim) {
    Tensor out;
    {
        NoGradGuard no_grad;
        Tensor xd = x.detach();
        out = p == 2.0        ? (xd * xd).sum({dim}, true).sqrt()
              : std::isinf(p) ? (p > 0 ? xd.abs().amax({dim}, true) : xd.abs().amin({dim}, true))
              : p == 0.0      ? xd.sign().abs().sum({dim}, true)
                              : xd.abs().pow(p).sum({dim}, true).pow(1.0 / p);
    }
    if (p == 0.0 || !detail::needs_grad({&x})) return out;
    detail::record(
        out, "LinalgVectorNormBackward0", {&x},
        [sx = detail::Saved(x.detach()), sn = detail::Saved(out), p, dim](const Tensor& g, const detail::NeedsGrad&) {
            const Tensor &x = sx, &n = sn;
            if (std::isinf(p)) {
                // PyTorch's norm_backward: the gradient shared evenly by the elements whose |x| is the
                // norm. (norm - |x|) has one sign along the row, so 1 - |sign| marks them exactly.
                const Tensor mask = 1.0 - (n - x.abs()).sign().abs();
                return std::vector<Tensor>{x.sign() * (g / mask.sum({dim}, true)) * mask};
            }
            if (p < 1.0) {
                // sgn(x) |x|^(p-1) ‖x‖^(1-p), 0 where x is 0 (|x| read as 1 there, times sign 0).
                const Tensor ax = x.abs() + (1.0 - x.sign().abs());
                return std::vector<Tensor>{x.sign() * ax.pow(p - 1.0) * (g * n.pow(1.0 - p))};
            }
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
    const std::int64_t d = detail::wrap_dim(dim, std::max<std::int64_t>(input.dim(), 1), op);
    return input / vector_norm_keepdim(input, p, d).clamp(eps).expand_as(input);
}

}  // namespace xgrad::nn::functional
