// Reductions (sum, mean, var, std, max, min) over one dim, a list of dims, or all.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::NeedsGrad;
using Grads = std::vector<Tensor>;

namespace {

/// How a reduction sees its input: `rows` rows of `width` contiguous elements, one result per row.
struct Plan {
    std::vector<bool> reduced;  // per input dim
    Shape kept_shape;           // result with keepdim=true
    Shape out_shape;            // result as requested
    std::int64_t rows = 1, width = 1;
    Tensor rows_view;    // contiguous, reduced dims last (or first, when `outer`)
    bool outer = false;  // rows_view is (width, rows): the reduced dims lead, as in bias gradients
};

/// `allow_outer`: the caller handles the (width, rows) layout of leading reductions (sum, mean).
Plan plan(const Tensor& a, const Dims& dims, bool keepdim, const char* op, bool allow_outer = false) {
    detail::check_defined(a, op);
    Plan p;
    const std::int64_t nd = a.dim();
    p.reduced.assign(static_cast<std::size_t>(nd), dims.vec().empty());
    const std::int64_t n = std::max<std::int64_t>(nd, 1);  // a 0-d tensor accepts dim 0 and -1, as PyTorch
    for (std::int64_t d : dims.vec()) {
        if (d < -n || d >= n)
            detail::fail(op, "dimension " + std::to_string(d) + " is out of range for a tensor of shape " +
                                 to_string(a.shape()) + " (expected to be in [" + std::to_string(-n) + ", " +
                                 std::to_string(n - 1) + "])");
        auto w = static_cast<std::size_t>(detail::wrap_dim(d, nd, op));
        if (nd > 0 && p.reduced[w] && !dims.vec().empty())
            detail::fail(op, "dimension " + std::to_string(d) + " appears multiple times in the list of dims " +
                                 "for a tensor of shape " + to_string(a.shape()));
        if (nd > 0) p.reduced[w] = true;
    }
    std::vector<std::int64_t> perm, kept, out;
    for (std::int64_t d = 0; d < nd; ++d)
        if (!p.reduced[static_cast<std::size_t>(d)]) perm.push_back(d);
    // The reduced dims are already last (the common `dim=-1` case): no permutation needed.
    const auto n_reduced = std::count(p.reduced.begin(), p.reduced.end(), true);
    const bool trailing = std::all_of(p.reduced.end() - n_reduced, p.reduced.end(), [](bool r) { return r; });
    for (std::int64_t d = 0; d < nd; ++d) {
        bool r = p.reduced[static_cast<std::size_t>(d)];
        if (r) {
            perm.push_back(d);
            p.width *= a.size(d);
        } else {
            p.rows *= a.size(d);
            out.push_back(a.size(d));
        }
        kept.push_back(r ? 1 : a.size(d));
    }
    p.kept_shape = Shape(kept);
    p.out_shape = keepdim ? p.kept_shape : Shape(out);
    const bool leading = std::all_of(p.reduced.begin(), p.reduced.begin() + n_reduced, [](bool r) { return r; });
    Tensor base = a.detach();
    p.outer = allow_outer && leading && !trailing && a.is_contiguous();
    p.rows_view = trailing || p.outer ? base.contiguous() : base.permute(Dims(perm)).contiguous();
    return p;
}

/// The gradient of a reduction's output, reshaped to keepdim form and broadcast back to `input`.
Tensor expand_back(const Tensor& g, const Shape& kept_shape, const Shape& input_shape) {
    return g.reshape(kept_shape).expand(input_shape);
}

kernels::RowsView rows_of(const Plan& p) {
    return {p.rows_view, p.rows, p.width, p.outer};
}

Tensor sum_impl(const Tensor& self, const Dims& dims, bool keepdim, const char* name) {
    Plan p = plan(self, dims, keepdim, "sum", /*allow_outer=*/true);
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    kernels::sum_rows(rows_of(p), out, /*mean=*/false);
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self}, [k = p.kept_shape, s = self.shape()](const Tensor& g, const NeedsGrad&) {
            return Grads{expand_back(g, k, s)};
        });
    return out;
}

/// mean, var and std are defined for floating-point tensors only, as in PyTorch.
void check_floating(const Tensor& self, const char* op) {
    detail::check_defined(self, op);
    if (!self.is_floating_point())
        detail::fail(op, "needs a floating-point tensor, got " + to_string(self.dtype()) + " of shape " +
                             to_string(self.shape()));
}

Tensor mean_impl(const Tensor& self, const Dims& dims, bool keepdim, const char* name) {
    check_floating(self, "mean");
    Plan p = plan(self, dims, keepdim, "mean", /*allow_outer=*/true);
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    kernels::sum_rows(rows_of(p), out, /*mean=*/true);
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self},
                       [k = p.kept_shape, s = self.shape(), n = p.width](const Tensor& g, const NeedsGrad&) {
                           return Grads{expand_back(g, k, s) / static_cast<double>(n)};
                       });
    return out;
}

