// Reductions (sum, mean, var, std, max, min) over one dim, a list of dims, or all.
#include <algorithm>
#include <cmath>
#include <limits>

#include "detail/kernels.hpp"
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
    Tensor rows_view;           // contiguous, reduced dims last
};

Plan plan(const Tensor& a, const Dims& dims, bool keepdim, const char* op) {
    detail::check_defined(a, op);
    Plan p;
    const std::int64_t nd = a.dim();
    p.reduced.assign(static_cast<std::size_t>(nd), dims.vec().empty());
    for (std::int64_t d : dims.vec()) {
        auto w = static_cast<std::size_t>(detail::wrap_dim(d, nd, op));
        if (nd > 0 && p.reduced[w] && !dims.vec().empty())
            detail::fail(op, "dimension " + std::to_string(d) + " appears multiple times in the list of dims");
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
    Tensor base = a.detach();
    p.rows_view = trailing ? base.contiguous() : base.permute(Dims(perm)).contiguous();
    return p;
}

/// Applies `row_fn(const T* row, width) -> double` to every row, writing a tensor of `shape`.
template <typename F>
Tensor reduce_rows(const Plan& p, DType dtype, const char* op, F&& row_fn) {
    Tensor out = detail::make_empty(p.out_shape, dtype);
    detail::dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        const T* in = p.rows_view.impl()->data<T>();
        T* o = out.impl()->data<T>();
        for (std::int64_t r = 0; r < p.rows; ++r) o[r] = static_cast<T>(row_fn(in + r * p.width, p.width));
    });
    (void)op;
    return out;
}

/// The gradient of a reduction's output, reshaped to keepdim form and broadcast back to `input`.
Tensor expand_back(const Tensor& g, const Shape& kept_shape, const Shape& input_shape) {
    return g.reshape(kept_shape).expand(input_shape);
}

template <typename T>
double row_sum(const T* x, std::int64_t n) {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
    return s;
}

template <typename T>
double row_var(const T* x, std::int64_t n, double correction) {
    double mean = row_sum(x, n) / static_cast<double>(n);
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        double d = static_cast<double>(x[i]) - mean;
        ss += d * d;
    }
    return ss / std::max(0.0, static_cast<double>(n) - correction);
}

Tensor sum_impl(const Tensor& self, const Dims& dims, bool keepdim, const char* name) {
    Plan p = plan(self, dims, keepdim, "sum");
    Tensor out = reduce_rows(p, self.dtype(), "sum", [](const auto* x, std::int64_t n) { return row_sum(x, n); });
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self}, [k = p.kept_shape, s = self.shape()](const Tensor& g, const NeedsGrad&) {
            return Grads{expand_back(g, k, s)};
        });
    return out;
}

Tensor mean_impl(const Tensor& self, const Dims& dims, bool keepdim, const char* name) {
    if (!self.is_floating_point()) detail::fail("mean", "needs a floating-point tensor, got " + to_string(self.dtype()));
    Plan p = plan(self, dims, keepdim, "mean");
    // PyTorch's CPU mean is sum() then a division by the count, both in the tensor's dtype.
    Tensor out = detail::dispatch_float(self.dtype(), "mean", [&](auto tag) {
        using T = decltype(tag);
        const T n = static_cast<T>(p.width);
        return reduce_rows(p, self.dtype(), "mean", [n](const auto* x, std::int64_t w) {
            return static_cast<T>(static_cast<T>(row_sum(x, w)) / n);
        });
    });
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self},
                       [k = p.kept_shape, s = self.shape(), n = p.width](const Tensor& g, const NeedsGrad&) {
                           return Grads{expand_back(g, k, s) / static_cast<double>(n)};
                       });
    return out;
}

Tensor var_impl(const Tensor& self, const Dims& dims, bool unbiased, bool keepdim, bool take_sqrt) {
    const char* op = take_sqrt ? "std" : "var";
    if (!self.is_floating_point()) detail::fail(op, "needs a floating-point tensor, got " + to_string(self.dtype()));
    Plan p = plan(self, dims, keepdim, op);
    const double correction = unbiased ? 1.0 : 0.0;
    Tensor out = reduce_rows(p, self.dtype(), op, [=](const auto* x, std::int64_t n) {
        double v = row_var(x, n, correction);
        return take_sqrt ? std::sqrt(v) : v;
    });
    if (detail::needs_grad({&self}))
        detail::record(out, take_sqrt ? "StdBackward0" : "VarBackward0", {&self},
                       [x = self.detach(), o = out.detach(), k = p.kept_shape, d = Dims(dims), n = p.width, correction,
                        take_sqrt](const Tensor& g, const NeedsGrad&) {
                           Tensor centred = x - x.mean(d, true);
                           double denom = static_cast<double>(n) - correction;
                           Tensor gk = g.reshape(k);
                           if (take_sqrt) return Grads{centred * (gk / (o.reshape(k) * denom))};
                           return Grads{centred * (gk * (2.0 / denom))};
                       });
    return out;
}

