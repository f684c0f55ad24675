// Views and layout: transpose, permute, reshape/view, (un)squeeze, expand, slicing, cat and stack;
// then the shape ops built on views and copies: split ... diag, pad, eye and linspace.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "detail/convert.hpp"
#include "detail/dispatch.hpp"
#include "detail/format.hpp"
#include "kernels/kernels.hpp"
#include "xgrad/nn/functional.hpp"

#include "detail/kernels.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad {

using detail::fail;
using detail::NeedsGrad;
using detail::wrap_dim;
using Grads = detail::GradList;

namespace {

/// Strides that let a tensor of `old_shape`/`old_strides` be viewed as `new_shape` without a copy,
/// or nothing when the memory layout does not allow it (PyTorch's computeStride).
std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape) {
    Strides out(static_cast<std::size_t>(new_shape.size()), 0);
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

/// A view of `self` with the given geometry whose gradient is `backward(g)`. `backward` is any
/// closure, kept as it is inside the node (no std::function: recording a view allocates nothing).
template <typename F>
Tensor view_op(const Tensor& self, const Shape& shape, const Strides& strides, std::int64_t offset, const char* name,
               F backward) {
    Tensor out = detail::make_view(self, shape, strides, offset);
    if (detail::needs_grad({&self}))
        detail::record(out, name, {&self},
                       [bw = std::move(backward)](const Tensor& g, const NeedsGrad&) { return Grads{bw(g)}; });
    return out;
}

/// Gradient of a view that picks part of `shape`: zeros, with `g` written into the picked part.
Tensor scatter_into(const Tensor& g, const Shape& shape, const std::function<Tensor(const Tensor&)>& pick) {
    Tensor full = zeros(shape, FactoryOptions(g.dtype()).device(g.device()));
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
    // The view takes this tensor's geometry, then swaps two dims in place (no copies of it in between).
    Tensor out = detail::make_view(*this, shape(), strides(), storage_offset());
    detail::swap_dims(*out.impl(), a, b);
    if (detail::needs_grad({this}))
        detail::record(out, "TransposeBackward0", {this}, [a, b](Tensor& g, const NeedsGrad&) {
            // The gradient is transposed back. Where the engine's handle is its only one (a product's
            // fresh gradient, typically) and it is not part of a graph, its dims are swapped in place:
            // no view, whose handle and counts cost a small model's step a few percent.
            if (g.impl().use_count() == 1 && !g.requires_grad()) {
                detail::swap_dims(*g.impl(), a, b);
                return Grads{std::move(g)};
            }
            return Grads{g.transpose(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b))};
        });
    return out;
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
    return view_op(*this, target, std::move(*st), storage_offset(), "ViewBackward0",
                   [s = shape()](const Tensor& g) { return g.reshape(s); });
}

