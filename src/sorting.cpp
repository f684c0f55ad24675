// Sorting along a dim: sort, argsort, topk, kthvalue, median, nanmedian and mode, whose gradients go
// back to the indices they return; quantile and nanquantile, composed of sort, gather and lerp.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "detail/along_dim.hpp"
#include "detail/maps.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

namespace detail {

void record_evenly(Tensor& out, const char* name, const Tensor& self) {
    if (!needs_grad({&self})) return;
    record(out, name, {&self}, [name, x = Saved(self), o = Saved(out)](const Tensor& g, const NeedsGrad&) {
        Tensor hit = map_binary(x, o->to(x->dtype()), name, kernels::BinaryOp::kEqualOrBothNan);
        // PyTorch's CPU evenly_distribute_backward: zeros with grad / count filled in where the input is
        // the result, so +0 elsewhere (hit * share would give -0 there for a negative grad).
        return GradList{xgrad::where(hit.to(kBool), g / hit.sum(), 0.0)};
    });
}

}  // namespace detail

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

/// The element of each row along a's dim at `at` (rows × 1, int64) and that index, in keepdim or
/// reduced shape; the gradient goes back to it, recorded as `name`.
ValuesIndices take_at(const Tensor& self, const detail::AlongDim& a, const Tensor& at, bool keepdim, const char* name) {
    const Shape out_shape = keepdim ? a.with_size(1) : a.without();
    Tensor out = a.rows_view.gather(1, at).reshape(out_shape);
    if (detail::needs_grad({&self})) record_scatter_back(out, name, self, a, at, 1);
    return {out, at.reshape(out_shape)};
}

/// along_dim for a statistic that needs at least one element per row: PyTorch's message otherwise.
detail::AlongDim along_nonempty(const Tensor& self, std::int64_t dim, const char* op) {
    detail::AlongDim a = detail::along_dim(self, dim, op);
    if (a.width == 0)
        detail::fail(op, "Expected reduction dim " + std::to_string(a.dim) + " to have non-zero size (shape " +
                             to_string(self.shape()) + ")");
    return a;
}

/// Every row along a's dim sorted whole, ascending, equal values in `ties` order (without a record):
/// (values, indices), rows × width.
std::pair<Tensor, Tensor> sorted_whole_rows(const Tensor& self, const detail::AlongDim& a, kernels::TieOrder ties) {
    Tensor values = detail::make_empty(Shape{a.rows, a.width}, self.dtype(), self.device());
    Tensor indices = detail::make_empty(Shape{a.rows, a.width}, kInt64, self.device());
    kernels::sort_rows(a.view(), values, indices, a.width, false, ties);
    return {values, indices};
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
    Tensor out = a.restore(values, k), at = a.restore(indices, k);
    if (!k_or_all && !detail::row_major(self)) {
        // sort's results take the input's layout, as PyTorch's (its meta function: self's strides when
        // dense, else infer_dense_strides); topk's stay row-major, as its.
        auto relaid = [&](const Tensor& t) {
            Tensor r = detail::empty_preserving(self, t.dtype(), op);
            kernels::copy(t, r);
            return r;
        };
        out = relaid(out);
        at = relaid(at);
    }
    if (detail::needs_grad({&self})) record_scatter_back(out, name, self, a, indices, k);
    return {out, at};
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
    detail::AlongDim a = median ? along_nonempty(self, dim, op) : detail::along_dim(self, dim, op);
    if (median) k = (a.width + 1) / 2;
    const kernels::TieOrder ties = median ? kernels::TieOrder::kRank : kernels::TieOrder::kSelect;
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
    return take_at(self, a, at, keepdim, name);
}

/// The index that std::nth_element leaves first among n elements that all compare equivalent. PyTorch's
/// nanmedian picks a row's median with std::nth_element over the indices, its comparator putting NaN
/// after every number and treating NaNs as equivalent; in a row of NaNs the median's rank is 0, so its
/// index is this (0, 0, 2, 0, 2, ... for n = 1, 2, 3, 4, 5; 67 for 100), from the same libstdc++.
std::int64_t all_nan_index(std::int64_t n) {
    std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
    std::iota(idx.begin(), idx.end(), std::int64_t{0});
    std::nth_element(idx.begin(), idx.begin(), idx.end(), [](std::int64_t, std::int64_t) { return false; });
    return idx.empty() ? 0 : idx.front();
}

