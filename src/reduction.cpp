// Reductions (sum, mean, var, std, max, min, amax, amin, argmax, argmin, prod, logsumexp) over one dim,
// a list of dims, or all; and the running sums and products along a dim.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "detail/along_dim.hpp"
#include "detail/dispatch.hpp"
#include "detail/iter_order.hpp"
#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::NeedsGrad;
using Grads = detail::GradList;

namespace {

/// How a reduction sees its input: `rows` rows of `width` contiguous elements, one result per row.
struct Plan {
    Strides reduced;   // per input dim: 1 when reduced (an inline list: no allocation)
    Shape kept_shape;  // result with keepdim=true
    Shape out_shape;   // result as requested
    std::int64_t rows = 1, width = 1;
    Tensor rows_view;             // contiguous, reduced dims last (or first, when `outer`)
    bool outer = false;           // rows_view is (width, rows): the reduced dims lead, as in bias gradients
    std::int64_t slice = 0;       // RowsView::slice
    bool strided_slices = false;  // RowsView::strided_slices
    bool in_place = false;        // RowsView::in_place: rows_view is the permuted input, not a copy
    int row_dims = 0;             // RowsView::row_dims
    std::int64_t batches = 1;     // RowsView::batches
    Strides source_dims;          // RowsView::source_dims
    bool keepdim = false;         // RowsView::keepdim
};

/// How a reduction's kernel reads a strided (not contiguous) input: as a contiguous copy, or in place
/// in the order PyTorch's TensorIterator gives its strides (RowsView::source_dims), always (prod) or
/// where the reduction has one result (var, whose PyTorch kernel then reads the input in place).
enum class Strided { kCopy, kInPlace, kInPlaceIfOne };

/// `allow_outer`: the caller handles the (width, rows) layout of leading reductions (sum, mean, amax,
/// amin). `sliced`: the caller (sum, mean) reads rows made of slices in place (RowsView::in_place), and
/// a strided input in place.
Plan plan(const Tensor& a, const Dims& dims, bool keepdim, const char* op, bool allow_outer = false,
          bool sliced = false, Strided strided = Strided::kCopy) {
    detail::check_defined(a, op);
    Plan p;
    const std::int64_t nd = a.dim();
    // Every dim of a contiguous tensor (a loss's mean()): one row of all the elements, in memory order,
    // which is what the general walk below concludes, without its lists and views.
    if (dims.vec().empty() && a.is_contiguous()) {
        p.reduced = Strides(static_cast<std::size_t>(nd), 1);
        p.kept_shape = Shape(p.reduced.begin(), p.reduced.end());
        if (keepdim) p.out_shape = p.kept_shape;
        p.width = a.numel();
        p.rows_view = a;
        return p;
    }
    p.reduced = Strides(static_cast<std::size_t>(nd), dims.vec().empty() ? 1 : 0);
    const std::int64_t n = std::max<std::int64_t>(nd, 1);  // a 0-d tensor accepts dim 0 and -1, as PyTorch
    bool zero_dim_named = false;
    for (std::int64_t d : dims.vec()) {
        if (d < -n || d >= n)
            detail::fail(op, "dimension " + std::to_string(d) + " is out of range for a tensor of shape " +
                                 to_string(a.shape()) + " (expected to be in [" + std::to_string(-n) + ", " +
                                 std::to_string(n - 1) + "])");
        auto w = static_cast<std::size_t>(detail::wrap_dim(d, nd, op));
        // A 0-d tensor's dims 0 and -1 are one dim, as PyTorch counts them: named once at most.
        if (nd > 0 ? p.reduced[w] != 0 : zero_dim_named)
            detail::fail(op, "dimension " + std::to_string(d) + " appears multiple times in the list of dims " +
                                 "for a tensor of shape " + to_string(a.shape()));
        if (nd > 0) p.reduced[w] = 1;
        zero_dim_named = true;
    }
    Strides perm, kept, out, order;
    for (std::int64_t d = 0; d < nd; ++d) {
        if (!p.reduced[static_cast<std::size_t>(d)])
            perm.push_back(d);
        else
            order.push_back(d);
    }
    // A row holds the reduced elements in the order PyTorch's reduction visits them: its TensorIterator's
    // order (iterator_order, read backwards: the last reduced dim fastest), which is their own order
    // unless the input is permuted or broadcast (a stride of 0 decides nothing there).
    // A contiguous tensor's reduced dims are in that order already (their strides decrease), so the sort
    // runs only for other layouts: every reduction's plan passes here, small ones on the hot path.
    bool in_order = true;
    if (!a.is_contiguous()) {
        Strides shape(static_cast<std::size_t>(nd), 1), in = a.strides();
        std::vector<bool> reduced(static_cast<std::size_t>(nd), false);
        for (std::int64_t d = 0; d < nd; ++d) {
            shape[static_cast<std::size_t>(d)] = a.size(d);
            reduced[static_cast<std::size_t>(d)] = p.reduced[static_cast<std::size_t>(d)] != 0;
        }
        const std::vector<std::size_t> walk =
            detail::iterator_order(shape, in, detail::reduction_out_strides(shape, reduced, keepdim));
        Strides sorted;
        for (auto it = walk.rbegin(); it != walk.rend(); ++it)
            if (reduced[*it]) sorted.push_back(static_cast<std::int64_t>(*it));
        std::int64_t last = -1;
        for (std::int64_t d : sorted)
            if (a.size(d) != 1) {
                in_order = in_order && d > last;
                last = d;
            }
        if (!in_order) order = sorted;
    }
    for (std::int64_t d : order) perm.push_back(d);
    // PyTorch merges reduced dims that form one run of memory; when more than one run is left, a sum
    // adds up the innermost run's slices one by one (RowsView::slice). A broadcast (stride 0) reduced
    // dim keeps the row whole.
    {
        std::int64_t run = 1, inner_stride = 0, next = -1;
        const bool broadcast = std::any_of(order.begin(), order.end(), [&a](std::int64_t d) {
            return a.size(d) != 1 && a.strides()[static_cast<std::size_t>(d)] == 0;
        });
        for (std::size_t k = order.size(); k-- > 0;) {
            const std::int64_t size = a.size(order[k]), stride = a.strides()[static_cast<std::size_t>(order[k])];
            if (size == 1) continue;
            if (next < 0) {
                inner_stride = stride;
            } else if (stride != next) {
                p.slice = run;
                break;
            }
            run *= size;
            next = stride * size;
        }
        if (broadcast) p.slice = 0;
        p.strided_slices = p.slice > 0 && inner_stride != 1;
    }
    // The reduced dims are already last, in order (the common `dim=-1` case): no permutation needed.
    const auto n_reduced = std::count(p.reduced.begin(), p.reduced.end(), 1);
    const bool trailing =
        in_order && std::all_of(p.reduced.end() - n_reduced, p.reduced.end(), [](std::int64_t r) { return r; });
    for (std::int64_t d = 0; d < nd; ++d) {
        const bool r = p.reduced[static_cast<std::size_t>(d)] != 0;
        if (r) {
            p.width *= a.size(d);
        } else {
            p.rows *= a.size(d);
            out.push_back(a.size(d));
        }
        kept.push_back(r ? 1 : a.size(d));
    }
    p.kept_shape = Shape(kept.begin(), kept.end());
    p.out_shape = keepdim ? p.kept_shape : Shape(out.begin(), out.end());
    const bool leading =
        std::all_of(p.reduced.begin(), p.reduced.begin() + n_reduced, [](std::int64_t r) { return r; });
    NoGradGuard no_grad;  // the rows are read, never recorded
    p.outer = allow_outer && leading && !trailing && a.is_contiguous();
    // A sum over dims in the middle of a contiguous tensor (one run of memory, kept dims before and
    // after it): PyTorch sums each block of the outer dims down its columns, as a leading reduction.
    std::int64_t first = nd, last_reduced = -1, before = 1;
    for (std::int64_t d = 0; d < nd; ++d)
        if (p.reduced[static_cast<std::size_t>(d)] && a.size(d) != 1) {
            first = std::min(first, d);
            last_reduced = d;
        }
    bool middle = sliced && !p.outer && !trailing && p.slice == 0 && a.is_contiguous() && last_reduced >= 0;
    for (std::int64_t d = 0; middle && d < nd; ++d) {
        const bool r = p.reduced[static_cast<std::size_t>(d)] != 0;
        if (d < first) before *= a.size(d);
        if (d > first && d < last_reduced && !r && a.size(d) != 1) middle = false;  // not one run
    }
    if (middle) {
        p.outer = true;
        p.batches = before;
    }
    // A strided input (permuted, sliced, or repeating elements through expand()'s stride 0, as a
    // broadcast gradient is) is read in place, in the order PyTorch's TensorIterator gives its strides:
    // which of its kernels sums which elements depends on the memory layout, not on the dims' order.
    const bool strided_in_place =
        sliced || strided == Strided::kInPlace || (strided == Strided::kInPlaceIfOne && p.rows == 1);
    if (strided_in_place && !a.is_contiguous()) {
        p.in_place = true;  // (never `outer`: that needs a contiguous input)
        p.row_dims = static_cast<int>(nd - n_reduced);
        p.rows_view = a.permute(Dims(std::vector<std::int64_t>(perm)));
        p.source_dims = perm;
        p.keepdim = keepdim;
    } else if (sliced && p.slice > 0) {
        p.in_place = true;
        p.row_dims = static_cast<int>(nd - n_reduced);
        p.rows_view = a.permute(Dims(std::vector<std::int64_t>(perm)));
    } else {
        p.rows_view =
            trailing || p.outer ? a.contiguous() : a.permute(Dims(std::vector<std::int64_t>(perm))).contiguous();
    }
    return p;
}

/// The gradient of a reduction's output, reshaped to keepdim form and broadcast back to `input`.
Tensor expand_back(const Tensor& g, const Shape& kept_shape, const Shape& input_shape) {
    // A 0-d gradient (of a full reduction) broadcasts as it is, without a reshaped view first.
    return g.dim() == 0 ? g.expand(input_shape) : g.reshape(kept_shape).expand(input_shape);
}

/// The gradient of a full mean (a loss's) on the CPU: g / n in every element, the quotient the division
/// kernel computes for each element of g broadcast to `shape` (g / T(n), correctly rounded), written
/// by a fill, without the broadcast view and its strided walk.
Tensor full_mean_grad(const Tensor& g, const Shape& shape, std::int64_t n) {
    Tensor out = detail::make_empty(shape, g.dtype(), g.device(), "mean");
    detail::dispatch_float(g.dtype(), "mean", [&](auto tag) {
        using T = decltype(tag);
        const T value = *g.impl()->data<T>() / static_cast<T>(static_cast<double>(n));
        T* o = out.impl()->data<T>();
        std::fill(o, o + out.numel(), value);
    });
    return out;
}

kernels::RowsView rows_of(const Plan& p) {
    return {p.rows_view, p.rows,     p.width,   p.outer,       p.slice,  p.strided_slices,
            p.in_place,  p.row_dims, p.batches, p.source_dims, p.keepdim};
}

Tensor sum_impl(const Tensor& self, const Dims& dims, bool keepdim, const char* name) {
    Plan p = plan(self, dims, keepdim, "sum", /*allow_outer=*/true, /*sliced=*/true);
    // bool, uint8 and int32 add up in int64, as PyTorch (the kernels read them in place).
    const DType dtype = detail::is_narrow(self.dtype()) ? kInt64 : self.dtype();
    Tensor out = detail::make_empty(p.out_shape, dtype, self.device());
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
    Plan p = plan(self, dims, keepdim, "mean", /*allow_outer=*/true, /*sliced=*/true);
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    kernels::sum_rows(rows_of(p), out, /*mean=*/true);
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self},
                       [k = p.kept_shape, s = self.shape(), n = p.width](const Tensor& g, const NeedsGrad&) {
                           if (g.dim() == 0 && g.device().is_cpu()) return Grads{full_mean_grad(g, s, n)};
                           return Grads{expand_back(g, k, s) / static_cast<double>(n)};
                       });
    return out;
}