Tensor Tensor::reshape(const Shape& shape_) const {
    detail::check_defined(*this, "reshape");
    Shape target = infer_shape(shape_, numel(), shape(), "reshape");
    if (auto st = view_strides(shape(), strides(), target))  // a view, as view() would make it
        return view_op(*this, target, *st, storage_offset(), "ViewBackward0",
                       [s = shape()](const Tensor& g) { return g.reshape(s); });
    return detail::contiguous_clone(*this).view(target);  // PyTorch: clone(contiguous_format), then a view
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
    Shape sizes = target;
    Strides st(static_cast<std::size_t>(target.size()), 0);
    for (std::int64_t i = 0; i < target.size(); ++i) {
        auto iu = static_cast<std::size_t>(i);
        if (i < lead) {
            if (target[i] < 0) fail("expand", "-1 is not allowed for a new leading dimension in " + to_string(target));
            continue;
        }
        std::int64_t have = shape()[i - lead], want = target[i] == -1 ? have : target[i];
        if (have != want && have != 1)
            fail("expand", "the tensor of shape " + to_string(shape()) + " cannot be expanded to " + to_string(target) +
                               " (" + std::to_string(have) + " != " + std::to_string(want) + " at dimension " +
                               std::to_string(i) + ")");
        if (want < 0) fail("expand", "invalid size " + std::to_string(want) + " in " + to_string(target));
        sizes[i] = want;
        st[iu] = have == want ? strides()[static_cast<std::size_t>(i - lead)] : 0;
    }
    detail::checked_numel(sizes, "expand");
    // Even to the same shape this is a new recorded view, as in PyTorch (callers skip the call instead).
    return view_op(*this, sizes, st, storage_offset(), "ExpandBackward0",
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

// ---- more shape ops: views, strided copies and index_select, no kernels of their own -------------------

namespace {

/// `t` as a recorded op named `name` whose output is `out` (computed without recording) and whose
/// gradient is `backward(g)`.
Tensor record_unary(const Tensor& t, Tensor out, const char* name, std::function<Tensor(const Tensor&)> backward) {
    if (detail::needs_grad({&t}))
        detail::record(out, name, {&t},
                       [bw = std::move(backward)](const Tensor& g, const NeedsGrad&) { return Grads{bw(g)}; });
    return out;
}

/// A contiguous copy of a (possibly negatively strided) view, unrecorded.
Tensor dense_copy(const Tensor& view, const char* op) {
    Tensor out = detail::make_empty(view.shape(), view.dtype(), view.device(), op);
    kernels::copy(view, out);
    return out;
}

Tensor zeros_like_shape(const Shape& shape, const Tensor& like) {
    return zeros(shape, FactoryOptions(like.dtype()).device(like.device()));
}

}  // namespace

std::vector<Tensor> Tensor::split(std::int64_t split_size, std::int64_t dim_) const {
    detail::check_defined(*this, "split");
    if (dim() == 0) fail("split", "cannot split a 0-d tensor");
    const std::int64_t d = wrap_dim(dim_, dim(), "split"), n = size(d);
    if (split_size < 0)
        fail("split", "split expects split_size be non-negative, but got split_size=" + std::to_string(split_size));
    if (split_size == 0 && n != 0)
        fail("split",
             "split_size can only be 0 if dimension size is 0, but got dimension size of " + std::to_string(n));
    std::vector<std::int64_t> sizes;
    const std::int64_t pieces = split_size == 0 ? 1 : std::max<std::int64_t>((n + split_size - 1) / split_size, 1);
    for (std::int64_t i = 0; i < pieces; ++i) sizes.push_back(std::min(split_size, n - i * split_size));
    std::vector<Tensor> out;
    std::int64_t at = 0;
    for (std::int64_t len : sizes) {
        out.push_back(narrow(d, at, len));
        at += len;
        if (out.back().requires_grad()) out.back().impl()->grad_fn->name = "SplitBackward0";
    }
    return out;
}

std::vector<Tensor> Tensor::split(const std::vector<std::int64_t>& split_sizes, std::int64_t dim_) const {
    detail::check_defined(*this, "split");
    if (dim() == 0) fail("split", "cannot split a 0-d tensor");
    const std::int64_t d = wrap_dim(dim_, dim(), "split"), n = size(d);
    std::int64_t total = 0;
    for (std::int64_t s : split_sizes) {
        if (s < 0)
            fail("split",
                 "split_with_sizes expects split_sizes have only non-negative entries, but got "
                 "split_sizes=" +
                     detail::size_list(split_sizes));
        total += s;
    }
    if (total != n)
        fail("split", "split_with_sizes expects split_sizes to sum exactly to " + std::to_string(n) +
                          " (input tensor's size at dimension " + std::to_string(d) +
                          "), but got split_sizes=" + detail::size_list(split_sizes));
    std::vector<Tensor> out;
    std::int64_t at = 0;
    for (std::int64_t len : split_sizes) {
        out.push_back(narrow(d, at, len));
        at += len;
        if (out.back().requires_grad()) out.back().impl()->grad_fn->name = "SplitWithSizesBackward0";
    }
    return out;
}

std::vector<Tensor> Tensor::chunk(std::int64_t chunks, std::int64_t dim_) const {
    detail::check_defined(*this, "chunk");
    if (dim() == 0) fail("chunk", "chunk expects at least a 1-dimensional tensor");
    if (chunks <= 0) fail("chunk", "chunk expects `chunks` to be greater than 0, got: " + std::to_string(chunks));
    const std::int64_t d = wrap_dim(dim_, dim(), "chunk"), n = size(d);
    // An empty dim gives `chunks` empty pieces, as PyTorch's (split would give one).
    if (n == 0) return split(std::vector<std::int64_t>(static_cast<std::size_t>(chunks), 0), d);
    return split((n + chunks - 1) / chunks, d);
}

Tensor Tensor::repeat(const Shape& repeats) const {
    detail::check_defined(*this, "repeat");
    if (repeats.size() < dim())
        fail("repeat", "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    const std::int64_t nd = repeats.size(), lead = nd - dim();
    // The output seen as (r0, s0, r1, s1, ...): the input broadcast (stride 0) along every r.
    std::vector<std::int64_t> pairs, in_strides, final_sizes;
    for (std::int64_t i = 0; i < nd; ++i) {
        if (repeats[i] < 0)
            fail("repeat", "Trying to create tensor with negative dimension " + std::to_string(repeats[i]) + ": " +
                               to_string(repeats));
        const std::int64_t s = i < lead ? 1 : size(i - lead);
        const std::int64_t st = i < lead ? 0 : strides()[static_cast<std::size_t>(i - lead)];
        pairs.insert(pairs.end(), {repeats[i], s});
        in_strides.insert(in_strides.end(), {0, st});
        final_sizes.push_back(repeats[i] * s);
    }
    detail::checked_numel(Shape(final_sizes), "repeat");
    Tensor out = detail::make_empty(Shape(final_sizes), dtype(), device(), "repeat");
    kernels::copy(detail::make_view(*this, Shape(pairs), in_strides, storage_offset()), out.view(Shape(pairs)));
    // PyTorch 1.13's repeat_backward, for its order of sums: the leading new dims summed away one at a
    // time, then the rest seen as (r, s) pairs (s alone where r is 1) and summed over every r at once.
    return record_unary(*this, out, "RepeatBackward0", [repeats, lead, s = shape()](const Tensor& g) {
        if (std::find(repeats.begin(), repeats.end(), 0) != repeats.end())
            return zeros(s, FactoryOptions(g.dtype()).device(g.device()));
        Tensor grad = g;
        for (std::int64_t i = 0; i < lead; ++i) grad = grad.sum(0);
        std::vector<std::int64_t> grad_size, sum_dims;
        for (std::int64_t d = 0; d < s.size(); ++d) {
            if (repeats[lead + d] != 1) {
                grad_size.push_back(repeats[lead + d]);
                sum_dims.push_back(static_cast<std::int64_t>(grad_size.size()) - 1);
            }
            grad_size.push_back(s[d]);
        }
        return sum_dims.empty() ? grad : grad.reshape(Shape(grad_size)).sum(Dims(sum_dims));
    });
}

Tensor Tensor::repeat_interleave(std::int64_t repeats, std::optional<std::int64_t> dim_) const {
    detail::check_defined(*this, "repeat_interleave");
    if (repeats < 0) fail("repeat_interleave", "repeats can not be negative");
    // As PyTorch: an index_select whose index repeats each position (so IndexSelectBackward0).
    const Tensor input = dim_ ? *this : flatten();
    const std::int64_t d = dim_ && input.dim() > 0 ? wrap_dim(*dim_, input.dim(), "repeat_interleave") : 0;
    const Tensor in = input.dim() == 0 ? input.reshape({1}) : input;
    std::vector<std::int64_t> idx;
    for (std::int64_t i = 0; i < in.size(d); ++i) idx.insert(idx.end(), static_cast<std::size_t>(repeats), i);
    return in.index_select(
        d, from_vector(idx, Shape{static_cast<std::int64_t>(idx.size())}, FactoryOptions(kInt64).device(device())));
}

Tensor Tensor::flip(const Dims& dims) const {
    detail::check_defined(*this, "flip");
    std::vector<std::int64_t> sizes = shape().vec(), st = strides();
    std::int64_t offset = storage_offset();
    std::vector<bool> seen(static_cast<std::size_t>(std::max<std::int64_t>(dim(), 1)), false);
    for (std::int64_t d0 : dims.vec()) {
        const auto d = static_cast<std::size_t>(wrap_dim(d0, std::max<std::int64_t>(dim(), 1), "flip"));
        if (seen[d]) fail("flip", "dim " + std::to_string(d) + " appears multiple times in the list of dims");
        seen[d] = true;
        if (dim() == 0 || sizes[d] == 0) continue;
        // A view walking dim d backwards (negative stride; internal only), then copied densely.
        offset += (sizes[d] - 1) * st[d];
        st[d] = -st[d];
    }
    // Into a tensor of this one's layout, as PyTorch's flip (empty_like, preserve_format).
    Tensor out = detail::empty_preserving(*this, dtype(), "flip");
    kernels::copy(detail::make_view(*this, shape(), st, offset), out);
    return record_unary(*this, out, "FlipBackward0", [dims](const Tensor& g) { return g.flip(dims); });
}

Tensor Tensor::roll(const std::vector<std::int64_t>& shifts, const std::vector<std::int64_t>& dims) const {
    detail::check_defined(*this, "roll");
    if (shifts.empty()) fail("roll", "`shifts` required");
    if (dims.empty()) {
        if (shifts.size() != 1)
            fail("roll", "shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) + ", dims:0");
        Tensor flat;
        {
            NoGradGuard no_grad;
            flat = flatten().roll(shifts, {0}).view(shape());
        }
        return record_unary(*this, dense_copy(flat, "roll"), "RollBackward0", [shifts, s = shape()](const Tensor& g) {
            return g.flatten().roll({-shifts[0]}, {0}).view(s);
        });
    }
    if (shifts.size() != dims.size())
        fail("roll", "shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                         ", dims:" + std::to_string(dims.size()));
    Tensor out = *this;
    {
        NoGradGuard no_grad;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            const std::int64_t d = wrap_dim(dims[i], std::max<std::int64_t>(dim(), 1), "roll");
            const std::int64_t n = dim() == 0 ? 1 : size(d);
            if (dim() == 0 || n == 0) continue;
            const std::int64_t s = ((shifts[i] % n) + n) % n;
            if (s != 0) out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
        }
        if (out.impl() == impl()) out = dense_copy(out, "roll");
    }
    std::vector<std::int64_t> back;
    for (std::int64_t s : shifts) back.push_back(-s);
    return record_unary(*this, out, "RollBackward0", [back, dims](const Tensor& g) { return g.roll(back, dims); });
}

namespace {

/// tril (lower) or triu: a copy with the other triangle of the last two dims zeroed, one fill per row.
Tensor triangle(const Tensor& self, std::int64_t k, bool lower) {
    const char* op = lower ? "tril" : "triu";
    detail::check_defined(self, op);
    if (self.dim() < 2) fail(op, "input tensor must have at least 2 dimensions, got shape " + to_string(self.shape()));
    Tensor out = dense_copy(self, op);
    const std::int64_t rows = self.size(-2), cols = self.size(-1);
    {
        NoGradGuard no_grad;
        for (std::int64_t i = 0; i < rows; ++i) {
            // tril keeps j <= i + k; triu keeps j >= i + k.
            const std::int64_t lo = lower ? std::clamp<std::int64_t>(i + k + 1, 0, cols) : 0;
            const std::int64_t hi = lower ? cols : std::clamp<std::int64_t>(i + k, 0, cols);
            if (hi > lo) out.narrow(-2, i, 1).narrow(-1, lo, hi - lo).fill_(0.0);
        }
    }
    return record_unary(self, out, lower ? "TrilBackward0" : "TriuBackward0",
                        [k, lower](const Tensor& g) { return lower ? g.tril(k) : g.triu(k); });
}

}  // namespace

Tensor Tensor::tril(std::int64_t diagonal) const {
    return triangle(*this, diagonal, true);
}
Tensor Tensor::triu(std::int64_t diagonal) const {
    return triangle(*this, diagonal, false);
}

Tensor Tensor::unflatten(std::int64_t dim_, const Shape& sizes) const {
    detail::check_defined(*this, "unflatten");
    if (dim() == 0) fail("unflatten", "cannot unflatten a 0-d tensor");
    const std::int64_t d = wrap_dim(dim_, dim(), "unflatten");
    if (sizes.size() == 0) fail("unflatten", "sizes must be non-empty");
    std::int64_t known = 1;
    bool infer = false;
    for (std::int64_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] != -1)
            known *= sizes[i];
        else if (infer)
            fail("unflatten", "only one dimension can be inferred");
        else
            infer = true;
    }
    if ((!infer && known != size(d)) || (infer && (known == 0 || size(d) % known != 0)))
        fail("unflatten", "Provided sizes " + detail::size_list(sizes.vec()) +
                              " don't multiply up to the size of dim " + std::to_string(dim_) + " (" +
                              std::to_string(size(d)) + ") in the input tensor");
    std::vector<std::int64_t> target = shape().vec();
    std::vector<std::int64_t> parts = sizes.vec();
    // -1 from the dim's size, not the tensor's (which says nothing when another dim is 0)
    for (auto& p : parts)
        if (p == -1) p = size(d) / known;
    target.erase(target.begin() + d);
    target.insert(target.begin() + d, parts.begin(), parts.end());
    return view(Shape(target));
}

Tensor Tensor::diag(std::int64_t k) const {
    detail::check_defined(*this, "diag");
    if (dim() == 1) {
        const std::int64_t len = size(0), n = len + (k < 0 ? -k : k);
        Tensor out = zeros_like_shape(Shape{n, n}, *this);
        const std::int64_t off = k >= 0 ? k : -k * n;
        kernels::copy(*this, detail::make_view(out, Shape{len}, {n + 1}, off));
        return record_unary(*this, out, "DiagBackward0", [len, n, off](const Tensor& g) {
            return dense_copy(detail::make_view(g.contiguous(), Shape{len}, {n + 1}, off), "diag");
        });
    }
    if (dim() != 2) fail("diag", "matrix or a vector expected, got shape " + to_string(shape()));
    const std::int64_t r = size(0), c = size(1);
    const std::int64_t len = std::max<std::int64_t>(k >= 0 ? std::min(r, c - k) : std::min(r + k, c), 0);
    const auto diag_of = [len, k](const Tensor& t) {
        const std::int64_t s0 = t.strides()[0], s1 = t.strides()[1];
        return detail::make_view(t, Shape{len}, {s0 + s1},
                                 t.storage_offset() + (len == 0 ? 0
                                                       : k >= 0 ? k * s1
                                                                : -k * s0));
    };
    Tensor out = dense_copy(diag_of(*this), "diag");
    return record_unary(*this, out, "DiagBackward0", [s = shape(), diag_of](const Tensor& g) {
        Tensor full = zeros_like_shape(s, g);
        NoGradGuard no_grad;
        kernels::copy(g, diag_of(full));
        return full;
    });
}

std::vector<Tensor> split(const Tensor& input, std::int64_t split_size, std::int64_t dim) {
    return input.split(split_size, dim);
}
std::vector<Tensor> split(const Tensor& input, const std::vector<std::int64_t>& split_sizes, std::int64_t dim) {
    return input.split(split_sizes, dim);
}
std::vector<Tensor> chunk(const Tensor& input, std::int64_t chunks, std::int64_t dim) {
    return input.chunk(chunks, dim);
}
Tensor repeat_interleave(const Tensor& input, std::int64_t repeats, std::optional<std::int64_t> dim) {
    return input.repeat_interleave(repeats, dim);
}
Tensor flip(const Tensor& input, const Dims& dims) {
    return input.flip(dims);
}
Tensor roll(const Tensor& input, const std::vector<std::int64_t>& shifts, const std::vector<std::int64_t>& dims) {
    return input.roll(shifts, dims);
}
Tensor tril(const Tensor& input, std::int64_t diagonal) {
    return input.tril(diagonal);
}
Tensor triu(const Tensor& input, std::int64_t diagonal) {
    return input.triu(diagonal);
}
Tensor unflatten(const Tensor& input, std::int64_t dim, const Shape& sizes) {
    return input.unflatten(dim, sizes);
}
Tensor diag(const Tensor& input, std::int64_t diagonal) {
    return input.diag(diagonal);
}

namespace {

/// A CPU tensor made by `fill(T*)`, then given the options' device and requires_grad.
template <typename Fill>
Tensor make_filled(const Shape& shape, const FactoryOptions& options, const char* op, Fill&& fill) {
    Tensor out = detail::make_empty(shape, options.dtype(), kCPU, op);
    detail::dispatch_all(options.dtype(), [&](auto tag) { fill(out.impl()->data<decltype(tag)>()); });
    if (!options.device().is_cpu()) out = out.to(options.device());
    if (options.requires_grad()) out.requires_grad_(true);
    return out;
}

}  // namespace

Tensor eye(std::int64_t n, FactoryOptions options) {
    return eye(n, n, options);
}

Tensor eye(std::int64_t n, std::int64_t m, FactoryOptions options) {
    if (n < 0) fail("eye", "n must be greater or equal to 0, got " + std::to_string(n));
    if (m < 0) fail("eye", "m must be greater or equal to 0, got " + std::to_string(m));
    return make_filled(Shape{n, m}, options, "eye", [n, m](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        std::fill(p, p + n * m, T(0));
        for (std::int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = T(1);
    });
}

Tensor linspace(double start, double end, std::int64_t steps, FactoryOptions options) {
    if (steps < 0) fail("linspace", "number of steps must be non-negative");
    return make_filled(Shape{steps}, options, "linspace", [=](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        if (steps == 1) p[0] = detail::convert<T>(start);
        if (steps <= 1) return;
        // PyTorch 1.13's CPU kernel (its AVX2 build): the step in the output type (double for
        // integers); element i is start + step*i in the first half and end - step*(steps-1-i) in
        // the second, each with one rounding (an FMA), except that blocks of 2 × V elements (V = 8
        // floats or 4 doubles or int64s, a vector) take their first element so and add j*step to it
        // (rounded twice) for the others. The same values, bit for bit, as torch.linspace gives.
        using Step = std::conditional_t<std::is_integral_v<T>, double, T>;
        constexpr std::int64_t V = sizeof(T) == 4 ? 8 : 4;
        const Step s0 = static_cast<Step>(detail::convert<T>(start)), s1 = static_cast<Step>(detail::convert<T>(end));
        const Step step = (s1 - s0) / static_cast<Step>(steps - 1);
        const std::int64_t half = steps / 2;
        const auto at = [&](std::int64_t i) -> T {
            return detail::convert<T>(i < half ? std::fma(step, static_cast<Step>(i), s0)
                                               : std::fma(-step, static_cast<Step>(steps - i - 1), s1));
        };
        std::int64_t i = 0;
        for (; i + 2 * V <= steps; i += 2 * V)
            for (std::int64_t b = i; b < i + 2 * V; b += V) {
                const auto base = static_cast<Step>(at(b));
                for (std::int64_t j = 0; j < V; ++j) p[b + j] = detail::convert<T>(base + static_cast<Step>(j) * step);
            }
        for (; i < steps; ++i) p[i] = at(i);
    });
}

namespace nn::functional {

namespace {

/// Pads by gathering: each (dim, positions) pick selects along its dim with index_select; the
/// backward adds the gradient back onto the picked positions, the last pick first.
using Picks = std::vector<std::pair<std::int64_t, Tensor>>;
/// With `raster` (reflection and replication padding, whose picks cover the trailing dims), the
/// backward is PyTorch 1.13's: each output element added into its input place in the output's row-major
/// order, from zeros, as one index_add along the trailing dims flattened; else one index_add per dim.
Tensor gather_pad(const Tensor& input, const Picks& picks, const char* name, bool raster = false) {
    Tensor out = input;
    {
        NoGradGuard no_grad;
        for (const auto& [d, idx] : picks) out = out.index_select(d, idx);
    }
    if (raster) {
        // The input place of each output element of the trailing dims, in row-major order.
        const std::int64_t nd = input.dim(), first = nd - static_cast<std::int64_t>(picks.size());
        std::vector<std::vector<std::int64_t>> at(static_cast<std::size_t>(picks.size()));
        for (const auto& [d, idx] : picks) at[static_cast<std::size_t>(d - first)] = idx.to_vector<std::int64_t>();
        std::vector<std::int64_t> flat{0}, lead;
        std::int64_t in_flat = 1;
        for (std::size_t k = 0; k < at.size(); ++k) {
            const std::int64_t n = input.size(first + static_cast<std::int64_t>(k));
            std::vector<std::int64_t> next;
            for (std::int64_t f : flat)
                for (std::int64_t j : at[k]) next.push_back(f * n + j);
            flat = std::move(next);
            in_flat *= n;
        }
        for (std::int64_t d = 0; d < first; ++d) lead.push_back(input.size(d));
        std::vector<std::int64_t> in_shape = lead, out_shape = lead;
        in_shape.push_back(in_flat);
        out_shape.push_back(static_cast<std::int64_t>(flat.size()));
        const Tensor index = from_vector(flat, Shape{static_cast<std::int64_t>(flat.size())},
                                         FactoryOptions(kInt64).device(input.device()));
        return record_unary(input, out, name, [index, in_shape, out_shape, s = input.shape()](const Tensor& g) {
            return zeros_like_shape(Shape(in_shape), g).index_add(-1, index, g.reshape(Shape(out_shape))).reshape(s);
        });
    }
    return record_unary(input, out, name, [picks, s = input.shape()](const Tensor& g) {
        Tensor grad = g;
        std::vector<std::int64_t> sizes = g.shape().vec();
        for (auto it = picks.rbegin(); it != picks.rend(); ++it) {
            sizes[static_cast<std::size_t>(it->first)] = s[it->first];
            grad = zeros_like_shape(Shape(sizes), g).index_add(it->first, it->second, grad);
        }
        return grad;
    });
}

/// Circular padding as PyTorch 1.13's _pad_circular: a batched input (N, C, *) with one (left, right)
/// pair per spatial dim, each at most the dim's size (negative pads crop, and the other side wraps
/// around the cropped part). Each padded dim gathers its positions with one index_select; the backward adds them back
/// (PyTorch's CopySlices).
Tensor pad_circular(const Tensor& input, const std::vector<std::int64_t>& pad) {
    const auto np = static_cast<std::int64_t>(pad.size() / 2);
    if (!((np == 1 && (input.dim() == 2 || input.dim() == 3)) || (np == 2 && (input.dim() == 3 || input.dim() == 4)) ||
          (np == 3 && (input.dim() == 4 || input.dim() == 5))))
        fail("pad", "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
    if (np + 2 != input.dim())
        fail("pad", "Invalid padding size, expected " + std::to_string(2 * (input.dim() - 2)) + " but got " +
                        std::to_string(pad.size()));
    Picks picks;
    for (std::int64_t i = 0; i < np; ++i) {
        const std::int64_t d = input.dim() - 1 - i, n = input.size(d);
        const std::int64_t l = pad[static_cast<std::size_t>(2 * i)], r = pad[static_cast<std::size_t>(2 * i + 1)];
        if (l > n || r > n) fail("pad", "Padding value causes wrapping around more than once.");
        if (n + l + r < 0) fail("pad", "Negative padding value is resulting in an empty dimension");
        // A negative pad crops first; the positive pads then wrap around what is left, as PyTorch's.
        const std::int64_t start = std::max<std::int64_t>(-l, 0), m = n - start - std::max<std::int64_t>(-r, 0);
        const std::int64_t lp = std::max<std::int64_t>(l, 0), rp = std::max<std::int64_t>(r, 0);
        if (m <= 0 && lp + rp > 0)
            fail("pad", "the circular padding " + detail::size_list(pad) + " crops dimension " + std::to_string(d) +
                            " of input " + to_string(input.shape()) + " to nothing and then wraps around it");
        std::vector<std::int64_t> idx;
        for (std::int64_t j = -lp; j < m + rp; ++j) idx.push_back(start + ((j % m) + m) % m);
        picks.emplace_back(d, from_vector(idx, Shape{static_cast<std::int64_t>(idx.size())},
                                          FactoryOptions(kInt64).device(input.device())));
    }
    return gather_pad(input, picks, "CopySlices");
}

}  // namespace

Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pad, const std::string& mode, double value) {
    detail::check_defined(input, "pad");
    if (pad.size() % 2 != 0) fail("pad", "Padding length must be divisible by 2");
    const auto np = static_cast<std::int64_t>(pad.size() / 2);
    if (np > input.dim()) fail("pad", "Padding length too large");
    // (dim, left, right) for each padded dim, the last dim first as in `pad`.
    struct Side {
        std::int64_t d, l, r;
    };
    std::vector<Side> sides;
    for (std::int64_t i = 0; i < np; ++i)
        sides.push_back(
            {input.dim() - 1 - i, pad[static_cast<std::size_t>(2 * i)], pad[static_cast<std::size_t>(2 * i + 1)]});
    std::vector<std::int64_t> out_sizes = input.shape().vec();
    for (const Side& s : sides) {
        out_sizes[static_cast<std::size_t>(s.d)] += s.l + s.r;
        if (out_sizes[static_cast<std::size_t>(s.d)] < 0 && mode != "circular")
            fail("pad", "the padding " + detail::size_list(pad) + " makes dimension " + std::to_string(s.d) +
                            " of input " + to_string(input.shape()) + " negative");
    }
    if (mode == "constant") {
        // The input's part that survives (negative pads crop) and where it lands in the output.
        const auto region = [sides](Tensor t, bool in_output) {
            for (const Side& s : sides) {
                const std::int64_t from = in_output ? std::max<std::int64_t>(s.l, 0) : std::max<std::int64_t>(-s.l, 0);
                const std::int64_t n =
                    (in_output ? t.size(s.d) - std::max<std::int64_t>(s.l, 0) - std::max<std::int64_t>(s.r, 0)
                               : t.size(s.d) - std::max<std::int64_t>(-s.l, 0) - std::max<std::int64_t>(-s.r, 0));
                t = t.narrow(s.d, from, std::max<std::int64_t>(n, 0));
            }
            return t;
        };
        Tensor out = full(Shape(out_sizes), value, FactoryOptions(input.dtype()).device(input.device()));
        {
            NoGradGuard no_grad;
            region(out, true).copy_(region(input, false));
        }
        return record_unary(input, out, "ConstantPadNdBackward0", [region, s = input.shape()](const Tensor& g) {
            Tensor full = zeros_like_shape(s, g);
            NoGradGuard no_grad;
            region(full, false).copy_(region(g, true));
            return full;
        });
    }
    const bool reflect = mode == "reflect", circular = mode == "circular";
    if (!reflect && !circular && mode != "replicate") fail("pad", "Unrecognised padding mode " + mode);
    if (value != 0.0) fail("pad", "Padding mode \"" + mode + "\" doesn't take in value argument");
    if (circular) return pad_circular(input, pad);
    if (np < 1 || np > 3 || input.dim() < np + 1 || input.dim() > np + 2)
        fail("pad", "the " + mode + " padding of the last " + std::to_string(np) + " dims needs a " +
                        std::to_string(np + 1) + "D or " + std::to_string(np + 2) + "D input, got " +
                        to_string(input.shape()));
    // Each padded dim gathers its positions with one index_select; the backward adds them back.
    Picks picks;
    for (const Side& s : sides) {
        const std::int64_t n = input.size(s.d);
        if (s.l < 0 || s.r < 0) fail("pad", mode + " padding must be non-negative, got " + detail::size_list(pad));
        if (reflect && (s.l >= n || s.r >= n))
            fail("pad",
                 "Argument #4: Padding size should be less than the corresponding input dimension, but got: "
                 "padding (" +
                     std::to_string(s.l) + ", " + std::to_string(s.r) + ") at dimension " + std::to_string(s.d) +
                     " of input " + to_string(input.shape()));
        if (!reflect && n == 0)
            fail("pad", "cannot replicate-pad an empty dimension of input " + to_string(input.shape()));
        std::vector<std::int64_t> idx;
        for (std::int64_t j = -s.l; j < n + s.r; ++j)
            idx.push_back(reflect ? (j < 0    ? -j
                                     : j >= n ? 2 * (n - 1) - j
                                              : j)
                                  : std::clamp<std::int64_t>(j, 0, n - 1));
        picks.emplace_back(s.d, from_vector(idx, Shape{static_cast<std::int64_t>(idx.size())},
                                            FactoryOptions(kInt64).device(input.device())));
    }
    static const char* const kNames[2][3] = {
        {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0", "ReplicationPad3DBackward0"},
        {"ReflectionPad1DBackward0", "ReflectionPad2DBackward0", "ReflectionPad3DBackward0"}};
    return gather_pad(input, picks, kNames[reflect][np - 1], /*raster=*/true);
}

}  // namespace nn::functional

}  // namespace xgrad
