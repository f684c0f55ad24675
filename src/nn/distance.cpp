// F::cosine_similarity and F::pairwise_distance, in PyTorch 1.13's steps (so its grad_fn names and
// gradients), and their modules.
#include "xgrad/nn/distance.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
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

// ---- cdist ------------------------------------------------------------------------------------------------

namespace xgrad {

namespace {

using detail::GradList;
using detail::NeedsGrad;
using detail::Saved;

/// PyTorch's _cdist_forward: every pair's p-distance, directly (kernels::cdist_forward), in the shape
/// `out`; recorded there as CdistBackward0, whose gradients are PyTorch's _cdist_backward for each side
/// (kernels::cdist_backward, the second with the roles swapped).
Tensor direct_cdist(const Tensor& a, const Tensor& b, double p, const Shape& out) {
    const Tensor ac = a.detach().contiguous(), bc = b.detach().contiguous();
    Tensor dist = detail::make_empty(Shape{a.size(0), a.size(1), b.size(1)}, a.dtype(), a.device());
    kernels::cdist_forward(ac, bc, p, dist);
    Tensor result;
    {
        NoGradGuard no_grad;
        result = dist.view(out);
    }
    if (!detail::needs_grad({&a, &b})) return result;
    detail::record(result, "CdistBackward0", {&a, &b},
                   [sa = Saved(ac), sb = Saved(bc), dist, p](const Tensor& grad, const NeedsGrad& need) {
                       const Tensor &x1 = sa, &x2 = sb;
                       const Tensor g = grad.reshape(dist.shape()).contiguous();
                       Tensor g1, g2;
                       if (need[0]) {
                           g1 = detail::make_empty(x1.shape(), x1.dtype(), x1.device());
                           kernels::cdist_backward(g, x1, x2, p, dist, g1);
                       }
                       if (need[1]) {
                           g2 = detail::make_empty(x2.shape(), x2.dtype(), x2.device());
                           kernels::cdist_backward(g.transpose(1, 2).contiguous(), x2, x1, p,
                                                   dist.transpose(1, 2).contiguous(), g2);
                       }
                       return GradList{g1, g2};
                   });
    return result;
}

/// PyTorch's _euclidean_dist: ‖a‖² − 2 a·b + ‖b‖² as one matrix product of padded operands, clamped
/// at 0 and square-rooted; recorded as EuclideanDistBackward0 (zero where a distance is zero).
Tensor euclidean_cdist(const Tensor& a, const Tensor& b) {
    Tensor dist;
    {
        NoGradGuard no_grad;
        const Tensor an = a.pow(2.0).sum(Dims{-1}, true), bn = b.pow(2.0).sum(Dims{-1}, true);
        const Tensor a_ = cat({a * -2.0, an, ones_like(an)}, -1), b_ = cat({b, ones_like(bn), bn}, -1);
        dist = matmul(a_, b_.transpose(-2, -1)).clamp_min(0.0).sqrt();
    }
    if (!detail::needs_grad({&a, &b})) return dist;
    detail::record(dist, "EuclideanDistBackward0", {&a, &b},
                   [sa = Saved(a), sb = Saved(b), sd = Saved(dist)](const Tensor& g, const NeedsGrad& need) {
                       const Tensor &x1 = sa, &x2 = sb, &d = sd;
                       const Tensor ratio = (g / d).masked_fill(d.eq(0.0), 0.0);
                       Tensor g1, g2;
                       if (need[0]) g1 = x1 * ratio.sum(Dims{-1}, true) - matmul(ratio, x2);
                       if (need[1]) g2 = x2 * ratio.sum(Dims{-2}).unsqueeze(-1) - matmul(ratio.transpose(-2, -1), x1);
                       return GradList{g1, g2};
                   });
    return dist;
}

}  // namespace

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, const std::string& compute_mode) {
    const char* op = "cdist";
    detail::check_defined(x1, op);
    detail::check_defined(x2, op);
    detail::check_same_device(x1, x2, op);
    if (x1.dim() < 2)
        detail::fail(op, "cdist only supports at least 2D tensors, X1 got: " + std::to_string(x1.dim()) + "D");
    if (x2.dim() < 2)
        detail::fail(op, "cdist only supports at least 2D tensors, X2 got: " + std::to_string(x2.dim()) + "D");
    if (x1.size(-1) != x2.size(-1))
        detail::fail(op, "X1 and X2 must have the same number of columns. X1: " + std::to_string(x1.size(-1)) +
                             " X2: " + std::to_string(x2.size(-1)));
    if (!x1.is_floating_point())
        detail::fail(op, "cdist only supports floating-point dtypes, X1 got: " + to_string(x1.dtype()));
    if (!x2.is_floating_point())
        detail::fail(op, "cdist only supports floating-point dtypes, X2 got: " + to_string(x2.dtype()));
    if (x1.dtype() != x2.dtype())
        detail::fail(
            op, "X1 and X2 must have the same dtype, got " + to_string(x1.dtype()) + " and " + to_string(x2.dtype()));
    if (!(p >= 0)) detail::fail(op, "cdist only supports non-negative p values, got " + std::to_string(p));
    int mode = 0;
    if (compute_mode == "use_mm_for_euclid_dist")
        mode = 1;
    else if (compute_mode == "donot_use_mm_for_euclid_dist")
        mode = 2;
    else if (compute_mode != "use_mm_for_euclid_dist_if_necessary")
        detail::fail(op, compute_mode +
                             " is not a valid value for compute_mode (use_mm_for_euclid_dist_if_necessary, "
                             "use_mm_for_euclid_dist or donot_use_mm_for_euclid_dist)");
    // The batch dims broadcast; each side becomes (batch, rows, M), as PyTorch's cdist_impl does.
    const std::int64_t p_rows = x1.size(-2), r_rows = x2.size(-2), m = x1.size(-1);
    Shape batch;
    try {
        batch = detail::broadcast_shapes(Shape(x1.shape().begin(), x1.shape().end() - 2),
                                         Shape(x2.shape().begin(), x2.shape().end() - 2), "batch dims");
    } catch (const std::invalid_argument& e) {
        detail::fail(op, "X1 " + to_string(x1.shape()) + " and X2 " + to_string(x2.shape()) + ": " + e.what());
    }
    const std::int64_t b = std::accumulate(batch.begin(), batch.end(), std::int64_t{1}, std::multiplies<>());
    std::vector<std::int64_t> s1(batch.begin(), batch.end()), s2 = s1, out = s1;
    s1.insert(s1.end(), {p_rows, m});
    s2.insert(s2.end(), {r_rows, m});
    out.insert(out.end(), {p_rows, r_rows});
    const Tensor a = x1.expand(Shape(s1)).reshape({b, p_rows, m}), c = x2.expand(Shape(s2)).reshape({b, r_rows, m});
    const bool empty = a.numel() == 0 || c.numel() == 0;
    const bool mm = p == 2 && !empty && (mode == 1 || (mode == 0 && (p_rows > 25 || r_rows > 25)));
    // The matrix-product form comes back as a view (ViewBackward0 over EuclideanDistBackward0), as PyTorch's.
    return mm ? euclidean_cdist(a, c).view(Shape(out)) : direct_cdist(a, c, p, Shape(out));
}

}  // namespace xgrad
