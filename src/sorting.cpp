// Sorting along a dim: sort, argsort, topk, kthvalue and median, whose gradients go back to the
// indices they return.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "detail/along_dim.hpp"
#include "detail/maps.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::NeedsGrad;
using Grads = detail::GradList;

namespace {

/// Records `name` on `out`, k values taken from each row of `self` along a's dim at `indices` (rows × k):
/// the gradient (of a's shape with that dim of size k, or without it when k is 1) goes back to those
/// places, zeros elsewhere.
void record_scatter_back(Tensor& out, const char* name, const Tensor& self, detail::AlongDim a, const Tensor& indices,
                         std::int64_t k) {
    a.rows_view = Tensor();  // the backward needs the geometry only
    detail::record(out, name, {&self}, [a, k, i = indices](const Tensor& g, const NeedsGrad&) {
        Tensor dx = detail::make_empty(Shape{a.rows, a.width}, g.dtype(), g.device());
        kernels::fill(dx, 0);
        kernels::scatter_rows(a.to_rows(g.reshape(a.with_size(k)), k), i, dx);
        return Grads{a.restore(dx, a.width)};
    });
}

/// The first `k` (all without one) of each row along `dim` in order; `name` is the grad_fn's.
ValuesIndices sorted_rows(const Tensor& self, std::int64_t dim, std::optional<std::int64_t> k_or_all, bool descending,
                          kernels::TieOrder ties, const char* op, const char* name) {
    if (self.defined() && detail::is_narrow(self.dtype())) {
        ValuesIndices r = sorted_rows(self.to(kInt64), dim, k_or_all, descending, ties, op, name);
        return {r.values.to(self.dtype()), r.indices};
    }
    detail::AlongDim a = detail::along_dim(self, dim, op);
    const std::int64_t k = k_or_all.value_or(a.width);
    if (k < 0 || k > a.width)
        detail::fail(op, "selected index k out of range (k = " + std::to_string(k) + ", size " +
                             std::to_string(a.width) + " along dim " + std::to_string(dim) + " of shape " +
                             to_string(self.shape()) + ")");
    // PyTorch returns a 0-d tensor of no defined value for a 0-d tensor's topk(0); refuse it instead.
    if (self.dim() == 0 && k != 1) detail::fail(op, "k must be 1 for a 0-d tensor (k = " + std::to_string(k) + ")");
    Tensor values = detail::make_empty(Shape{a.rows, k}, self.dtype(), self.device());
    Tensor indices = detail::make_empty(Shape{a.rows, k}, kInt64, self.device());
    kernels::sort_rows(a.view(), values, indices, k, descending, ties);
    Tensor out = a.restore(values, k);
    if (detail::needs_grad({&self})) record_scatter_back(out, name, self, a, indices, k);
    return {out, a.restore(indices, k)};
}

/// The element of rank k (from 1) of each row along `dim`, smallest first, with its index: kthvalue's
/// (PyTorch's quickselect decides between equal values), or with `median` the lower median's, rank
/// (width + 1) / 2 by value and then index, except that a row holding NaN gives its first NaN, as
/// PyTorch's median.
ValuesIndices ranked(const Tensor& self, std::int64_t dim, std::int64_t k, bool keepdim, bool median, const char* op,
                     const char* name) {
    if (self.defined() && detail::is_narrow(self.dtype())) {
        ValuesIndices r = ranked(self.to(kInt64), dim, k, keepdim, median, op, name);
        return {r.values.to(self.dtype()), r.indices};
    }
    detail::AlongDim a = detail::along_dim(self, dim, op);
    if (median) {
        if (a.width == 0)
            detail::fail(op, "Expected reduction dim " + std::to_string(a.dim) + " to have non-zero size (shape " +
                                 to_string(self.shape()) + ")");
        k = (a.width + 1) / 2;
    }
    const kernels::TieOrder ties = median ? kernels::TieOrder::kIndex : kernels::TieOrder::kSelect;
    if (k < 1 || k > a.width)
        detail::fail(op, "selected number k out of range for dimension " + std::to_string(a.dim) +
                             " (k = " + std::to_string(k) + ", size " + std::to_string(a.width) + " of shape " +
                             to_string(self.shape()) + ")");
    Tensor at;  // rows × 1
    {
        NoGradGuard no_grad;
        Tensor values = detail::make_empty(Shape{a.rows, k}, self.dtype(), self.device());
        Tensor indices = detail::make_empty(Shape{a.rows, k}, kInt64, self.device());
        kernels::sort_rows(a.view(), values, indices, k, false, ties);
        at = indices.narrow(1, k - 1, 1);
        if (median && self.is_floating_point()) {
            const Tensor nan = a.rows_view.isnan();
            at = where(nan.any(1, true), nan.to(kUInt8).argmax(1, true), at);
        }
        at = at.contiguous();
    }
    const Shape out_shape = keepdim ? a.with_size(1) : a.without();
    Tensor out = a.rows_view.gather(1, at).reshape(out_shape);
    if (detail::needs_grad({&self})) record_scatter_back(out, name, self, a, at, 1);
    return {out, at.reshape(out_shape)};
}

}  // namespace

