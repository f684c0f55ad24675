// Selection by a boolean mask: where, masked_fill, nonzero, masked_select and x[mask], on the where
// kernel (kernels/kernels.hpp) and the indexing ops; nonzero finds its positions on the host.
#include <cmath>
#include <limits>

#include "detail/convert.hpp"
#include "detail/format.hpp"
#include "detail/maps.hpp"
#include "detail/tensor_impl.hpp"
#include "xgrad/autograd.hpp"
#include "xgrad/factory.hpp"
#include "xgrad/ops.hpp"

namespace xgrad {

using detail::fail;
using detail::NeedsGrad;
using detail::Saved;
using detail::sum_to;
using Grads = detail::GradList;

namespace detail {
/// For x[i0, ..., ik-1] with k >= 2 int64 index tensors (indexing.cpp): one int64 index of their
/// broadcast shape into the first k dims merged row-major, bounds checked, negative indices from
/// the end.
Tensor merged_index(const Tensor& self, const std::vector<Tensor>& indices, const char* op);
/// self's shape with its first k dims merged into one.
Shape merged_rows(const Tensor& self, std::int64_t k);
}  // namespace detail

namespace {

/// A 0-d tensor holding `value` as `like`'s dtype, on its device.
Tensor scalar_like(double value, const Tensor& like) {
    return full({}, value, FactoryOptions(like.dtype()).device(like.device()));
}

/// The dtype a tensor meets a Python number in (torch.result_type with a wrapped number): floating
/// tensors keep theirs, integers stay while the number is whole, and bool meets an integer in int64.
DType with_scalar(const Tensor& t, double s) {
    if (t.is_floating_point()) return t.dtype();
    if (!(std::floor(s) == s && detail::fits_int64(s))) return kFloat32;
    return t.dtype() == kBool ? kInt64 : t.dtype();
}

/// cond ? x : y over the broadcast shape, unrecorded; x and y have one dtype and the device of cond.
/// With `follow`, the result takes the operands' layout as PyTorch's where does (its TensorIterator's
/// order of cond, x and y: a transposed condition gives a transposed result, and sums of it later
/// add in that order); else it is row-major, as masked_fill's (a contiguous clone, then filled).
Tensor where_raw(const Tensor& cond, const Tensor& x, const Tensor& y, const Shape& shape, const char* op,
                 bool follow = false) {
    const bool fresh = detail::row_major(cond) && detail::row_major(x) && detail::row_major(y);
    if (const Strides st =
            !follow || fresh || shape.numel() == 0 ? Strides() : detail::output_strides(shape, {&cond, &x, &y});
        !st.empty()) {
        const detail::OrderedOutput o(shape, st, x.dtype(), x.device(), op);
        kernels::where(o.operand(cond, shape), o.operand(x, shape), o.operand(y, shape), o.dense);
        return o.result;
    }
    Tensor out = detail::make_empty(shape, x.dtype(), x.device(), op);
    kernels::where(detail::broadcast_view(cond, shape), detail::broadcast_view(x, shape),
                   detail::broadcast_view(y, shape), out);
    return out;
}

/// `t` as a contiguous bool tensor on the host (nonzero elements true, NaN too) and how many are true.
std::pair<Tensor, std::int64_t> host_bools(const Tensor& t) {
    NoGradGuard no_grad;
    Tensor m = t.to(kBool).to(kCPU).contiguous();
    const bool* v = m.impl()->data<bool>();
    std::int64_t count = 0;
    for (std::int64_t i = 0, n = m.numel(); i < n; ++i) count += v[i];
    return {std::move(m), count};
}

/// The row-major flat positions where `mask` (bool or uint8) is nonzero, found on the host: counted
/// first, then each position written and kept where true, without a branch per element (a random
/// mask mispredicted every other one).
std::vector<std::int64_t> true_positions(const Tensor& mask) {
    const auto [m, count] = host_bools(mask);
    const bool* v = m.impl()->data<bool>();
    std::vector<std::int64_t> at(static_cast<std::size_t>(count) + 1);  // the loop writes one past the last
    std::int64_t k = 0;
    for (std::int64_t i = 0, n = m.numel(); i < n; ++i) {
        at[static_cast<std::size_t>(k)] = i;
        k += v[i];
    }
    at.resize(static_cast<std::size_t>(count));
    return at;
}

/// The checks of masked_fill: a bool mask on self's device; returns the output's shape.
Shape check_masked_fill(const Tensor& self, const Tensor& mask, const char* op) {
    detail::check_defined(self, op);
    detail::check_defined(mask, op);
    if (mask.dtype() != kBool)
        fail(op, "masked_fill_ only supports boolean masks, but got mask with dtype " +
                     detail::scalar_type_name(mask.dtype()));
    detail::check_same_device(self, mask, op);
    return self.shape() == mask.shape() ? self.shape() : detail::broadcast_shapes(self.shape(), mask.shape(), op);
}

/// A bool or uint8 mask, as masked_select and x[mask] take.
void check_mask(const Tensor& mask, const char* op, const std::string& message) {
    detail::check_defined(mask, op);
    if (mask.dtype() != kBool && mask.dtype() != kUInt8) fail(op, message);
}

}  // namespace

// ---- where ----------------------------------------------------------------------------------------

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
    const char* op = "where";
    detail::check_defined(condition, op);
    detail::check_defined(x, op);
    detail::check_defined(y, op);
    if (condition.dtype() != kBool && condition.dtype() != kUInt8)  // uint8: PyTorch's deprecated masks
        fail(op, "where expected condition to be a boolean tensor, but got a tensor with dtype " +
                     detail::scalar_type_name(condition.dtype()));
    detail::check_same_device(condition, x, op);
    detail::check_same_device(condition, y, op);
    const DType t = detail::result_type(x, y);
    const Shape shape =
        detail::broadcast_shapes(detail::broadcast_shapes(condition.shape(), x.shape(), op), y.shape(), op);
    Tensor out = where_raw(condition.to(kBool), x.to(t), y.to(t), shape, op, true);
    if (detail::needs_grad({&x, &y}))
        detail::record(
            out, "WhereBackward0", {&x, &y},
            [c = Saved(condition.to(kBool)), sx = x.shape(), sy = y.shape()](const Tensor& g, const NeedsGrad& n) {
                // Each operand's gradient is g where it was picked, 0 elsewhere.
                Grads r(2);
                if (n[0]) r[0] = sum_to(where(c.get(), g, 0.0), sx);
                if (n[1]) r[1] = sum_to(where(c.get(), 0.0, g), sy);
                return r;
            });
    return out;
}

