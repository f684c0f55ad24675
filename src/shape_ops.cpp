// Views and layout: transpose, permute, reshape/view, (un)squeeze, expand, slicing, cat and stack.
#include <algorithm>
#include <numeric>

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::fail;
using detail::NeedsGrad;
using detail::wrap_dim;
using Grads = std::vector<Tensor>;

namespace {

/// Strides that let a tensor of `old_shape`/`old_strides` be viewed as `new_shape` without a copy,
/// or nothing when the memory layout does not allow it (PyTorch's computeStride).
std::optional<std::vector<std::int64_t>> view_strides(const Shape& old_shape,
                                                      const std::vector<std::int64_t>& old_strides,
                                                      const Shape& new_shape) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(new_shape.size()));
    if (old_shape.numel() == 0 || old_shape.size() == 0) return detail::contiguous_strides(new_shape);
    std::int64_t view_d = new_shape.size() - 1;
    std::int64_t chunk_base_stride = old_strides.back();
    std::int64_t tensor_numel = 1, view_numel = 1;
    for (std::int64_t d = old_shape.size() - 1; d >= 0; --d) {
        tensor_numel *= old_shape[d];
        if (d == 0 || (old_shape[d - 1] != 1 &&
                       old_strides[static_cast<std::size_t>(d - 1)] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
                out[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
                view_numel *= new_shape[view_d];
                --view_d;
            }
            if (view_numel != tensor_numel) return std::nullopt;
            if (d > 0) {
                chunk_base_stride = old_strides[static_cast<std::size_t>(d - 1)];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if (view_d != -1) return std::nullopt;
    return out;
}

/// Resolves a single -1 in `shape` against `numel`; throws naming `op` when the sizes don't match.
Shape infer_shape(const Shape& shape, std::int64_t numel, const Shape& from, const char* op) {
    Shape out = shape;
    std::int64_t known = 1, infer = -1;
    bool overflow = false, has_zero = false;
    for (std::int64_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (infer >= 0) fail(op, "only one dimension can be inferred (-1) in shape " + to_string(shape));
            infer = i;
        } else if (shape[i] < 0) {
            fail(op, "invalid size " + std::to_string(shape[i]) + " in shape " + to_string(shape));
        } else {
            has_zero = has_zero || shape[i] == 0;
            overflow = __builtin_mul_overflow(known, shape[i], &known) || overflow;
        }
    }
    if (has_zero) known = 0;
    const auto invalid = [&] {
        fail(op, "shape " + to_string(shape) + " is invalid for input of shape " + to_string(from) + " (" +
                     std::to_string(numel) + " elements)" +
                     (overflow && !has_zero ? ": its size overflows int64" : ""));
    };
    if (overflow && !has_zero) invalid();
    if (infer >= 0) {
        if (known == 0 || numel % known != 0) invalid();
        out[infer] = numel / known;
    } else if (known != numel) {
        invalid();
    }
    return out;
}

/// A view of `self` with the given geometry whose gradient is `backward(g)`.
Tensor view_op(const Tensor& self, Shape shape, std::vector<std::int64_t> strides, std::int64_t offset,
               const char* name, std::function<Tensor(const Tensor&)> backward) {
    Tensor out = detail::make_view(self, std::move(shape), std::move(strides), offset);
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self},
                       [bw = std::move(backward)](const Tensor& g, const NeedsGrad&) { return Grads{bw(g)}; });
    return out;
}

/// Gradient of a view that picks part of `shape`: zeros, with `g` written into the picked part.
Tensor scatter_into(const Tensor& g, const Shape& shape, const std::function<Tensor(const Tensor&)>& pick) {
    Tensor full = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
    Tensor part = pick(full);
    part.copy_(g);
    return full;
}

}  // namespace

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
    detail::check_defined(*this, "transpose");
    auto a = static_cast<std::size_t>(wrap_dim(dim0, dim(), "transpose"));
    auto b = static_cast<std::size_t>(wrap_dim(dim1, dim(), "transpose"));
    if (dim() == 0)
        return view_op(*this, shape(), strides(), storage_offset(), "TransposeBackward0",
                       [](const Tensor& g) { return g; });
    std::vector<std::int64_t> sizes = shape().vec(), st = strides();
    std::swap(sizes[a], sizes[b]);
    std::swap(st[a], st[b]);
    return view_op(*this, Shape(sizes), st, storage_offset(), "TransposeBackward0",
                   [dim0, dim1](const Tensor& g) { return g.transpose(dim0, dim1); });
}