ValuesIndices Tensor::kthvalue(std::int64_t k, std::int64_t dim, bool keepdim) const {
    return ranked(*this, dim, k, keepdim, false, "kthvalue", "KthvalueBackward0");
}

ValuesIndices Tensor::median(std::int64_t dim, bool keepdim) const {
    return ranked(*this, dim, 0, keepdim, true, "median", "MedianBackward1");
}

Tensor Tensor::median() const {
    detail::check_defined(*this, "median");
    if (numel() == 0) {  // PyTorch gives NaN (an integer tensor cannot hold it)
        if (!is_floating_point()) detail::fail("median", "of an empty " + to_string(dtype()) + " tensor");
        return full({}, NAN, FactoryOptions(dtype()).device(device()));
    }
    Tensor out;
    {
        NoGradGuard no_grad;
        out = ranked(reshape({numel()}), 0, 0, false, true, "median", "MedianBackward0").values;
    }
    // As PyTorch's: the gradient is shared evenly by the elements equal to the median (the NaNs when
    // it is NaN), where median(dim) gives it to the one index.
    if (detail::needs_grad({this}))
        detail::record(out, "MedianBackward0", {this},
                       [x = detail::Saved(*this), o = detail::Saved(out)](const Tensor& g, const NeedsGrad&) {
                           Tensor hit =
                               detail::map_binary(x, o->to(x->dtype()), "median", kernels::BinaryOp::kEqualOrBothNan);
                           return Grads{hit * (g / hit.sum())};
                       });
    return out;
}

// Without `stable`, equal values come out in the order of PyTorch's CPU sort (libstdc++'s std::sort),
// not in index order.
ValuesIndices Tensor::sort(std::int64_t dim, bool descending, bool stable) const {
    // PyTorch records its `stable=` overload as SortBackward1.
    return sorted_rows(*this, dim, std::nullopt, descending,
                       stable ? kernels::TieOrder::kIndex : kernels::TieOrder::kSort, "sort",
                       stable ? "SortBackward1" : "SortBackward0");
}

Tensor Tensor::argsort(std::int64_t dim, bool descending, bool stable) const {
    detail::check_defined(*this, "argsort");
    return detach().sort(dim, descending, stable).indices;
}

// PyTorch's CPU topk loop, ties and `sorted=false` included (the k then come in its nth_element order).
ValuesIndices Tensor::topk(std::int64_t k, std::int64_t dim, bool largest, bool sorted) const {
    return sorted_rows(*this, dim, k, largest, sorted ? kernels::TieOrder::kTopk : kernels::TieOrder::kTopkUnsorted,
                       "topk", "TopkBackward0");
}

}  // namespace xgrad