/// var or std over `dims`; with `mean_out`, var_mean or std_mean, whose mean comes from the same pass
/// (PyTorch's Welford mean, not x.mean()'s) and whose gradient is mean's.
Tensor var_impl(const Tensor& self, const Dims& dims, double correction, bool keepdim, bool take_sqrt,
                Tensor* mean_out = nullptr) {
    const char* op = mean_out ? (take_sqrt ? "std_mean" : "var_mean") : (take_sqrt ? "std" : "var");
    check_floating(self, op);
    Plan p = plan(self, dims, keepdim, op, false, false, mean_out ? Strided::kCopy : Strided::kInPlaceIfOne);
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    Tensor mean = mean_out ? detail::make_empty(p.out_shape, self.dtype(), self.device()) : Tensor();
    kernels::var_rows(rows_of(p), out, mean, correction, take_sqrt);
    if (detail::needs_grad({&self})) {
        detail::record(out, take_sqrt ? "StdBackward0" : "VarBackward0", {&self},
                       [x = detail::Saved(self), o = detail::Saved(out), k = p.kept_shape, d = Dims(dims), n = p.width,
                        correction, take_sqrt](const Tensor& g, const NeedsGrad&) {
                           Tensor centred = x - x->mean(d, true);
                           double denom = static_cast<double>(n) - correction;
                           Tensor gk = g.reshape(k);
                           // PyTorch's var_backward, (2 / dof) * grad * (x - mean), and std_backward, which
                           // gives it grad / (2 std), taken as 0 where std == 0 (a constant row) instead of 0/0.
                           if (take_sqrt)
                               gk = detail::map_binary(gk, o->reshape(k).to(gk.dtype()), "std",
                                                       kernels::BinaryOp::kStdBackward, 2.0);
                           // In PyTorch's operand order: the result takes the scaled gradient's layout
                           // where it has one (dims it does not broadcast along), which decides the order
                           // in which an expanded input's gradient is summed.
                           return Grads{(gk * (2.0 / denom)) * centred};
                       });
        if (mean_out)
            detail::record(mean, "MeanBackward1", {&self},
                           [k = p.kept_shape, s = self.shape(), n = p.width](const Tensor& g, const NeedsGrad&) {
                               return Grads{expand_back(g, k, s) / static_cast<double>(n)};
                           });
    }
    if (mean_out) *mean_out = mean;
    return out;
}