Tensor Tensor::t() const {
    detail::check_defined(*this, "t");
    if (dim() > 2) fail("t", "expects a tensor with <= 2 dimensions, but got shape " + to_string(shape()));
    if (dim() < 2)
        return view_op(*this, shape(), strides(), storage_offset(), "TBackward0", [](const Tensor& g) { return g; });
    Tensor out = transpose(0, 1);
    if (out.requires_grad()) out.impl()->grad_fn->name = "TBackward0";
    return out;
}

Tensor Tensor::permute(const Dims& order) const {
    detail::check_defined(*this, "permute");
    const auto& o = order.vec();
    if (static_cast<std::int64_t>(o.size()) != dim())
        fail("permute", "the number of dims " + std::to_string(o.size()) + " does not match the tensor of shape " +
                            to_string(shape()));
    std::vector<std::int64_t> sizes, st, inverse(o.size());
    std::vector<bool> used(o.size(), false);
    for (std::size_t i = 0; i < o.size(); ++i) {
        auto d = static_cast<std::size_t>(wrap_dim(o[i], dim(), "permute"));
        if (used[d]) fail("permute", "dimension " + std::to_string(o[i]) + " is repeated");
        used[d] = true;
        sizes.push_back(shape()[static_cast<std::int64_t>(d)]);
        st.push_back(strides()[d]);
        inverse[d] = static_cast<std::int64_t>(i);
    }
    return view_op(*this, Shape(sizes), st, storage_offset(), "PermuteBackward0",
                   [inverse](const Tensor& g) { return g.permute(Dims(inverse)); });
}

Tensor Tensor::view(const Shape& shape_) const {
    detail::check_defined(*this, "view");
    Shape target = infer_shape(shape_, numel(), shape(), "view");
    auto st = view_strides(shape(), strides(), target);
    if (!st)
        fail("view", "size is not compatible with the input's strides (shape " + to_string(shape()) + " to " +
                         to_string(target) + "); use reshape() instead");
    return view_op(*this, target, *st, storage_offset(), "ViewBackward0",
                   [s = shape()](const Tensor& g) { return g.reshape(s); });
}

Tensor Tensor::reshape(const Shape& shape_) const {
    detail::check_defined(*this, "reshape");
    Shape target = infer_shape(shape_, numel(), shape(), "reshape");
    if (view_strides(shape(), strides(), target)) return view(target);
    return clone().view(target);
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
    detail::check_defined(*this, "unsqueeze");
    auto w = static_cast<std::size_t>(wrap_dim(d, dim() + 1, "unsqueeze"));
    std::vector<std::int64_t> sizes = shape().vec(), st = strides();
    std::int64_t s = w < sizes.size() ? sizes[w] * st[w] : 1;
    sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(w), 1);
    st.insert(st.begin() + static_cast<std::ptrdiff_t>(w), s);
    return view_op(*this, Shape(sizes), st, storage_offset(), "UnsqueezeBackward0",
                   [w](const Tensor& g) { return g.squeeze(static_cast<std::int64_t>(w)); });
}

Tensor Tensor::squeeze() const {
    detail::check_defined(*this, "squeeze");
    std::vector<std::int64_t> sizes, st;
    for (std::int64_t i = 0; i < dim(); ++i)
        if (shape()[i] != 1) {
            sizes.push_back(shape()[i]);
            st.push_back(strides()[static_cast<std::size_t>(i)]);
        }
    return view_op(*this, Shape(sizes), st, storage_offset(), "SqueezeBackward0",
                   [s = shape()](const Tensor& g) { return g.reshape(s); });
}