enum class Interpolation { kLinear, kLower, kHigher, kMidpoint, kNearest };

Interpolation interpolation_of(const std::string& s, const char* op) {
    if (s == "linear") return Interpolation::kLinear;
    if (s == "lower") return Interpolation::kLower;
    if (s == "higher") return Interpolation::kHigher;
    if (s == "midpoint") return Interpolation::kMidpoint;
    if (s == "nearest") return Interpolation::kNearest;
    detail::fail(op, "interpolation must be one of linear, lower, higher, midpoint or nearest, but got " + s);
}

/// One q in [0, 1] as a 0-d tensor of self's dtype and device.
Tensor scalar_q(const Tensor& self, double q, const char* op) {
    if (!(q >= 0 && q <= 1)) {
        std::ostringstream shown;  // "1.5", as PyTorch's message writes it
        shown << q;
        detail::fail(op, "q must be in the range [0, 1] but got " + shown.str());
    }
    detail::check_defined(self, op);
    return full({}, q, FactoryOptions(self.dtype()).device(self.device()));
}

/// torch.quantile / torch.nanquantile, in PyTorch 1.13's steps (quantile_compute), so that the values,
/// the gradients and the grad_fn are its: sort along `dim` (all elements without one), ranks q·(n - 1)
/// (q·(count - 1) of the numbers with `ignore_nan`), adjusted for the interpolation, the values at
/// floor and ceil of the ranks gathered and lerped. Without `ignore_nan` a row holding NaN gives NaN
/// (its rank goes to the last place, where NaN sorts); with it, a row of NaNs gives NaN.
Tensor quantile_of(const Tensor& self, const Tensor& q, std::optional<std::int64_t> dim, bool keepdim,
                   const std::string& interpolation, bool ignore_nan) {
    const char* op = ignore_nan ? "nanquantile" : "quantile";
    detail::check_defined(self, op);
    detail::check_defined(q, op);
    if (self.numel() == 0) detail::fail(op, "input tensor must be non-empty (shape " + to_string(self.shape()) + ")");
    if (q.dim() > 1) detail::fail(op, "q must be a scalar or 1D tensor, got shape " + to_string(q.shape()));
    if (self.dtype() != kFloat32 && self.dtype() != kFloat64)
        detail::fail(op, "input tensor must be either float or double dtype, got " + to_string(self.dtype()));
    if (q.dtype() != self.dtype())
        detail::fail(op, "q tensor must be same dtype as the input tensor (" + to_string(self.dtype()) + "), got " +
                             to_string(q.dtype()));
    detail::check_same_device(self, q, op);
    const Interpolation mode = interpolation_of(interpolation, op);
    {
        NoGradGuard no_grad;
        if (!q.ge(0.0).logical_and(q.le(1.0)).all().item<bool>())
            detail::fail(op, "q values must be in the range [0, 1]");
    }
    // The output's shape without q's dim; the sorted values as (that shape, n).
    const std::int64_t nd = self.dim();
    std::vector<std::int64_t> rest;
    Tensor sorted;
    if (dim) {
        const std::int64_t w = detail::wrap_dim(*dim, std::max<std::int64_t>(nd, 1), op);
        for (std::int64_t d = 0; d < nd; ++d)
            if (d != w || keepdim) rest.push_back(d == w ? 1 : self.size(d));
        sorted = w == nd - 1 ? self.sort(-1).values : self.unsqueeze(-1).transpose(w, -1).sort(-1).values;
    } else {
        if (keepdim) rest.assign(static_cast<std::size_t>(nd), 1);
        sorted = self.flatten().sort(-1).values;
    }
    std::vector<std::int64_t> in_shape = rest;
    in_shape.push_back(sorted.size(-1));
    sorted = sorted.reshape(Shape(in_shape));

    // The ranks carry q's gradient (through the linear interpolation's weights), as PyTorch's do.
    Tensor ranks;
    if (ignore_nan) {
        ranks = q.mul(sorted.isnan().logical_not().sum(Dims{-1}, true).sub(1));
        ranks = ranks.masked_fill(ranks.lt(0.0), 0.0);
    } else {
        const auto last = static_cast<double>(sorted.size(-1) - 1);
        ranks = q.mul(last).masked_fill(sorted.isnan().any(-1, true), last);
    }
    if (mode == Interpolation::kLower)
        ranks = ranks.floor();
    else if (mode == Interpolation::kHigher)
        ranks = ranks.ceil();
    else if (mode == Interpolation::kNearest)
        ranks = ranks.round();
    const Tensor at = ranks.detach(), below = at.to(kInt64);
    Tensor values = sorted.gather(-1, below);
    if (mode == Interpolation::kLinear || mode == Interpolation::kMidpoint) {
        Tensor weights = mode == Interpolation::kMidpoint ? full_like(ranks, 0.5) : ranks.sub(below);
        values = values.lerp(sorted.gather(-1, at.ceil().to(kInt64)), weights);
    }
    // PyTorch ends with in-place views (q's dim first for a q vector, then squeeze_(-1)): its result's
    // grad_fn is SqueezeBackward3.
    const bool vector = q.dim() == 1;
    Tensor out;
    {
        NoGradGuard no_grad;
        out = vector ? values.unsqueeze(0).transpose(0, -1).squeeze(-1) : values.squeeze(-1);
    }
    if (detail::needs_grad({&values}))
        detail::record(out, "SqueezeBackward3", {&values}, [vector](const Tensor& g, const NeedsGrad&) {
            return Grads{vector ? g.unsqueeze(-1).transpose(0, -1).squeeze(0) : g.unsqueeze(-1)};
        });
    return out;
}

}  // namespace