/// 1 where x is not NaN, 0 where it is (maximum's share of x against itself is 0.5, or 1 for NaN).
Tensor not_nan(const Tensor& x) {
    return 2.0 - 2.0 * detail::map_binary(x, x, "max", kernels::BinaryOp::kMaxShare);
}

/// max()/min() of all elements: ties share the gradient evenly, NaNs too when the result is NaN.
Tensor extreme_all(const Tensor& self, bool max) {
    if (self.defined() && detail::is_narrow(self.dtype())) return extreme_all(self.to(kInt64), max).to(self.dtype());
    const char* op = max ? "max" : "min";
    Plan p = plan(self, Dims(std::vector<std::int64_t>{}), false, op);
    if (p.width == 0)
        detail::fail(op, "Expected reduction dim to be specified for input.numel() == 0 (shape " +
                             to_string(self.shape()) + ")");
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    kernels::extreme_rows(rows_of(p), out, max);
    detail::record_evenly(out, max ? "MaxBackward1" : "MinBackward1", self);
    return out;
}

/// amax/amin over `dims`: ties share the gradient evenly, as PyTorch's `grad / count * (x == result)`,
/// which makes a row whose result is NaN all NaN.
Tensor amax_impl(const Tensor& self, const Dims& dims, bool keepdim, bool max) {
    if (self.defined() && detail::is_narrow(self.dtype()))
        return amax_impl(self.to(kInt64), dims, keepdim, max).to(self.dtype());
    const char* op = max ? "amax" : "amin";
    Plan p = plan(self, dims, keepdim, op, /*allow_outer=*/true);
    if (p.width == 0)
        detail::fail(op, "Expected reduction dim to have non-zero size (shape " + to_string(self.shape()) + ")");
    Tensor out = detail::make_empty(p.out_shape, self.dtype(), self.device());
    kernels::extreme_rows(rows_of(p), out, max);
    if (detail::needs_grad({&self}))
        detail::record(out, max ? "AmaxBackward0" : "AminBackward0", {&self},
                       [x = detail::Saved(self), o = detail::Saved(out), k = p.kept_shape, d = Dims(dims)](
                           const Tensor& g, const NeedsGrad&) {
                           // (result == self), the result first: its layout is the mask's, as PyTorch's.
                           Tensor eq =
                               detail::map_binary(o->reshape(k), x, "amax", kernels::BinaryOp::kEqualOrBothNan) *
                               not_nan(x);
                           return Grads{g.reshape(k) / eq.sum(d, true) * eq};
                       });
    return out;
}

