// F::cosine_similarity and F::pairwise_distance, in PyTorch 1.13's steps (so its grad_fn names and
// gradients), and their modules.
#include "xgrad/nn/distance.hpp"

#include <cmath>
#include <string>

#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/ops.hpp"

namespace xgrad::nn::functional {

namespace {

/// √max(s, eps²) of a squared norm `s`, recorded as PyTorch's `SqrtBackward0` of s clamped in place
/// without a record: the gradient passes to s as g / (2 √·) wherever s was clamped too.
Tensor clamped_sqrt(const Tensor& s, double eps) {
    Tensor n;
    {
        NoGradGuard no_grad;
        n = s.clamp(eps * eps).sqrt();
    }
    if (detail::needs_grad({&s}))
        detail::record(n, "SqrtBackward0", {&s}, [sn = detail::Saved(n)](const Tensor& g, const detail::NeedsGrad&) {
            return detail::GradList{g / (sn.get() * 2.0)};
        });
    return n;
}

void check_floating(const Tensor& x1, const Tensor& x2, const char* op) {
    detail::check_defined(x1, op);
    detail::check_defined(x2, op);
    if (!x1.is_floating_point() || !x2.is_floating_point())
        detail::fail(op,
                     "needs floating-point tensors, got " + to_string(x1.dtype()) + " and " + to_string(x2.dtype()));
}

}  // namespace

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, std::int64_t dim, double eps) {
    const char* op = "cosine_similarity";
    check_floating(x1, x2, op);
    // PyTorch 1.13: both inputs expanded to their common shape, each divided by its norm (the
    // squared norm clamped at eps² out of autograd's sight), then the products summed along dim.
    const Shape shape = detail::broadcast_shapes(x1.shape(), x2.shape(), op);
    const std::int64_t d = detail::wrap_dim(dim, std::max<std::int64_t>(shape.size(), 1), op);
    const Tensor a = x1.expand(shape), b = x2.expand(shape);
    const Tensor na = clamped_sqrt(a.pow(2.0).sum(d, true), eps), nb = clamped_sqrt(b.pow(2.0).sum(d, true), eps);
    return ((a / na) * (b / nb)).sum(d);
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
    const char* op = "pairwise_distance";
    check_floating(x1, x2, op);
    // PyTorch 1.13: the norm of x1 - x2 + eps over the last dim of the wider input (NormBackward1).
    const std::int64_t last = std::max(x1.dim(), x2.dim()) - 1;
    return detail::vector_norm(x1 - x2 + eps, p, Dims{last}, keepdim, op, "NormBackward1");
}

}  // namespace xgrad::nn::functional

namespace xgrad::nn {

Tensor CosineSimilarity::forward(const Tensor& x1, const Tensor& x2) {
    return functional::cosine_similarity(x1, x2, dim_, eps_);
}

Tensor CosineSimilarity::forward(const Tensor&) {
    detail::fail("CosineSimilarity", "compares two tensors: call it as cos(x1, x2)");
}

Tensor PairwiseDistance::forward(const Tensor& x1, const Tensor& x2) {
    return functional::pairwise_distance(x1, x2, p_, eps_, keepdim_);
}

Tensor PairwiseDistance::forward(const Tensor&) {
    detail::fail("PairwiseDistance", "compares two tensors: call it as dist(x1, x2)");
}

}  // namespace xgrad::nn