ValuesIndices Tensor::kthvalue(std::int64_t k, std::int64_t dim, bool keepdim) const {
    detail::refuse_bool(*this, "kthvalue", "kthvalue");
    return ranked(*this, dim, k, keepdim, false, "kthvalue", "KthvalueBackward0");
}

ValuesIndices Tensor::median(std::int64_t dim, bool keepdim) const {
    detail::check_defined(*this, "median");
    detail::refuse_bool(*this, "median", "median_out", false);
    return ranked(*this, dim, 0, keepdim, true, "median", "MedianBackward1");
}

Tensor Tensor::median() const {
    detail::check_defined(*this, "median");
    detail::refuse_bool(*this, "median", "median");
    if (numel() == 0) {  // PyTorch gives NaN (an integer tensor cannot hold it)
        if (!is_floating_point()) detail::fail("median", "of an empty " + to_string(dtype()) + " tensor");
        return full({}, NAN, FactoryOptions(dtype()).device(device()));
    }
    Tensor out;
    {
        NoGradGuard no_grad;
        out = ranked(reshape({numel()}), 0, 0, false, true, "median", "MedianBackward0").values;
    }
    detail::record_evenly(out, "MedianBackward0", *this);
    return out;
}

ValuesIndices Tensor::nanmedian(std::int64_t dim, bool keepdim) const {
    detail::check_defined(*this, "nanmedian");
    if (!is_floating_point()) return median(dim, keepdim);  // no NaN to leave out, as PyTorch
    const detail::AlongDim a = along_nonempty(*this, dim, "nanmedian");
    Tensor at;  // rows × 1
    {
        NoGradGuard no_grad;
        // NaN sorts last, equal values by index: the order of PyTorch's comparator.
        const Tensor indices = sorted_whole_rows(*this, a, kernels::TieOrder::kIndex).second;
        const Tensor count = a.rows_view.isnan().logical_not().sum(Dims{1}, true);  // rows × 1, int64
        // Rank (count - 1) / 2 among the numbers: the lower median.
        const Tensor rank = count.sub(1).clamp(0.0).div(2.0, "floor");  // int64
        at = indices.gather(1, rank);
        const Tensor none = count.eq(0);  // rows of NaNs (all_nan_index walks a whole row: only then)
        if (none.any().item<bool>()) at = where(none, full_like(rank, static_cast<double>(all_nan_index(a.width))), at);
    }
    return take_at(*this, a, at, keepdim, "NanmedianBackward1");
}

