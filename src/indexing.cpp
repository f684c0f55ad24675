// Indexing along one dim: gather, scatter, index_select, index_add, x[idx], one_hot and embedding,
// all on the two kernels gather and scatter (kernels/kernels.hpp), with PyTorch's checks and words.
#include <algorithm>
#include <functional>

#include "detail/format.hpp"
#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/nn/functional.hpp"
#include "xgrad/ops.hpp"

namespace xgrad {

using detail::fail;
using detail::NeedsGrad;
using detail::Saved;
using detail::wrap_dim;
using Grads = detail::GradList;

namespace {

/// Size and stride of `t` along `d`; a 0-d tensor counts as one element.
std::int64_t size_at(const Tensor& t, std::int64_t d) {
    return t.dim() == 0 ? 1 : t.size(d);
}
std::int64_t stride_at(const Tensor& t, std::int64_t d) {
    return t.dim() == 0 ? 0 : t.strides()[static_cast<std::size_t>(d)];
}

/// A view of `t` with `shape` (an index's, no larger than t apart from `d`) and t's strides, but
/// stride 0 along `d`: the layout the gather and scatter kernels take.
Tensor along(const Tensor& t, const Shape& shape, std::int64_t d) {
    Strides st = t.strides();
    if (!st.empty()) st[static_cast<std::size_t>(d)] = 0;
    return detail::make_view(t, shape, st, t.storage_offset());
}

/// Throws `op: message(v)` for the first index value v (row-major) outside [lo, hi). The common
/// case costs two reductions; the values are read one by one only on the way to an error.
void check_range(const Tensor& index, std::int64_t lo, std::int64_t hi, const char* op,
                 const std::function<std::string(std::int64_t)>& message) {
    if (index.numel() == 0) return;
    if (index.device().is_cpu()) {
        // One pass, without the two reductions' tensors. v is in [lo, hi) when d = v - lo and
        // (hi - lo - 1) - d, as signed, are both >= 0 (for hi - lo <= 2^63): their sign bits, or'ed over
        // the index, say whether any v is out. Integer adds and ors only, which SSE2 vectorises (a
        // 64-bit comparison it has not: 0.66 ms to 0.48 ms on 1.5M indices here).
        const Tensor c = index.contiguous();
        const auto* p = c.impl()->data<std::int64_t>();
        const auto last = static_cast<std::uint64_t>(hi - lo) - 1;
        std::uint64_t signs = 0;
        for (std::int64_t i = 0, n = c.numel(); i < n; ++i) {
            const std::uint64_t d = static_cast<std::uint64_t>(p[i]) - static_cast<std::uint64_t>(lo);
            signs |= d | (last - d);
        }
        if ((signs >> 63) == 0) return;
    } else {
        NoGradGuard no_grad;
        if (index.min().item<std::int64_t>() >= lo && index.max().item<std::int64_t>() < hi) return;
    }
    for (std::int64_t v : index.to_vector<std::int64_t>())
        if (v < lo || v >= hi) fail(op, message(v));
}

void check_int64(const Tensor& index, const char* op, const std::string& message) {
    detail::check_defined(index, op);
    if (index.dtype() != kInt64) fail(op, message);
}

/// A new tensor: `index.shape()` elements of `self` picked along `d` (checked by the caller).
Tensor gather_raw(const Tensor& self, std::int64_t d, const Tensor& index) {
    Tensor out = detail::make_empty(index.shape(), self.dtype(), self.device(), "gather");
    kernels::gather(along(self, index.shape(), d), index, stride_at(self, d), out);
    return out;
}

/// Writes (or adds, when `accumulate`) the elements of `src` (at least index's size in every dim)
/// into `out` along `d`, at the places `index` names (checked by the caller).
void scatter_raw(const Tensor& out, std::int64_t d, const Tensor& index, const Tensor& src, bool accumulate) {
    const Tensor src_part = detail::make_view(src, index.shape(), src.strides(), src.storage_offset());
    kernels::scatter(along(out, index.shape(), d), index, stride_at(out, d), src_part, accumulate);
}

/// A contiguous copy of `t` (the output of the scatter ops).
Tensor copy_of(const Tensor& t, const char* op) {
    Tensor out = detail::make_empty(t.shape(), t.dtype(), t.device(), op);
    kernels::copy(t, out);
    return out;
}

/// A 1-D index of n elements viewed along `d` of `shape` (stride 0 elsewhere), for index_select
/// and index_add on the gather/scatter kernels.
Tensor spread(const Tensor& index, const Shape& shape, std::int64_t d) {
    Strides st(static_cast<std::size_t>(shape.size()), 0);
    if (!st.empty()) st[static_cast<std::size_t>(d)] = index.dim() == 0 ? 0 : index.strides()[0];
    return detail::make_view(index, shape, st, index.storage_offset());
}

/// The checks gather and the scatters share (PyTorch's scatter_gather_dtype_check and shape checks).
std::int64_t check_gather_scatter(const Tensor& self, std::int64_t dim, const Tensor& index, const Tensor* src,
                                  const char* op, const char* fn) {
    detail::check_defined(self, op);
    check_int64(index, op, std::string(fn) + "(): Expected dtype int64 for index");
    detail::check_same_device(self, index, op);
    const std::int64_t d = wrap_dim(dim, std::max<std::int64_t>(self.dim(), 1), op);
    if (src) {
        detail::check_defined(*src, op);
        detail::check_same_device(self, *src, op);
        if (src->dtype() != self.dtype())
            fail(op, std::string(fn) + "(): Expected self.dtype to be equal to src.dtype");
    }
    const bool is_gather = std::string(fn) == "gather";
    if (std::max<std::int64_t>(index.dim(), 1) != std::max<std::int64_t>(self.dim(), 1))
        fail(op, std::string("Index tensor must have the same number of dimensions as ") +
                     (is_gather ? "input tensor" : "self tensor"));
    bool ok = true;
    for (std::int64_t i = 0; i < index.dim(); ++i) {
        if (i != d && index.size(i) > size_at(self, i)) ok = false;
        if (src && index.size(i) > size_at(*src, i)) ok = false;
        if (!ok && is_gather)
            fail(op, "Size does not match at dimension " + std::to_string(i) + " expected index " +
                         detail::size_list(index.shape()) + " to be smaller than self " +
                         detail::size_list(self.shape()) + " apart from dimension " + std::to_string(d));
    }
    if (!ok)
        fail(op, "Expected index " + detail::size_list(index.shape()) + " to be smaller than self " +
                     detail::size_list(self.shape()) + " apart from dimension " + std::to_string(d) +
                     (src ? " and to be smaller size than src " + detail::size_list(src->shape()) : std::string()));
    const std::int64_t n = size_at(self, d);
    check_range(index, 0, n, op, [&](std::int64_t v) {
        return "index " + std::to_string(v) + " is out of bounds for dimension " + std::to_string(d) + " with size " +
               std::to_string(n);
    });
    return d;
}

/// The checks index_select and index_add share; returns the wrapped dim.
std::int64_t check_index_1d(const Tensor& self, std::int64_t dim, const Tensor& index, const char* op,
                            bool add = false) {
    detail::check_defined(self, op);
    detail::check_defined(index, op);
    if (index.dtype() != kInt64)
        fail(op, add ? "index_add_(): Expected dtype int32/int64 for index but got: " + to_string(index.dtype())
                     : "index_select(): Expected dtype int32 or int64 for index");
    detail::check_same_device(self, index, op);
    if (index.dim() > 1)
        fail(op, add ? "index_add_(): Index is supposed to be a vector, but got dim: " + std::to_string(index.dim()) +
                           " with size: " + detail::size_list(index.shape())
                     : "index_select(): Index is supposed to be a vector");
    if (self.dim() == 0) fail(op, "needs a tensor with at least one dimension");
    const std::int64_t d = wrap_dim(dim, self.dim(), op);
    check_range(index, 0, self.size(d), op, [](std::int64_t) { return "index out of range in self"; });
    return d;
}

/// index_select on checked arguments, recorded or not by the caller.
Tensor index_select_raw(const Tensor& self, std::int64_t d, const Tensor& index) {
    Shape shape = self.shape();
    shape[d] = index.numel();
    return gather_raw(self, d, spread(index, shape, d));
}

/// `self` with `source` added at `index` along `d` (checked arguments), unrecorded.
Tensor index_add_raw(const Tensor& self, std::int64_t d, const Tensor& index, const Tensor& source) {
    Tensor out = copy_of(self, "index_add");
    scatter_raw(out, d, spread(index, source.shape(), d), source, true);
    return out;
}

Tensor zeros_of(const Shape& shape, const Tensor& like) {
    return zeros(shape, FactoryOptions(like.dtype()).device(like.device()));
}

/// `g.scatter(d, index, 0)`: the gradient of the elements a scatter overwrote is 0.
Tensor scatter_zeros(const Tensor& g, std::int64_t d, const Tensor& index) {
    Tensor r = copy_of(g, "scatter");
    scatter_raw(r, d, index, zeros({}, FactoryOptions(g.dtype()).device(g.device())).expand(index.shape()), false);
    return r;
}

/// `g.gather(d, index)` placed in the corner of zeros of `shape` (src may be larger than the index).
Tensor gather_into(const Tensor& g, std::int64_t d, const Tensor& index, const Shape& shape) {
    const Tensor picked = gather_raw(g, d, index);
    if (picked.shape() == shape) return picked;
    Tensor r = zeros_of(shape, g);
    kernels::copy(picked, detail::make_view(r, index.shape(), r.strides(), 0));
    return r;
}

}  // namespace

Tensor Tensor::gather(std::int64_t dim, const Tensor& index) const {
    const std::int64_t d = check_gather_scatter(*this, dim, index, nullptr, "gather", "gather");
    Tensor out = gather_raw(*this, d, index);
    if (detail::needs_grad({this}))
        detail::record(out, "GatherBackward0", {this},
                       [s = shape(), d, idx = Saved(index)](const Tensor& g, const NeedsGrad&) {
                           Tensor r = zeros_of(s, g);  // scatter_add, without checking the index again
                           scatter_raw(r, d, idx, g, true);
                           return Grads{r};
                       });
    return out;
}

Tensor Tensor::scatter(std::int64_t dim, const Tensor& index, const Tensor& src) const {
    const std::int64_t d = check_gather_scatter(*this, dim, index, &src, "scatter", "scatter");
    Tensor out = copy_of(*this, "scatter");
    scatter_raw(out, d, index, src, false);
    if (detail::needs_grad({this, &src}))
        detail::record(out, "ScatterBackward0", {this, &src},
                       [d, idx = Saved(index), ss = src.shape()](const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) r[0] = scatter_zeros(g, d, idx);
                           if (n[1]) r[1] = gather_into(g, d, idx, ss);
                           return r;
                       });
    return out;
}