Tensor extreme_impl(const Tensor& self, const Dims& dims, bool keepdim, bool all, bool max) {
    const char* op = max ? "max" : "min";
    Plan p = plan(self, dims, keepdim, op);
    if (p.width == 0) detail::fail(op, "cannot reduce over an empty dimension (shape " + to_string(self.shape()) + ")");
    Tensor out = reduce_rows(p, self.dtype(), op, [max](const auto* x, std::int64_t n) {
        auto best = x[0];
        for (std::int64_t i = 1; i < n; ++i) {
            if (x[i] != x[i]) return static_cast<double>(x[i]);  // NaN propagates, as PyTorch
            best = max ? std::max(best, x[i]) : std::min(best, x[i]);
        }
        return static_cast<double>(best);
    });
    if (detail::needs_grad({&self})) {
        const char* name = all ? (max ? "MaxBackward1" : "MinBackward1") : (max ? "MaxBackward0" : "MinBackward0");
        detail::record(out, name, {&self},
                       [x = self.detach(), o = out.detach(), k = p.kept_shape, d = Dims(dims), all](const Tensor& g,
                                                                                                 const NeedsGrad&) {
                           // All-reduce: ties share the gradient evenly. Along a dim: the first extreme
                           // element takes it, as the index PyTorch returns.
                           Tensor hit = detail::map_binary(x, o.reshape(k).expand_as(x).contiguous(), "max",
                                                           [](auto a, auto b) {
                                                               using T = detail::value_t<decltype(a)>;
                                                               return xt::where(xt::equal(a, b), T(1), T(0));
                                                           });
                           if (!all) {
                               // Keep only the first hit along the reduced dims: zero the hits after a prior hit.
                               Plan q = plan(hit, d, true, "max");
                               Tensor first = detail::make_empty(q.rows_view.shape(), hit.dtype());
                               detail::dispatch_float(hit.dtype(), "max", [&](auto tag) {
                                   using T = decltype(tag);
                                   const T* h = q.rows_view.impl()->data<T>();
                                   T* f = first.impl()->data<T>();
                                   for (std::int64_t r = 0; r < q.rows; ++r) {
                                       bool seen = false;
                                       for (std::int64_t i = 0; i < q.width; ++i) {
                                           T v = h[r * q.width + i];
                                           f[r * q.width + i] = seen ? T(0) : v;
                                           seen = seen || v != T(0);
                                       }
                                   }
                               });
                               // rows_view was permuted so reduced dims come last; undo that permutation.
                               std::vector<std::int64_t> perm, inverse(static_cast<std::size_t>(x.dim()));
                               for (std::int64_t i = 0; i < x.dim(); ++i)
                                   if (!q.reduced[static_cast<std::size_t>(i)]) perm.push_back(i);
                               for (std::int64_t i = 0; i < x.dim(); ++i)
                                   if (q.reduced[static_cast<std::size_t>(i)]) perm.push_back(i);
                               for (std::size_t i = 0; i < perm.size(); ++i)
                                   inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
                               Shape permuted;
                               for (auto i : perm) permuted.push_back(x.size(i));
                               hit = first.reshape(permuted).permute(Dims(inverse));
                               return Grads{hit * g.reshape(k)};
                           }
                           return Grads{hit * (g.reshape(k) / hit.sum())};
                       });
    }
    return out;
}

}  // namespace

Tensor Tensor::sum() const { return sum_impl(*this, Dims(std::vector<std::int64_t>{}), false, "SumBackward0"); }
Tensor Tensor::sum(const Dims& dims, bool keepdim) const { return sum_impl(*this, dims, keepdim, "SumBackward1"); }
Tensor Tensor::mean() const { return mean_impl(*this, Dims(std::vector<std::int64_t>{}), false, "MeanBackward0"); }
Tensor Tensor::mean(const Dims& dims, bool keepdim) const { return mean_impl(*this, dims, keepdim, "MeanBackward1"); }
Tensor Tensor::var() const { return var_impl(*this, Dims(std::vector<std::int64_t>{}), true, false, false); }
Tensor Tensor::var(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased, keepdim, false);
}
Tensor Tensor::std() const { return var_impl(*this, Dims(std::vector<std::int64_t>{}), true, false, true); }
Tensor Tensor::std(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased, keepdim, true);
}
Tensor Tensor::max() const { return extreme_impl(*this, Dims(std::vector<std::int64_t>{}), false, true, true); }
Tensor Tensor::max(const Dims& dims, bool keepdim) const { return extreme_impl(*this, dims, keepdim, false, true); }
Tensor Tensor::min() const { return extreme_impl(*this, Dims(std::vector<std::int64_t>{}), false, true, false); }
Tensor Tensor::min(const Dims& dims, bool keepdim) const { return extreme_impl(*this, dims, keepdim, false, false); }

}  // namespace xgrad