/// The extreme values along one dim and their indices; the gradient goes to the index.
ValuesIndices extreme_dim(const Tensor& self, std::int64_t dim, bool keepdim, bool max) {
    if (self.defined() && detail::is_narrow(self.dtype())) {
        ValuesIndices r = extreme_dim(self.to(kInt64), dim, keepdim, max);
        return {r.values.to(self.dtype()), r.indices};
    }
    const char* op = max ? "max" : "min";
    detail::AlongDim a = detail::along_dim(self, dim, op);
    if (a.width == 0)
        detail::fail(op, "Expected reduction dim " + std::to_string(dim) + " to have non-zero size (shape " +
                             to_string(self.shape()) + ")");
    const Shape out_shape = keepdim ? a.with_size(1) : a.without();
    Tensor values = detail::make_empty(out_shape, self.dtype(), self.device());
    Tensor indices = detail::make_empty(out_shape, kInt64, self.device());
    kernels::arg_extreme_rows(a.view(), values, indices, max);
    if (detail::needs_grad({&self})) {
        a.rows_view = Tensor();  // the backward needs the geometry only
        detail::record(values, max ? "MaxBackward0" : "MinBackward0", {&self},
                       [a, i = indices.reshape(Shape{a.rows, 1})](const Tensor& g, const NeedsGrad&) {
                           Tensor dx = detail::make_empty(Shape{a.rows, a.width}, g.dtype(), g.device());
                           kernels::fill(dx, 0);
                           kernels::scatter_rows(g.reshape(Shape{a.rows, 1}).contiguous(), i, dx);
                           return Grads{a.restore(dx, a.width)};
                       });
    }
    return {values, indices};
}

/// argmax/argmin: the index along `dim`, or into the flattened tensor without one.
Tensor arg_extreme(const Tensor& self, std::optional<std::int64_t> dim, bool keepdim, bool max) {
    if (self.defined() && detail::is_narrow(self.dtype())) return arg_extreme(self.to(kInt64), dim, keepdim, max);
    const char* op = max ? "argmax" : "argmin";
    detail::check_defined(self, op);
    if (dim) {
        detail::AlongDim a = detail::along_dim(self, *dim, op);
        if (a.width == 0)
            detail::fail(op, "Expected reduction dim " + std::to_string(*dim) + " to have non-zero size (shape " +
                                 to_string(self.shape()) + ")");
        const Shape out_shape = keepdim ? a.with_size(1) : a.without();
        Tensor values = detail::make_empty(out_shape, self.dtype(), self.device());
        Tensor indices = detail::make_empty(out_shape, kInt64, self.device());
        kernels::arg_extreme_rows(a.view(), values, indices, max);
        return indices;
    }
    if (self.numel() == 0)
        detail::fail(op, "Expected reduction dim to be specified for input.numel() == 0 (shape " +
                             to_string(self.shape()) + ")");
    detail::AlongDim a = detail::along_dim(self.detach().reshape(Shape{-1}), 0, op);
    // keepdim without a dim keeps every dim, as size 1.
    const Shape out_shape =
        keepdim ? Shape(std::vector<std::int64_t>(static_cast<std::size_t>(self.dim()), 1)) : Shape{};
    Tensor values = detail::make_empty(out_shape, self.dtype(), self.device());
    Tensor indices = detail::make_empty(out_shape, kInt64, self.device());
    kernels::arg_extreme_rows(a.view(), values, indices, max);
    return indices;
}