Tensor Tensor::scatter(std::int64_t dim, const Tensor& index, double value) const {
    detail::check_defined(*this, "scatter");
    const Tensor src = full({}, value, FactoryOptions(dtype()).device(device()));
    const std::int64_t d = check_gather_scatter(*this, dim, index, nullptr, "scatter", "scatter");
    Tensor out = copy_of(*this, "scatter");
    scatter_raw(out, d, index, src.expand(index.shape()), false);
    if (detail::needs_grad({this}))
        detail::record(out, "ScatterBackward1", {this}, [d, idx = Saved(index)](const Tensor& g, const NeedsGrad&) {
            return Grads{scatter_zeros(g, d, idx)};
        });
    return out;
}

Tensor Tensor::scatter_add(std::int64_t dim, const Tensor& index, const Tensor& src) const {
    const std::int64_t d = check_gather_scatter(*this, dim, index, &src, "scatter_add", "scatter");
    Tensor out = copy_of(*this, "scatter_add");
    scatter_raw(out, d, index, src, true);
    if (detail::needs_grad({this, &src}))
        detail::record(out, "ScatterAddBackward0", {this, &src},
                       [d, idx = Saved(index), ss = src.shape()](const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) r[0] = g;
                           if (n[1]) r[1] = gather_into(g, d, idx, ss);
                           return r;
                       });
    return out;
}