Tensor var_impl(const Tensor& self, const Dims& dims, bool unbiased, bool keepdim, bool take_sqrt) {
    const char* op = take_sqrt ? "std" : "var";
    check_floating(self, op);
    Plan p = plan(self, dims, keepdim, op);
    const double correction = unbiased ? 1.0 : 0.0;
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    kernels::var_rows(rows_of(p), out, correction, take_sqrt);
    if (detail::needs_grad({&self}))
        detail::record(out, take_sqrt ? "StdBackward0" : "VarBackward0", {&self},
                       [x = detail::Saved(self), o = detail::Saved(out), k = p.kept_shape, d = Dims(dims), n = p.width,
                        correction, take_sqrt](const Tensor& g, const NeedsGrad&) {
                           Tensor centred = x - x->mean(d, true);
                           double denom = static_cast<double>(n) - correction;
                           Tensor gk = g.reshape(k);
                           if (!take_sqrt) return Grads{centred * (gk * (2.0 / denom))};
                           // d std = d var / (2 std), taken as 0 where std == 0 (a constant row) instead of
                           // 0/0, as PyTorch.
                           Tensor scale = detail::map_binary(gk, o->reshape(k).to(gk.dtype()), "std",
                                                             kernels::BinaryOp::kStdBackward, denom);
                           return Grads{centred * scale};
                       });
    return out;
}

Tensor extreme_impl(const Tensor& self, const Dims& dims, bool keepdim, bool all, bool max) {
    const char* op = max ? "max" : "min";
    Plan p = plan(self, dims, keepdim, op);
    if (p.width == 0) detail::fail(op, "cannot reduce over an empty dimension (shape " + to_string(self.shape()) + ")");
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    kernels::extreme_rows(rows_of(p), out, max);
    if (detail::needs_grad({&self})) {
        const char* name = all ? (max ? "MaxBackward1" : "MinBackward1") : (max ? "MaxBackward0" : "MinBackward0");
        detail::record(out, name, {&self},
                       [x = detail::Saved(self), o = detail::Saved(out), k = p.kept_shape, d = Dims(dims), all](
                           const Tensor& g, const NeedsGrad&) {
                           // All-reduce: ties share the gradient evenly. Along a dim: the first extreme
                           // element takes it, as the index PyTorch returns. A NaN result hits the NaN inputs.
                           Tensor hit = detail::map_binary(x, o->reshape(k).to(x->dtype()), "max",
                                                           kernels::BinaryOp::kEqualOrBothNan);
                           if (!all) {
                               // Keep only the first hit along the reduced dims: zero the hits after a prior hit.
                               Plan q = plan(hit, d, true, "max");
                               Tensor first = detail::make_empty(q.rows_view.shape(), hit.dtype(), hit.device());
                               kernels::first_hit_rows(rows_of(q), first);
                               // rows_view was permuted so reduced dims come last; undo that permutation.
                               std::vector<std::int64_t> perm, inverse(static_cast<std::size_t>(x->dim()));
                               for (std::int64_t i = 0; i < x->dim(); ++i)
                                   if (!q.reduced[static_cast<std::size_t>(i)]) perm.push_back(i);
                               for (std::int64_t i = 0; i < x->dim(); ++i)
                                   if (q.reduced[static_cast<std::size_t>(i)]) perm.push_back(i);
                               for (std::size_t i = 0; i < perm.size(); ++i)
                                   inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
                               Shape permuted;
                               for (auto i : perm) permuted.push_back(x->size(i));
                               hit = first.reshape(permuted).permute(Dims(inverse));
                               return Grads{hit * g.reshape(k)};
                           }
                           return Grads{hit * (g.reshape(k) / hit.sum())};
                       });
    }
    return out;
}

}  // namespace

Tensor Tensor::sum() const {
    return sum_impl(*this, Dims(std::vector<std::int64_t>{}), false, "SumBackward0");
}
Tensor Tensor::sum(const Dims& dims, bool keepdim) const {
    return sum_impl(*this, dims, keepdim, "SumBackward1");
}
Tensor Tensor::mean() const {
    return mean_impl(*this, Dims(std::vector<std::int64_t>{}), false, "MeanBackward0");
}
Tensor Tensor::mean(const Dims& dims, bool keepdim) const {
    return mean_impl(*this, dims, keepdim, "MeanBackward1");
}
Tensor Tensor::var() const {
    return var_impl(*this, Dims(std::vector<std::int64_t>{}), true, false, false);
}
Tensor Tensor::var(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased, keepdim, false);
}
Tensor Tensor::std() const {
    return var_impl(*this, Dims(std::vector<std::int64_t>{}), true, false, true);
}
Tensor Tensor::std(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased, keepdim, true);
}
Tensor Tensor::max() const {
    return extreme_impl(*this, Dims(std::vector<std::int64_t>{}), false, true, true);
}
Tensor Tensor::max(const Dims& dims, bool keepdim) const {
    return extreme_impl(*this, dims, keepdim, false, true);
}
Tensor Tensor::min() const {
    return extreme_impl(*this, Dims(std::vector<std::int64_t>{}), false, true, false);
}
Tensor Tensor::min(const Dims& dims, bool keepdim) const {
    return extreme_impl(*this, dims, keepdim, false, false);
}

}  // namespace xgrad