/// PyTorch 1.13's prod_safe_zeros_backward: grad times the product of the other elements along dim,
/// as the exclusive cumulative products from the front and from the back.
Tensor prod_safe_zeros_backward(const Tensor& grad, const Tensor& input, std::int64_t dim) {
    if (input.numel() == 0) return grad.expand(input.shape());
    Shape ones_shape = input.shape();
    ones_shape[dim] = 1;
    const Tensor ones = xgrad::ones(ones_shape, FactoryOptions(grad.dtype()).device(grad.device()));
    const std::int64_t n = input.size(dim);
    const Tensor front = cat({ones, input.narrow(dim, 0, n - 1)}, dim).cumprod(dim);
    const Tensor back = cat({ones, input.narrow(dim, 1, n - 1).flip(Dims{dim})}, dim).cumprod(dim).flip(Dims{dim});
    return grad * (front * back);
}

/// prod along `a`'s dim (of `a.shape`: all of `self` as one dim for prod()), read through `view`, with
/// PyTorch 1.13's prod_backward as its gradient. `innermost`: PyTorch multiplies in vector lanes
/// (prod_rows' `lanes`), the reduced elements being contiguous in memory.
Tensor prod_impl(const Tensor& self, const detail::AlongDim& a, const kernels::RowsView& view, const Shape& out_shape,
                 const char* name, bool innermost) {
    Tensor out = detail::make_empty(out_shape, self.dtype(), self.device());
    kernels::prod_rows(view, out, innermost);
    if (detail::needs_grad({&self})) {
        const bool all = std::string(name) == "ProdBackward0";
        detail::record(out, name, {&self},
                       [all, dim = a.dim, kept = a.with_size(1), x = detail::Saved(self), o = detail::Saved(out)](
                           const Tensor& g, const NeedsGrad&) {
                           // PyTorch 1.13's prod_backward, operation by operation: grad * (result / input)
                           // without zeros; with zeros, the products of the other elements (prod() of a
                           // tensor with several zeros: zeros, unless the backward is recorded).
                           const Tensor& x_in = x;
                           if (x_in.dim() == 0) return Grads{g};
                           const Tensor input = all ? x_in.reshape(Shape{-1}) : x_in;
                           const Tensor grad = g.reshape(kept), result = o->reshape(kept);
                           const std::int64_t zeros = input.eq(0.0).sum().item<std::int64_t>();
                           Tensor dx;
                           if (zeros == 0)
                               dx = grad * (result / input);
                           else if (all && zeros > 1 && !is_grad_enabled())
                               dx = zeros_like(input);
                           else
                               dx = prod_safe_zeros_backward(grad, input, dim);
                           return Grads{dx.reshape(x_in.shape())};
                       });
    }
    return out;
}

/// PyTorch 1.13's cumprod_backward, operation by operation (its bits), for the output y of x.cumprod(d):
/// without zeros, the reversed cumulative sum of y·grad divided by x; with zeros, that sum over the
/// places before a slice's first zero, and at the first zero grad's sum weighted by the products of
/// the elements after it (up to the next zero), times y just before it; 0 after it.
Tensor cumprod_backward(const Tensor& grad, const Tensor& input, const Tensor& output, std::int64_t d) {
    if (input.numel() <= 1 || input.size(d) == 1) return grad;
    const Dims dims{d};
    auto reversed_cumsum = [&](const Tensor& t) { return t.flip(dims).cumsum(d).flip(dims); };
    const Tensor w = output * grad;
    const Tensor is_zero = input.eq(0.0);
    if (!is_zero.any().item<bool>()) return reversed_cumsum(w).div(input);
    const Tensor zeros_so_far = is_zero.cumsum(d);
    const Tensor before = zeros_so_far.eq(0.0), first_run = zeros_so_far.eq(1.0);  // [first zero, second zero)
    const Tensor first = is_zero.logical_and(first_run), after_first = first_run.logical_and(first.logical_not());
    const Tensor before_part = reversed_cumsum(w.masked_fill(before.logical_not(), 0.0)).div(input);
    // y just before the first zero (1 when the slice starts with it).
    const Tensor at = before.sum(dims, true);
    const Tensor prev = output.gather(d, (at - 1).clamp_min(0.0)).masked_fill(at.eq(0.0), 1.0);
    const Tensor first_part =
        (input.masked_fill(after_first.logical_not(), 1.0).cumprod(d) * grad.masked_fill(first_run.logical_not(), 0.0))
            .sum(dims, true) *
        prev;
    return where(before, before_part, where(first, first_part, zeros_like(input)));
}