Tensor Tensor::nanmedian() const {
    detail::check_defined(*this, "nanmedian");
    if (!is_floating_point()) return median();
    if (numel() == 0) return full({}, NAN, FactoryOptions(dtype()).device(device()));
    Tensor out;
    {
        NoGradGuard no_grad;
        out = reshape({numel()}).nanmedian(0).values;
    }
    detail::record_evenly(out, "NanmedianBackward0", *this);
    return out;
}

ValuesIndices Tensor::mode(std::int64_t dim, bool keepdim) const {
    detail::check_defined(*this, "mode");
    if (detail::is_narrow(dtype())) {
        ValuesIndices r = to(kInt64).mode(dim, keepdim);
        return {r.values.to(dtype()), r.indices};
    }
    const detail::AlongDim a = along_nonempty(*this, dim, "mode");
    Tensor at;  // rows × 1
    {
        // PyTorch's CPU kernel: std::sort of each row's (value, index) pairs, then a scan for the
        // first longest run of equal values, whose last pair gives the index. kSort runs that sort
        // (NaN after the numbers, where PyTorch's comparison leaves NaN unordered).
        NoGradGuard no_grad;
        const std::int64_t w = a.width;
        const auto [values, indices] = sorted_whole_rows(*this, a, kernels::TieOrder::kSort);
        const FactoryOptions at_device = FactoryOptions(kInt64).device(device());
        // A run ends where the next value differs (after each NaN: NaN equals nothing) and at the end.
        const Tensor ends = cat({values.narrow(1, 0, w - 1).ne(values.narrow(1, 1, w - 1)),
                                 full({a.rows, 1}, 1, FactoryOptions(kBool).device(device()))},
                                1);
        // The ends' positions in order, w after them. A run's length is the step from the end before
        // it; the last run ends at w - 1, so the first w adds a step of 1, which never comes before
        // a run as long, and the later ones steps of 0.
        const Tensor ends_at = where(ends, arange(static_cast<double>(w), at_device).expand({a.rows, w}),
                                     full({a.rows, w}, static_cast<double>(w), at_device))
                                   .sort(1)
                                   .values;
        const Tensor steps = ends_at - cat({full({a.rows, 1}, -1, at_device), ends_at.narrow(1, 0, w - 1)}, 1);
        // argmax takes the first longest run: the smallest of the most frequent values.
        at = indices.gather(1, ends_at.gather(1, steps.argmax(1, true))).contiguous();
    }
    return take_at(*this, a, at, keepdim, "ModeBackward0");
}

Tensor Tensor::quantile(const Tensor& q, std::optional<std::int64_t> dim, bool keepdim,
                        const std::string& interpolation) const {
    return quantile_of(*this, q, dim, keepdim, interpolation, false);
}

Tensor Tensor::quantile(double q, std::optional<std::int64_t> dim, bool keepdim,
                        const std::string& interpolation) const {
    return quantile(scalar_q(*this, q, "quantile"), dim, keepdim, interpolation);
}

Tensor Tensor::nanquantile(const Tensor& q, std::optional<std::int64_t> dim, bool keepdim,
                           const std::string& interpolation) const {
    return quantile_of(*this, q, dim, keepdim, interpolation, true);
}

Tensor Tensor::nanquantile(double q, std::optional<std::int64_t> dim, bool keepdim,
                           const std::string& interpolation) const {
    return nanquantile(scalar_q(*this, q, "nanquantile"), dim, keepdim, interpolation);
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
    detail::refuse_bool(*this, "topk", "topk");
    return sorted_rows(*this, dim, k, largest, sorted ? kernels::TieOrder::kTopk : kernels::TieOrder::kTopkUnsorted,
                       "topk", "TopkBackward0");
}

}  // namespace xgrad

// ---- searchsorted and bucketize ------------------------------------------------------------------------

