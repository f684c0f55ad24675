// Sorting along a dim: sort, argsort and topk, whose gradients go back to the indices they return.
#include <optional>
#include <string>
#include <vector>

#include "detail/along_dim.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::NeedsGrad;
using Grads = detail::GradList;

namespace {

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
    if (detail::needs_grad({&self})) {
        a.rows_view = Tensor();  // the backward needs the geometry only
        detail::record(out, name, {&self}, [a, k, i = indices](const Tensor& g, const NeedsGrad&) {
            Tensor dx = detail::make_empty(Shape{a.rows, a.width}, g.dtype(), g.device());
            kernels::fill(dx, 0);
            kernels::scatter_rows(a.to_rows(g, k), i, dx);
            return Grads{a.restore(dx, a.width)};
        });
    }
    return {out, a.restore(indices, k)};
}

}  // namespace

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