Tensor scan_impl(const Tensor& self, std::int64_t dim, bool prod) {
    if (self.defined() && detail::is_narrow(self.dtype()))
        return scan_impl(self.to(kInt64), dim, prod);  // int64, as PyTorch
    const char* op = prod ? "cumprod" : "cumsum";
    detail::AlongDim a = detail::along_dim(self, dim, op, /*build_rows=*/false);
    // A leading dim of a contiguous tensor (every dim before it of size 1, some after it larger) is
    // scanned in place, as (width, rows), column by column: no transposed copies in and out.
    bool leading = self.is_contiguous() && a.rows > 1;
    for (std::int64_t d = 0; d < a.dim; ++d) leading = leading && self.size(d) == 1;
    Tensor out;
    if (leading) {
        out = detail::make_empty(self.shape(), self.dtype(), self.device());
        kernels::scan_rows({self.detach(), a.rows, a.width, true}, out, prod, /*reverse=*/false);
    } else {
        a.rows_view = a.to_rows(self.detach(), a.width);
        Tensor rows = detail::make_empty(Shape{a.rows, a.width}, self.dtype(), self.device());
        kernels::scan_rows(a.view(), rows, prod, /*reverse=*/false);
        out = a.restore(rows, a.width);
    }
    if (detail::needs_grad({&self})) {
        a.rows_view = Tensor();
        if (prod) {
            detail::record(out, "CumprodBackward0", {&self},
                           [d = a.dim, x = detail::Saved(self), o = detail::Saved(out)](
                               const Tensor& g, const NeedsGrad&) { return Grads{cumprod_backward(g, x, o, d)}; });
            return out;
        }
        detail::record(out, "CumsumBackward0", {&self}, [a, leading](const Tensor& g, const NeedsGrad&) {
            // d cumsum: the running sum of the gradient from the end
            if (leading) {  // in place
                Tensor dx = detail::make_empty(g.shape(), g.dtype(), g.device());
                kernels::scan_rows({g.contiguous(), a.rows, a.width, true}, dx, false, true);
                return Grads{dx};
            }
            Tensor dx = detail::make_empty(Shape{a.rows, a.width}, g.dtype(), g.device());
            kernels::scan_rows({a.to_rows(g, a.width), a.rows, a.width, false}, dx, /*prod=*/false, /*reverse=*/true);
            return Grads{a.restore(dx, a.width)};
        });
    }
    return out;
}

}  // namespace

namespace detail {

Tensor vector_norm(const Tensor& x, double p, const Dims& dims, bool keepdim, const char* op, const char* name) {
    check_defined(x, op);
    if (!x.is_floating_point()) fail(op, "needs a floating-point tensor, got " + to_string(x.dtype()));
    if (std::isnan(p)) fail(op, "the order p is NaN");
    Plan pl = plan(x, dims, keepdim, op);
    // Over no elements the ±inf norm has no identity: linalg.vector_norm refuses it, and PyTorch 1.13's
    // Tensor.norm gives 0.
    const bool empty_inf = std::isinf(p) && pl.width == 0;
    if (empty_inf && std::string_view(op) != "norm")
        fail(op, std::string("cannot compute the ") + (p > 0 ? "inf" : "-inf") +
                     " norm over no elements (the operation has no identity): shape " + to_string(x.shape()));
    Tensor out;
    {
        NoGradGuard no_grad;
        const Tensor r = pl.rows_view.reshape({pl.rows, pl.width});  // each output's elements in a row
        if (empty_inf) {
            out = zeros(pl.out_shape, FactoryOptions(x.dtype()).device(x.device()));
        } else if (std::isinf(p) || p == 0.0) {
            const Tensor n = std::isinf(p) ? (p > 0 ? r.abs().amax(1, true) : r.abs().amin(1, true))
                                           : r.ne(0.0).to(x.dtype()).sum(1, true);
            out = n.reshape(pl.out_shape);
        } else {
            // PyTorch's order (kernels::Backend::norm_rows), and its float fast path where its
            // TensorIterator finds one reduced dim, contiguous in memory (is_reduce_lastdim): its bits.
            bool lanes = false;
            if (p == 2.0 && x.dtype() == kFloat32) {
                Strides shape(static_cast<std::size_t>(x.dim()), 1);
                std::vector<bool> reduced(static_cast<std::size_t>(x.dim()), false);
                for (std::int64_t d = 0; d < x.dim(); ++d) {
                    shape[static_cast<std::size_t>(d)] = x.size(d);
                    reduced[static_cast<std::size_t>(d)] = pl.reduced[static_cast<std::size_t>(d)] != 0;
                }
                const auto it = iter_dims(shape, x.strides(), reduction_out_strides(shape, reduced, keepdim));
                lanes = it[0][2] == 0 && it[0][1] == 1 &&  // dims after the first kept (or padding)
                        std::all_of(it.begin() + 1, it.end(), [](const IterDim& d) { return d[2] != 0 || d[0] == 1; });
            }
            out = make_empty(Shape{pl.rows}, x.dtype(), x.device(), op);
            kernels::norm_rows({r, pl.rows, pl.width, false}, out, p, lanes);
            out = out.reshape(pl.out_shape);
        }
    }
    if (!needs_grad({&x})) return out;
    std::vector<std::int64_t> reduced;  // the reduced dims, for the ±∞ norm's share of its ties
    for (std::size_t d = 0; d < pl.reduced.size(); ++d)
        if (pl.reduced[d]) reduced.push_back(static_cast<std::int64_t>(d));
    record(out, name, {&x},
           [sx = Saved(x.detach()), sn = Saved(out), p, k = pl.kept_shape, reduced](const Tensor& g_out,
                                                                                    const NeedsGrad&) {
               // PyTorch's norm_backward, with the norm and its gradient in keepdim form.
               const Tensor &x = sx, n = sn->reshape(k), g = g_out.reshape(k);
               if (p == 0.0) return Grads{Tensor()};  // no gradient, as PyTorch's (x.grad stays undefined)
               if (p == 1.0) return Grads{x.sign() * g};
               if (std::isinf(p)) {
                   // The gradient shared evenly by the elements whose |x| is the norm: (norm - |x|) has
                   // one sign over the reduced elements, so 1 - |sign| marks them exactly.
                   const Tensor mask = 1.0 - (n - x.abs()).sign().abs();
                   return Grads{x.sign() * (g / mask.sum(Dims(reduced), true)) * mask};
               }
               // PyTorch 1.13's norm_backward, operation by operation (its bits): for p < 1,
               // (sgn(x) |x|^(p-1), 0 where x is 0) * g * ‖x‖^(1-p); otherwise sgn(x) |x|^(p-1) (for p > 2,
               // x |x|^(p-2)) times g / ‖x‖^(p-1), that quotient 0 where the norm is 0.
               // Its masked_fill_ fills in place, keeping the layout of what it fills (masked_fill's
               // result would be row-major), which decides the order of later sums (an expanded x's).
               auto zero_where = [](Tensor t, const Tensor& mask) {
                   t.masked_fill_(mask, 0.0);
                   return t;
               };
               if (p < 1.0) {
                   const Tensor scaled = x.sign() * zero_where(x.abs().pow(p - 1.0), x.eq(0.0));
                   return Grads{scaled * g * n.pow(1.0 - p)};
               }
               // For p = 2: grad * (self / norm), 0 where the norm is 0.
               if (p == 2.0) return Grads{g * zero_where(x / n, n.eq(0.0))};
               const Tensor scaled = p < 2.0 ? x.sign() * x.abs().pow(p - 1.0) : x * x.abs().pow(p - 2.0);
               return Grads{scaled * zero_where(g / n.pow(p - 1.0), n.eq(0.0))};
           });
    return out;
}

}  // namespace detail