Tensor Tensor::squeeze(std::int64_t d) const {
    detail::check_defined(*this, "squeeze");
    std::int64_t w = wrap_dim(d, dim(), "squeeze");
    if (dim() == 0 || shape()[w] != 1)
        return view_op(*this, shape(), strides(), storage_offset(), "SqueezeBackward1",
                       [](const Tensor& g) { return g; });
    std::vector<std::int64_t> sizes = shape().vec(), st = strides();
    sizes.erase(sizes.begin() + w);
    st.erase(st.begin() + w);
    return view_op(*this, Shape(sizes), st, storage_offset(), "SqueezeBackward1",
                   [w](const Tensor& g) { return g.unsqueeze(w); });
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
    detail::check_defined(*this, "flatten");
    if (dim() == 0) return reshape(Shape{1});
    std::int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
    if (s > e)
        fail("flatten", "start_dim " + std::to_string(start_dim) + " comes after end_dim " + std::to_string(end_dim));
    if (s == e) return *this;  // nothing to merge: PyTorch returns the tensor itself
    std::vector<std::int64_t> sizes;
    std::int64_t merged = 1;
    for (std::int64_t i = 0; i < dim(); ++i) {
        if (i < s || i > e)
            sizes.push_back(shape()[i]);
        else {
            merged *= shape()[i];
            if (i == e) sizes.push_back(merged);
        }
    }
    return reshape(Shape(sizes));
}

Tensor Tensor::expand(const Shape& target) const {
    detail::check_defined(*this, "expand");
    if (target.size() < dim())
        fail("expand",
             "the shape " + to_string(target) + " has fewer dimensions than the tensor of shape " + to_string(shape()));
    const std::int64_t lead = target.size() - dim();
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(target.size())), st(sizes.size());
    for (std::int64_t i = 0; i < target.size(); ++i) {
        auto iu = static_cast<std::size_t>(i);
        if (i < lead) {
            if (target[i] < 0) fail("expand", "-1 is not allowed for a new leading dimension in " + to_string(target));
            sizes[iu] = target[i];
            st[iu] = 0;
            continue;
        }
        std::int64_t have = shape()[i - lead], want = target[i] == -1 ? have : target[i];
        if (have != want && have != 1)
            fail("expand", "the tensor of shape " + to_string(shape()) + " cannot be expanded to " + to_string(target) +
                               " (" + std::to_string(have) + " != " + std::to_string(want) + " at dimension " +
                               std::to_string(i) + ")");
        if (want < 0) fail("expand", "invalid size " + std::to_string(want) + " in " + to_string(target));
        sizes[iu] = want;
        st[iu] = have == want ? strides()[static_cast<std::size_t>(i - lead)] : 0;
    }
    detail::checked_numel(Shape(sizes), "expand");
    // Even to the same shape this is a new recorded view, as in PyTorch (callers skip the call instead).
    return view_op(*this, Shape(sizes), st, storage_offset(), "ExpandBackward0",
                   [s = shape()](const Tensor& g) { return detail::sum_to(g, s); });
}

Tensor Tensor::expand_as(const Tensor& other) const {
    return expand(other.shape());
}