Tensor where(const Tensor& condition, double x, const Tensor& y) {
    detail::check_defined(y, "where");
    const Tensor ty = y.to(with_scalar(y, x));
    return where(condition, scalar_like(x, ty), ty);
}

Tensor where(const Tensor& condition, const Tensor& x, double y) {
    detail::check_defined(x, "where");
    const Tensor tx = x.to(with_scalar(x, y));
    return where(condition, tx, scalar_like(y, tx));
}

std::vector<Tensor> where(const Tensor& condition) {
    detail::check_defined(condition, "where");
    const Tensor nz = condition.nonzero();  // (n, ndim)
    std::vector<Tensor> out;
    for (std::int64_t d = 0; d < nz.size(1); ++d) out.push_back(nz.select(1, d).contiguous());
    return out;
}

// ---- masked_fill ------------------------------------------------------------------------------------

Tensor Tensor::masked_fill(const Tensor& mask, double value) const {
    const char* op = "masked_fill";
    const Shape out_shape = check_masked_fill(*this, mask, op);
    detail::check_scalar_fits(value, dtype(), op);
    Tensor out = where_raw(mask, scalar_like(value, *this), *this, out_shape, op);
    if (detail::needs_grad({this}))
        detail::record(out, "MaskedFillBackward0", {this},
                       [m = Saved(mask), s = shape()](const Tensor& g, const NeedsGrad&) {
                           return Grads{sum_to(g.masked_fill(m.get(), 0.0), s)};
                       });
    return out;
}

Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
    const char* op = "masked_fill";
    const Shape out_shape = check_masked_fill(*this, mask, op);
    detail::check_defined(value, op);
    if (value.dim() != 0)
        fail(op, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with " +
                     std::to_string(value.dim()) + " dimension(s).");
    if (value.device() != device() && !value.device().is_cpu())  // a CPU 0-d value may fill a GPU tensor
        detail::check_same_device(*this, value, op);
    // A value of another dtype must fit self's, as PyTorch's (which takes it as a number): 300 into
    // uint8 throws rather than wrapping.
    if (value.dtype() != dtype()) detail::check_scalar_fits(value.item<double>(), dtype(), op);
    const Tensor v = value.to(dtype()).to(device());  // differentiable: its gradient goes back to `value`
    Tensor out = where_raw(mask, v, *this, out_shape, op);
    if (detail::needs_grad({this, &v}))
        detail::record(out, "MaskedFillBackward1", {this, &v},
                       [m = Saved(mask), s = shape()](const Tensor& g, const NeedsGrad& n) {
                           Grads r(2);
                           if (n[0]) r[0] = sum_to(g.masked_fill(m.get(), 0.0), s);
                           // PyTorch's masked_fill_backward: the filled places' gradients, selected, summed.
                           if (n[1]) r[1] = g.masked_select(m.get()).sum();
                           return r;
                       });
    return out;
}