Tensor Tensor::norm(double p) const {
    return detail::vector_norm(*this, p, Dims(std::vector<std::int64_t>{}), false, "norm", "NormBackward1");
}

Tensor Tensor::norm(double p, const Dims& dims, bool keepdim) const {
    return detail::vector_norm(*this, p, dims, keepdim, "norm", "NormBackward1");
}

Tensor linalg::vector_norm(const Tensor& x, double ord, const Dims& dims, bool keepdim) {
    return detail::vector_norm(x, ord, dims, keepdim, "linalg.vector_norm", "LinalgVectorNormBackward0");
}

Tensor outer(const Tensor& a, const Tensor& b) {
    detail::check_defined(a, "outer");
    detail::check_defined(b, "outer");
    if (a.dim() != 1 || b.dim() != 1)
        detail::fail("outer",
                     "expects two 1-D tensors, got shapes " + to_string(a.shape()) + " and " + to_string(b.shape()));
    // PyTorch's composite: a.reshape({-1, 1}) * b (MulBackward0).
    return a.reshape({a.size(0), 1}) * b;
}

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
    return var_impl(*this, Dims(std::vector<std::int64_t>{}), 1.0, false, false);
}
Tensor Tensor::var(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased ? 1.0 : 0.0, keepdim, false);
}
Tensor Tensor::var(const Dims& dims, Correction correction, bool keepdim) const {
    return var_impl(*this, dims, correction.value, keepdim, false);
}
Tensor Tensor::std() const {
    return var_impl(*this, Dims(std::vector<std::int64_t>{}), 1.0, false, true);
}
Tensor Tensor::std(const Dims& dims, bool unbiased, bool keepdim) const {
    return var_impl(*this, dims, unbiased ? 1.0 : 0.0, keepdim, true);
}
Tensor Tensor::std(const Dims& dims, Correction correction, bool keepdim) const {
    return var_impl(*this, dims, correction.value, keepdim, true);
}
std::pair<Tensor, Tensor> var_mean(const Tensor& x, const Dims& dims, bool unbiased, bool keepdim) {
    Tensor mean;
    Tensor var = var_impl(x, dims, unbiased ? 1.0 : 0.0, keepdim, false, &mean);
    return {var, mean};
}
std::pair<Tensor, Tensor> std_mean(const Tensor& x, const Dims& dims, bool unbiased, bool keepdim) {
    Tensor mean;
    Tensor std = var_impl(x, dims, unbiased ? 1.0 : 0.0, keepdim, true, &mean);
    return {std, mean};
}
Tensor Tensor::max() const {
    return extreme_all(*this, true);
}
Tensor Tensor::min() const {
    return extreme_all(*this, false);
}
// One dim: max(dim).values, whose gradient goes to the index; several: amax.
Tensor Tensor::max(const Dims& dims, bool keepdim) const {
    return dims.vec().size() == 1 ? extreme_dim(*this, dims.vec()[0], keepdim, true).values
                                  : amax_impl(*this, dims, keepdim, true);
}
Tensor Tensor::min(const Dims& dims, bool keepdim) const {
    return dims.vec().size() == 1 ? extreme_dim(*this, dims.vec()[0], keepdim, false).values
                                  : amax_impl(*this, dims, keepdim, false);
}
ValuesIndices Tensor::max(std::int64_t dim, bool keepdim) const {
    return extreme_dim(*this, dim, keepdim, true);
}
ValuesIndices Tensor::min(std::int64_t dim, bool keepdim) const {
    return extreme_dim(*this, dim, keepdim, false);
}
Tensor Tensor::amax(const Dims& dims, bool keepdim) const {
    return amax_impl(*this, dims, keepdim, true);
}
Tensor Tensor::amin(const Dims& dims, bool keepdim) const {
    return amax_impl(*this, dims, keepdim, false);
}
Tensor Tensor::argmax(std::optional<std::int64_t> dim, bool keepdim) const {
    detail::refuse_bool(*this, "argmax", "argmax");
    return arg_extreme(*this, dim, keepdim, true);
}
Tensor Tensor::argmin(std::optional<std::int64_t> dim, bool keepdim) const {
    detail::refuse_bool(*this, "argmin", "argmin");
    return arg_extreme(*this, dim, keepdim, false);
}
// A strided input (permuted, sliced, expanded) is read in place, in PyTorch's order for its strides,
// which decide the order of the products: a copy would be multiplied in the order of a contiguous one.
Tensor Tensor::prod() const {
    detail::check_defined(*this, "prod");
    if (detail::is_narrow(dtype())) return to(kInt64).prod();
    detail::AlongDim a;  // all of the input as one dim
    a.shape = Shape{numel()};
    a.width = numel();
    if (!is_contiguous())
        return prod_impl(
            *this, a,
            rows_of(plan(*this, Dims(std::vector<std::int64_t>{}), false, "prod", false, false, Strided::kInPlace)),
            Shape{}, "ProdBackward0", false);
    return prod_impl(*this, a, kernels::RowsView{detach().reshape(Shape{1, -1}), 1, a.width, false}, Shape{},
                     "ProdBackward0", true);
}
Tensor Tensor::prod(std::int64_t dim, bool keepdim) const {
    if (defined() && detail::is_narrow(dtype())) return to(kInt64).prod(dim, keepdim);
    detail::AlongDim a = detail::along_dim(*this, dim, "prod", /*build_rows=*/false);
    const Shape out_shape = keepdim ? a.with_size(1) : a.without();
    if (!is_contiguous())
        return prod_impl(*this, a, rows_of(plan(*this, Dims{dim}, keepdim, "prod", false, false, Strided::kInPlace)),
                         out_shape, "ProdBackward1", false);
    // The reduced dim is innermost where every dim after it has size 1, leading where every dim before
    // it has size 1: then the tensor is read in place, as (width, rows), column by column.
    bool innermost = true, leading = true;
    for (std::int64_t d = a.dim + 1; d < this->dim(); ++d) innermost = innermost && size(d) == 1;
    for (std::int64_t d = 0; d < a.dim; ++d) leading = leading && size(d) == 1;
    const kernels::RowsView view = innermost || !leading
                                       ? kernels::RowsView{a.to_rows(detach(), a.width), a.rows, a.width}
                                       : kernels::RowsView{detach(), a.rows, a.width, true};
    return prod_impl(*this, a, view, out_shape, "ProdBackward1", innermost);
}
Tensor Tensor::cumsum(std::int64_t dim) const {
    return scan_impl(*this, dim, false);
}
Tensor Tensor::cumprod(std::int64_t dim) const {
    return scan_impl(*this, dim, true);
}
Tensor Tensor::logsumexp(const Dims& dims, bool keepdim) const {
    detail::check_defined(*this, "logsumexp");
    // An int64 tensor gives float32, as PyTorch.
    const Tensor x = is_floating_point() ? detach() : detach().to(kFloat32);
    // The plan for its shapes only: the outer layout spares a leading reduction the transposed copy.
    Plan p = plan(x, dims, keepdim, "logsumexp", /*allow_outer=*/true);
    // Subtract the largest element of each row; an infinite one is clamped to the largest finite
    // number (PyTorch sets it to 0), which gives the same inf or -inf, and an empty row gives -inf.
    const double big = x.dtype() == kFloat32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
    Tensor m = p.width == 0 ? xgrad::zeros(p.kept_shape, FactoryOptions(x.dtype()).device(x.device()))
                            : x.amax(dims, true).clamp(-big, big);
    Tensor out = ((x - m).exp().sum(dims, true).log() + m).reshape(p.out_shape);
    if (detail::needs_grad({this}))
        detail::record(
            out, "LogsumexpBackward0", {this},
            [x = detail::Saved(*this), o = detail::Saved(out), k = p.kept_shape](const Tensor& g, const NeedsGrad&) {
                return Grads{g.reshape(k) * (x->detach() - o->reshape(k)).exp()};
            });
    return out;
}

}  // namespace xgrad
