// F::normalize: rows divided by their clamped p-norm (any p, ±∞ included), with PyTorch's norm gradient.
#include <cmath>
#include <limits>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/nn/module.hpp"

namespace xgrad::nn::functional {

Tensor normalize(const Tensor& input, double p, std::int64_t dim, double eps) {
    const char* op = "normalize";
    detail::check_defined(input, op);
    if (!input.is_floating_point()) detail::fail(op, "needs a floating-point tensor, got " + to_string(input.dtype()));
    const std::int64_t d = detail::wrap_dim(dim, std::max<std::int64_t>(input.dim(), 1), op);
    return input /
           detail::vector_norm(input, p, Dims{d}, true, op, "LinalgVectorNormBackward0").clamp(eps).expand_as(input);
}

}  // namespace xgrad::nn::functional