namespace {

/// Writes `result` (masked_fill's, unrecorded) into `self`, which must have the broadcast shape. An
/// expanded self is refused first (PyTorch fills only the selected places of one, with a deprecation
/// warning; a copy of the whole result would write each shared place several times).
Tensor& assign_masked(Tensor& self, const Tensor& result) {
    if (result.shape() != self.shape())
        fail("masked_fill_", "output with shape " + detail::size_list(self.shape()) +
                                 " doesn't match the broadcast shape " + detail::size_list(result.shape()));
    return self.copy_(result);
}

}  // namespace

Tensor& Tensor::masked_fill_(const Tensor& mask, double value) {
    detail::check_inplace(*this, "masked_fill_");
    detail::check_no_internal_overlap(*this, "masked_fill_");
    Tensor result;
    {
        NoGradGuard no_grad;
        result = masked_fill(mask, value);
    }
    return assign_masked(*this, result);
}

Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) {
    detail::check_inplace(*this, "masked_fill_");
    detail::check_inplace_operand(value, "masked_fill_");
    detail::check_no_internal_overlap(*this, "masked_fill_");
    Tensor result;
    {
        NoGradGuard no_grad;
        result = masked_fill(mask, value);
    }
    return assign_masked(*this, result);
}

Tensor masked_fill(const Tensor& input, const Tensor& mask, double value) {
    return input.masked_fill(mask, value);
}
Tensor masked_fill(const Tensor& input, const Tensor& mask, const Tensor& value) {
    return input.masked_fill(mask, value);
}

// ---- nonzero, masked_select, x[mask] ------------------------------------------------------------------

Tensor Tensor::nonzero() const {
    detail::check_defined(*this, "nonzero");
    const auto [m, count] = host_bools(*this);
    const bool* v = m.impl()->data<bool>();
    const std::int64_t nd = dim();
    const auto und = static_cast<std::size_t>(nd);
    // Every element's multi-index is written at the next free row, which advances where the element is
    // true (no branch, no division); the index counts up as an odometer.
    std::vector<std::int64_t> coords((static_cast<std::size_t>(count) + 1) * und), idx(und, 0);
    std::int64_t k = 0;
    for (std::int64_t i = 0, n = m.numel(); i < n; ++i) {
        std::int64_t* row = coords.data() + k * nd;
        for (std::size_t d = 0; d < und; ++d) row[d] = idx[d];  // (std::copy: a memmove call per element)
        k += v[i];
        for (std::int64_t d = nd - 1; d >= 0; --d) {
            const auto du = static_cast<std::size_t>(d);
            if (++idx[du] < size(d)) break;
            idx[du] = 0;
        }
    }
    coords.resize(static_cast<std::size_t>(count) * und);
    return from_vector(coords, Shape{count, nd}, FactoryOptions(kInt64).device(device()));
}

Tensor Tensor::argwhere() const {
    return nonzero();
}

Tensor nonzero(const Tensor& input) {
    return input.nonzero();
}
Tensor argwhere(const Tensor& input) {
    return input.nonzero();
}

Tensor Tensor::masked_select(const Tensor& mask) const {
    const char* op = "masked_select";
    detail::check_defined(*this, op);
    check_mask(mask, op, "masked_select: expected BoolTensor or ByteTensor for mask");
    detail::check_same_device(*this, mask, op);
    const Shape bshape = shape() == mask.shape() ? shape() : detail::broadcast_shapes(shape(), mask.shape(), op);
    const std::vector<std::int64_t> at = true_positions(mask.expand(bshape));
    const Tensor idx =
        from_vector(at, Shape{static_cast<std::int64_t>(at.size())}, FactoryOptions(kInt64).device(device()));
    Tensor out;
    {
        NoGradGuard no_grad;
        out = expand(bshape).reshape({bshape.numel()}).index_select(0, idx);
    }
    if (detail::needs_grad({this}))
        detail::record(out, "MaskedSelectBackward0", {this},
                       [idx = Saved(idx), bshape, s = shape()](const Tensor& g, const NeedsGrad&) {
                           // g scattered back to the selected places of the broadcast shape.
                           const Tensor z = zeros({bshape.numel()}, FactoryOptions(g.dtype()).device(g.device()));
                           return Grads{sum_to(z.index_add(0, idx.get(), g).view(bshape), s)};
                       });
    return out;
}

Tensor masked_select(const Tensor& input, const Tensor& mask) {
    return input.masked_select(mask);
}