Tensor Tensor::index_select(std::int64_t dim, const Tensor& index) const {
    const std::int64_t d = check_index_1d(*this, dim, index, "index_select");
    Tensor out = index_select_raw(*this, d, index);
    if (detail::needs_grad({this}))
        detail::record(out, "IndexSelectBackward0", {this},
                       [s = shape(), d, idx = Saved(index)](const Tensor& g, const NeedsGrad&) {
                           return Grads{index_add_raw(zeros_of(s, g), d, idx, g)};
                       });
    return out;
}

Tensor Tensor::index_add(std::int64_t dim, const Tensor& index, const Tensor& source, double alpha) const {
    const std::int64_t d = check_index_1d(*this, dim, index, "index_add", true);
    detail::check_defined(source, "index_add");
    detail::check_same_device(*this, source, "index_add");
    if (source.dtype() != dtype())
        fail("index_add", "index_add_(): self (" + to_string(dtype()) + ") and source (" + to_string(source.dtype()) +
                              ") must have the same scalar type");
    const std::int64_t src_n = source.dim() == 0 ? 1 : source.size(d < source.dim() ? d : 0);
    if (index.numel() != src_n)
        fail("index_add", "index_add_(): Number of indices (" + std::to_string(index.numel()) +
                              ") should be equal to source.size(dim): (" + std::to_string(src_n) +
                              "), for dim: " + std::to_string(d));
    bool same = source.dim() == this->dim();
    for (std::int64_t i = 0; same && i < this->dim(); ++i) same = i == d || source.size(i) == size(i);
    if (!same)
        fail("index_add", "source of shape " + to_string(source.shape()) + " does not match self of shape " +
                              to_string(shape()) + " apart from dimension " + std::to_string(d));
    Tensor out;
    if (alpha == 1.0) {
        out = index_add_raw(*this, d, index, source);
    } else if (this->dim() > 1) {
        // PyTorch 1.13 adds each slice with its add kernel, self + alpha·source, one rounding where the
        // CPU has FMA (add_'s), one index after another.
        NoGradGuard no_grad;
        out = copy_of(*this, "index_add");
        const Tensor at = index.to(kCPU).to(kInt64).contiguous();
        const std::int64_t* ix = at.impl()->data<std::int64_t>();
        for (std::int64_t i = 0; i < at.numel(); ++i) out.select(d, ix[i]).add_(source.select(d, i), alpha);
    } else {
        // A 1-D self: PyTorch's scalar loop, self += source·alpha, the product rounded first.
        NoGradGuard no_grad;
        out = index_add_raw(*this, d, index, source.mul(alpha));
    }
    if (detail::needs_grad({this, &source}))
        detail::record(out, "IndexAddBackward0", {this, &source},
                       [d, idx = Saved(index), alpha](const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) r[0] = g;
                           if (n[1])
                               r[1] =
                                   alpha == 1.0 ? index_select_raw(g, d, idx) : index_select_raw(g, d, idx).mul(alpha);
                           return r;
                       });
    return out;
}