namespace xgrad {

namespace {

/// Where each of `values` goes in `boundaries`' last dim (its one row when it is 1-D, else the row with
/// the same leading indices), both promoted to their common dtype (narrow integers searched as int64).
Tensor search_sorted(const Tensor& boundaries, const Tensor& values, const SearchOptions& o, const char* op) {
    detail::check_defined(boundaries, op);
    detail::check_defined(values, op);
    detail::check_same_device(boundaries, values, op);
    if (boundaries.dtype() == kBool || values.dtype() == kBool)
        detail::fail(op, "not implemented for 'Bool' (boundaries " + to_string(boundaries.dtype()) + ", values " +
                             to_string(values.dtype()) + ")");
    const DType common = result_type(boundaries, values);
    const DType searched = common == kFloat32 || common == kFloat64 ? common : kInt64;
    NoGradGuard no_grad;
    Tensor sorted = boundaries;
    if (o.sorter.defined()) {
        detail::check_same_device(boundaries, o.sorter, op);
        if (o.sorter.shape() != boundaries.shape())
            detail::fail(op, "boundary and sorter must have the same size, but got boundary tensor " +
                                 to_string(boundaries.shape()) + " and got sorter tensor " +
                                 to_string(o.sorter.shape()));
        if (o.sorter.dtype() != kInt64)
            detail::fail(op, "sorter must be a tensor of long dtype but got dtype " + to_string(o.sorter.dtype()));
        if (o.sorter.numel() > 0 &&
            (o.sorter.min().item<std::int64_t>() < 0 || o.sorter.max().item<std::int64_t>() >= boundaries.size(-1)))
            detail::fail(op, "sorter index out of range (boundaries of shape " + to_string(boundaries.shape()) + ")");
        sorted = boundaries.gather(-1, o.sorter);
    }
    const Tensor s = sorted.to(searched).contiguous(), v = values.to(searched).contiguous();
    Tensor out = detail::make_empty(values.shape(), o.out_int32 ? kInt32 : kInt64, values.device(), op);
    const std::int64_t m = s.size(-1), n = values.dim() == 0 ? 1 : values.size(-1);
    if (out.numel() == 0) return out;
    if (m == 0) {
        kernels::fill(out, 0.0);
        return out;
    }
    const std::int64_t rows = out.numel() / n;
    kernels::search_sorted(s.view({s.numel() / m, m}), v.view({rows, n}), out.view({rows, n}), o.right);
    return out;
}

}  // namespace

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, const SearchOptions& options) {
    const char* op = "searchsorted";
    detail::check_defined(sorted_sequence, op);
    detail::check_defined(values, op);
    const std::int64_t nd = sorted_sequence.dim();
    if (nd == 0) detail::fail(op, "boundaries tensor should have positive dimension, but got 0 dimension");
    if (nd > 1 && values.dim() == 0)
        detail::fail(op,
                     "input value can be a scalar only when boundaries tensor dimension is 1, but we got "
                     "boundaries tensor dim(" +
                         std::to_string(nd) + ") and input value's dim(0) numel(1)");
    if (nd > 1) {
        bool match = values.dim() == nd;
        for (std::int64_t d = 0; match && d + 1 < nd; ++d) match = sorted_sequence.size(d) == values.size(d);
        if (!match)
            detail::fail(op,
                         "boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor "
                         "and input value tensor must match, but we got boundaries tensor " +
                             to_string(sorted_sequence.shape()) + " and input value tensor " +
                             to_string(values.shape()));
    }
    return search_sorted(sorted_sequence, values, options, op);
}

Tensor searchsorted(const Tensor& sorted_sequence, double value, const SearchOptions& options) {
    detail::check_defined(sorted_sequence, "searchsorted");
    // A 0-d float64 tensor, as PyTorch's wrapped number: it takes the boundaries' dtype when they are
    // floating-point, the default float32 when they are integers.
    return searchsorted(sorted_sequence,
                        full({}, value, TensorOptions{.dtype = kFloat64, .device = sorted_sequence.device()}), options);
}

Tensor bucketize(const Tensor& input, const Tensor& boundaries, const SearchOptions& options) {
    const char* op = "bucketize";
    detail::check_defined(input, op);
    detail::check_defined(boundaries, op);
    if (boundaries.dim() != 1)
        detail::fail(op, "boundaries tensor must be 1 dimension, but got dim(" + std::to_string(boundaries.dim()) +
                             ") (shape " + to_string(boundaries.shape()) + ")");
    if (options.sorter.defined()) detail::fail(op, "takes no sorter (searchsorted does)");
    return search_sorted(boundaries, input, options, op);
}

}  // namespace xgrad