namespace detail {

/// `self[mask]` for a bool (or uint8) mask covering self's leading dims: the selected elements of
/// those dims, in row-major order, each with the remaining dims (indexing.cpp's Tensor::index).
Tensor index_by_mask(const Tensor& self, const Tensor& mask) {
    const char* op = "index";
    detail::check_same_device(self, mask, op);
    if (mask.dim() > self.dim())
        fail(op, "too many indices for tensor of dimension " + std::to_string(self.dim()) + " (got " +
                     std::to_string(mask.dim()) + ")");
    for (std::int64_t d = 0; d < mask.dim(); ++d)
        if (mask.size(d) != self.size(d))
            fail(op, "The shape of the mask " + detail::size_list(mask.shape()) + " at index " + std::to_string(d) +
                         " does not match the shape of the indexed tensor " + detail::size_list(self.shape()) +
                         " at index " + std::to_string(d));
    // The leading mask.dim() dims merge into one (a 0-d mask adds one of size 1), then int64 indexing.
    std::vector<std::int64_t> rows{mask.numel()};
    for (std::int64_t d = mask.dim(); d < self.dim(); ++d) rows.push_back(self.size(d));
    const std::vector<std::int64_t> at = true_positions(mask);
    const Tensor idx =
        from_vector(at, Shape{static_cast<std::int64_t>(at.size())}, FactoryOptions(kInt64).device(self.device()));
    return self.reshape(Shape(rows)).index({idx});
}

}  // namespace detail

Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values) {
    const char* op = "index_put_";
    detail::check_inplace(*this, op);
    detail::check_defined(values, op);
    detail::check_inplace_operand(values, op);
    // PyTorch writes through an expanded self (with a deprecation warning); the places of x[idx] here
    // are found on a reshaped self, which for an expanded one is a copy: refused rather than lost.
    detail::check_no_internal_overlap(*this, op);
    if (indices.empty()) fail(op, "takes at least one index tensor");
    const Tensor& mask = indices.front();
    detail::check_defined(mask, op);
    NoGradGuard no_grad;
    // The places as an int64 index into the merged leading dims (a bool mask, or several index
    // tensors) or into dim 0, and the shape of x[indices] (the index's shape, then the other dims).
    Tensor idx = mask;
    std::vector<std::int64_t> rows{dim() == 0 ? 1 : size(0)}, picked;
    if (indices.size() > 1) {
        idx = detail::merged_index(*this, indices, op);
        rows = detail::merged_rows(*this, static_cast<std::int64_t>(indices.size())).vec();
        picked = idx.shape().vec();
    } else if (mask.dtype() == kBool || mask.dtype() == kUInt8) {
        (void)detail::index_by_mask(*this, mask);  // the mask's checks
        const std::vector<std::int64_t> at = true_positions(mask);
        idx = from_vector(at, Shape{static_cast<std::int64_t>(at.size())}, FactoryOptions(kInt64).device(device()));
        rows = {mask.numel()};
        for (std::int64_t d = mask.dim(); d < dim(); ++d) rows.push_back(size(d));
        picked = {idx.numel()};
    } else {
        (void)index({mask});  // int64 index checks
        std::vector<std::int64_t> at = mask.to(kCPU).contiguous().to_vector<std::int64_t>();
        for (auto& i : at) i = i < 0 ? i + rows[0] : i;  // negative indices count from the end
        idx = from_vector(at, mask.shape(), FactoryOptions(kInt64).device(device()));
        for (std::int64_t d = 1; d < dim(); ++d) rows.push_back(size(d));
        picked = mask.shape().vec();
    }
    picked.insert(picked.end(), rows.begin() + 1, rows.end());
    const Shape result_shape(picked);
    bool fits = values.dim() <= result_shape.size();
    for (std::int64_t d = 1; fits && d <= values.dim(); ++d)
        fits = values.size(-d) == 1 || values.size(-d) == result_shape[result_shape.size() - d];
    if (!fits)
        fail(op, "shape mismatch: value tensor of shape " + detail::size_list(values.shape()) +
                     " cannot be broadcast to indexing result of shape " + detail::size_list(result_shape));
    detail::check_same_device(*this, values, op);
    std::int64_t width = 1;  // the elements each index names
    for (std::size_t d = 1; d < rows.size(); ++d) width *= rows[d];
    const Tensor v2 = values.to(dtype()).expand(result_shape).reshape({idx.numel(), width});
    const Tensor i2 = idx.reshape({idx.numel(), 1}).expand({idx.numel(), width});
    const Tensor merged = reshape({rows[0], width}).scatter(0, i2, v2.contiguous());
    copy_(merged.view(shape()));
    return *this;
}

Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, double value) {
    detail::check_defined(*this, "index_put_");
    detail::check_scalar_fits(value, dtype(), "index_put_");
    return index_put_(indices, full({}, value, FactoryOptions(dtype()).device(device())));
}

}  // namespace xgrad