namespace detail {
Tensor index_by_mask(const Tensor& self, const Tensor& mask);  // masking.cpp: x[mask]

Tensor merged_index(const Tensor& self, const std::vector<Tensor>& indices, const char* op) {
    const auto k = static_cast<std::int64_t>(indices.size());
    if (k > self.dim())
        fail(op, "too many indices for tensor of dimension " + std::to_string(self.dim()) + " (got " +
                     std::to_string(k) + ")");
    std::vector<std::int64_t> b;  // the index tensors' broadcast shape
    std::string shapes;
    for (const Tensor& i : indices) {
        check_defined(i, op);
        if (i.dtype() == kBool || i.dtype() == kUInt8)
            fail(op, "takes a bool mask alone; with other index tensors, index with its nonzero() columns");
        check_int64(i, op,
                    "tensors used as indices must be long, byte or bool tensors (xgrad takes int64 index tensors)");
        check_same_device(self, i, op);
        shapes += (shapes.empty() ? "" : ", ") + size_list(i.shape());
        const auto& s = i.shape();
        if (s.size() > static_cast<std::int64_t>(b.size()))
            b.insert(b.begin(), static_cast<std::size_t>(s.size()) - b.size(), 1);
    }
    for (const Tensor& i : indices)
        for (std::int64_t d = 1; d <= i.dim(); ++d) {
            auto& out = b[b.size() - static_cast<std::size_t>(d)];
            const std::int64_t n = i.size(-d);
            if (n != 1 && out != 1 && n != out)
                fail(op, "shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes);
            if (n != 1) out = n;
        }
    const Shape shape(b);
    std::vector<std::int64_t> linear(static_cast<std::size_t>(shape.numel()), 0);
    NoGradGuard no_grad;
    for (std::int64_t d = 0; d < k; ++d) {  // row-major over the first k dims, found on the host
        const std::int64_t n = self.size(d);
        const auto v =
            indices[static_cast<std::size_t>(d)].to(kCPU).expand(shape).contiguous().to_vector<std::int64_t>();
        for (std::size_t e = 0; e < v.size(); ++e) {
            if (v[e] < -n || v[e] >= n)
                fail(op, "index " + std::to_string(v[e]) + " is out of bounds for dimension " + std::to_string(d) +
                             " with size " + std::to_string(n));
            linear[e] = linear[e] * n + (v[e] < 0 ? v[e] + n : v[e]);
        }
    }
    return from_vector(linear, shape, FactoryOptions(kInt64).device(self.device()));
}

Shape merged_rows(const Tensor& self, std::int64_t k) {
    std::vector<std::int64_t> rows{1};
    for (std::int64_t d = 0; d < self.dim(); ++d) {
        if (d < k)
            rows[0] *= self.size(d);
        else
            rows.push_back(self.size(d));
    }
    return Shape(rows);
}
}  // namespace detail

Tensor Tensor::index(const std::vector<Tensor>& indices) const {
    detail::check_defined(*this, "index");
    if (indices.empty()) fail("index", "takes at least one index tensor");
    if (indices.size() > 1) {  // x[i, j, ...]: one index into the leading dims merged
        const Tensor merged = detail::merged_index(*this, indices, "index");
        return reshape(detail::merged_rows(*this, static_cast<std::int64_t>(indices.size()))).index({merged});
    }
    const Tensor& idx = indices.front();
    detail::check_defined(idx, "index");
    if (idx.dtype() == kBool || idx.dtype() == kUInt8) return detail::index_by_mask(*this, idx);
    check_int64(idx, "index",
                "tensors used as indices must be long, byte or bool tensors (xgrad takes int64 index tensors)");
    detail::check_same_device(*this, idx, "index");
    if (dim() == 0) fail("index", "cannot index a 0-d tensor with a tensor");
    const std::int64_t n = size(0);
    check_range(idx, -n, n, "index", [n](std::int64_t v) {
        return "index " + std::to_string(v) + " is out of bounds for dimension 0 with size " + std::to_string(n);
    });
    Tensor flat = idx.reshape({idx.numel()});
    if (flat.numel() > 0) {
        NoGradGuard no_grad;
        if (flat.min().item<std::int64_t>() < 0) {  // negative indices count from the end, as in Python
            std::vector<std::int64_t> v = flat.to_vector<std::int64_t>();
            for (auto& i : v) i = i < 0 ? i + n : i;
            flat = from_vector(v, Shape{flat.numel()}, FactoryOptions(kInt64).device(device()));
        }
    }
    std::vector<std::int64_t> sizes = idx.shape().vec();
    for (std::int64_t i = 1; i < dim(); ++i) sizes.push_back(size(i));
    Tensor out = index_select_raw(*this, 0, flat).view(Shape(sizes));
    if (detail::needs_grad({this}))
        detail::record(out, "IndexBackward0", {this},
                       [s = shape(), flat = Saved(flat)](const Tensor& g, const NeedsGrad&) {
                           std::vector<std::int64_t> rows = s.vec();
                           rows[0] = flat->numel();
                           return Grads{index_add_raw(zeros_of(s, g), 0, flat, g.reshape(Shape(rows)))};
                       });
    return out;
}

Tensor index_select(const Tensor& input, std::int64_t dim, const Tensor& index) {
    return input.index_select(dim, index);
}
Tensor gather(const Tensor& input, std::int64_t dim, const Tensor& index) {
    return input.gather(dim, index);
}
Tensor scatter(const Tensor& input, std::int64_t dim, const Tensor& index, const Tensor& src) {
    return input.scatter(dim, index, src);
}
Tensor scatter(const Tensor& input, std::int64_t dim, const Tensor& index, double value) {
    return input.scatter(dim, index, value);
}
Tensor scatter_add(const Tensor& input, std::int64_t dim, const Tensor& index, const Tensor& src) {
    return input.scatter_add(dim, index, src);
}
Tensor index_add(const Tensor& input, std::int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
    return input.index_add(dim, index, source, alpha);
}

namespace nn::functional {

Tensor one_hot(const Tensor& input, std::int64_t num_classes) {
    check_int64(input, "one_hot", "one_hot is only applicable to index tensor.");
    if (input.numel() == 0 && num_classes == -1)
        fail("one_hot", "Can not infer total number of classes from empty tensor.");
    if (num_classes < -1) fail("one_hot", "num_classes should be -1 or positive, got " + std::to_string(num_classes));
    std::int64_t classes = num_classes;
    if (input.numel() > 0) {
        NoGradGuard no_grad;
        if (input.min().item<std::int64_t>() < 0) fail("one_hot", "Class values must be non-negative.");
        const std::int64_t top = input.max().item<std::int64_t>();
        if (num_classes == -1)
            classes = top + 1;
        else if (top >= num_classes)
            fail("one_hot", "Class values must be smaller than num_classes.");
    }
    std::vector<std::int64_t> sizes = input.shape().vec();
    sizes.push_back(classes);
    Tensor out = zeros(Shape(sizes), FactoryOptions(kInt64).device(input.device()));
    std::vector<std::int64_t> idx_sizes = input.shape().vec();
    idx_sizes.push_back(1);
    const Tensor index = input.reshape(Shape(idx_sizes));
    scatter_raw(out, out.dim() - 1, index,
                ones({}, FactoryOptions(kInt64).device(input.device())).expand(index.shape()), false);
    return out;
}

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<std::int64_t> padding_idx) {
    detail::check_defined(input, "embedding");
    detail::check_defined(weight, "embedding");
    if (input.dtype() != kInt64)
        fail("embedding",
             "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
             "got " +
                 to_string(input.dtype()) + " instead (while checking arguments for embedding)");
    if (weight.dim() != 2) fail("embedding", "'weight' must be 2-D, got shape " + to_string(weight.shape()));
    detail::check_same_device(weight, input, "embedding");
    const std::int64_t rows = weight.size(0);
    std::optional<std::int64_t> pad = padding_idx;
    if (pad) {
        if (*pad < -rows || *pad >= rows) fail("embedding", "Padding_idx must be within num_embeddings");
        if (*pad < 0) *pad += rows;
    }
    check_range(input, 0, rows, "embedding", [](std::int64_t) { return "index out of range in self"; });
    const Tensor flat = input.reshape({input.numel()});
    std::vector<std::int64_t> sizes = input.shape().vec();
    sizes.push_back(weight.size(1));
    Tensor out = index_select_raw(weight, 0, flat).view(Shape(sizes));
    if (detail::needs_grad({&weight}))
        detail::record(out, "EmbeddingBackward0", {&weight},
                       [ws = weight.shape(), flat = Saved(flat), pad](const Tensor& g, const NeedsGrad&) {
                           // Rows summed in the order of the indices (PyTorch's CPU order); the
                           // padding row gets no gradient at all.
                           Tensor gw = zeros_of(ws, g);
                           NoGradGuard no_grad;
                           const Tensor g2 = g.reshape({flat->numel(), ws[1]});
                           scatter_raw(gw, 0, spread(flat, g2.shape(), 0), g2, true);
                           if (pad) gw.select(0, *pad).zero_();
                           return Grads{gw};
                       });
    return out;
}

}  // namespace nn::functional

}  // namespace xgrad