Tensor Tensor::slice(std::int64_t d, std::optional<std::int64_t> start, std::optional<std::int64_t> end,
                     std::int64_t step) const {
    detail::check_defined(*this, "slice");
    if (dim() == 0) fail("slice", "cannot slice a 0-d tensor");
    if (step <= 0) fail("slice", "step must be positive, got " + std::to_string(step));
    std::int64_t w = wrap_dim(d, dim(), "slice"), n = shape()[w];
    auto clampi = [n](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + n : i, 0, n); };
    std::int64_t s = start ? clampi(*start) : 0, e = end ? clampi(*end) : n;
    std::int64_t len = e > s ? (e - s + step - 1) / step : 0;
    std::vector<std::int64_t> sizes = shape().vec(), st = strides();
    auto wu = static_cast<std::size_t>(w);
    std::int64_t offset = storage_offset() + s * st[wu];
    sizes[wu] = len;
    st[wu] *= step;
    return view_op(*this, Shape(sizes), st, offset, "SliceBackward0", [s_ = shape(), w, s, e, step](const Tensor& g) {
        return scatter_into(g, s_, [&](const Tensor& full) { return full.slice(w, s, e, step); });
    });
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
    detail::check_defined(*this, "narrow");
    std::int64_t w = wrap_dim(d, dim(), "narrow"), n = shape()[w];
    if (start < 0) start += n;
    if (start < 0 || length < 0 || start + length > n)
        fail("narrow", "start " + std::to_string(start) + " + length " + std::to_string(length) +
                           " exceeds dimension " + std::to_string(d) + " of size " + std::to_string(n));
    return slice(w, start, start + length);
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
    detail::check_defined(*this, "select");
    if (dim() == 0) fail("select", "cannot select from a 0-d tensor");
    std::int64_t w = wrap_dim(d, dim(), "select"), n = shape()[w];
    if (index < -n || index >= n)
        fail("select", "index " + std::to_string(index) + " is out of range for dimension " + std::to_string(d) +
                           " of size " + std::to_string(n) + " (shape " + to_string(shape()) + ")");
    if (index < 0) index += n;
    std::vector<std::int64_t> sizes = shape().vec(), st = strides();
    auto wu = static_cast<std::size_t>(w);
    std::int64_t offset = storage_offset() + index * st[wu];
    sizes.erase(sizes.begin() + w);
    st.erase(st.begin() + w);
    return view_op(*this, Shape(sizes), st, offset, "SelectBackward0", [s_ = shape(), w, index](const Tensor& g) {
        return scatter_into(g, s_, [&](const Tensor& full) { return full.select(w, index); });
    });
}

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
    if (tensors.empty()) fail("cat", "expects a non-empty list of tensors");
    for (const auto& t : tensors) detail::check_defined(t, "cat");
    const Tensor& first = tensors.front();
    if (first.dim() == 0) fail("cat", "zero-dimensional tensors cannot be concatenated");
    std::int64_t d = wrap_dim(dim, first.dim(), "cat");
    DType dtype = first.dtype();
    std::int64_t total = 0;
    for (const auto& t : tensors) {
        detail::check_same_device(first, t, "cat");
        dtype = detail::promote(dtype, t.dtype());
        bool ok = t.dim() == first.dim();
        for (std::int64_t i = 0; ok && i < t.dim(); ++i) ok = i == d || t.size(i) == first.size(i);
        if (!ok)
            fail("cat", "shapes " + to_string(first.shape()) + " and " + to_string(t.shape()) +
                            " differ outside dimension " + std::to_string(dim));
        if (__builtin_add_overflow(total, t.size(d), &total))
            fail("cat", "the concatenated size along dimension " + std::to_string(dim) + " overflows int64");
    }
    Shape shape = first.shape();
    shape[d] = total;
    Tensor out = detail::make_empty(shape, dtype, first.device(), "cat");
    std::vector<std::int64_t> sizes;
    {
        NoGradGuard no_grad;
        std::int64_t at = 0;
        for (const auto& t : tensors) {
            out.narrow(d, at, t.size(d)).copy_(t);
            sizes.push_back(t.size(d));
            at += t.size(d);
        }
    }
    bool any = false;
    for (const auto& t : tensors) any = any || t.requires_grad();
    if (any && is_grad_enabled())
        detail::record(out, "CatBackward0", tensors, [sizes, d](const Tensor& g, const NeedsGrad& n) {
            Grads r(sizes.size());
            std::int64_t at = 0;
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                if (n[i]) r[i] = g.narrow(d, at, sizes[i]);
                at += sizes[i];
            }
            return r;
        });
    return out;
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
    if (tensors.empty()) fail("stack", "expects a non-empty list of tensors");
    for (const auto& t : tensors) {
        detail::check_defined(t, "stack");
        if (t.shape() != tensors.front().shape())
            fail("stack", "expects each tensor to be equal size, but got " + to_string(tensors.front().shape()) +
                              " and " + to_string(t.shape()));
    }
    std::int64_t d = wrap_dim(dim, tensors.front().dim() + 1, "stack");
    std::vector<Tensor> parts;
    for (const auto& t : tensors) parts.push_back(t.unsqueeze(d));
    Tensor out = cat(parts, d);
    if (out.requires_grad()) out.impl()->grad_fn->name = "StackBackward0";
    return out;
}

}  // namespace xgrad
