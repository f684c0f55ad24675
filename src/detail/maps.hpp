// Op-side helpers for elementwise kernels: allocate the output, broadcast the operands as views, and
// call the device's kernel. Nothing here records autograd.
#pragma once

#include <algorithm>
#include <vector>

#include "detail/tensor_impl.hpp"
#include "kernels/kernels.hpp"

namespace xgrad::detail {

/// `t` viewed with `shape` (which it broadcasts to): size-1 and missing dims get stride 0.
inline Tensor broadcast_view(const Tensor& t, const Shape& shape) {
    if (t.shape() == shape) return t;
    const std::int64_t nd = shape.size(), off = nd - t.dim();
    Strides strides(static_cast<std::size_t>(nd), 0);
    for (std::int64_t d = 0; d < t.dim(); ++d)
        if (t.size(d) != 1) strides[static_cast<std::size_t>(d + off)] = t.strides()[static_cast<std::size_t>(d)];
    return make_view(t, shape, strides, t.storage_offset());
}

/// Whether `t` is a fresh tensor or a broadcast (expand) view of one: its strides row-major, size-1
/// dims included, where they are not 0. Operands that all are leave output_strides no pair of dims
/// to swap (its sort swaps only on equal nonzero strides, which such operands have only across dims of
/// size 1), unless the output is empty: the common case, decided here without it.
inline bool row_major(const Tensor& t) {
    const Shape& shape = t.shape();
    const Strides& st = t.strides();
    std::int64_t expected = 1;
    for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
        const std::int64_t s = st[static_cast<std::size_t>(d)];
        if (s == 0) continue;
        if (s != expected) return false;
        expected *= shape[d];
    }
    return true;
}

/// Whether `strides` lay out `shape` without gaps or overlaps in some order of the dims (PyTorch's
/// is_non_overlapping_and_dense).
inline bool dense_layout(const Shape& shape, const Strides& strides) {
    // The dims of size > 1 by stride, smallest first (an insertion sort into an inline list: no heap).
    Strides dims;
    for (std::int64_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1) continue;
        const std::int64_t s = strides[static_cast<std::size_t>(d)];
        if (s <= 0) return false;
        dims.push_back(d);
        for (std::size_t i = dims.size() - 1; i > 0 && strides[static_cast<std::size_t>(dims[i - 1])] > s; --i)
            std::swap(dims[i - 1], dims[i]);
    }
    std::int64_t expected = 1;
    for (std::int64_t d : dims) {
        if (strides[static_cast<std::size_t>(d)] != expected) return false;
        expected *= shape[d];
    }
    return true;
}

/// The strides PyTorch's TensorIterator gives an elementwise output of `shape` from its operands (each
/// of `shape` or broadcasting to it), or none where that is row-major order (the output contiguous, as
/// it always is when the operands are). Operands of the output's shape with one dense layout pass it on
/// (its fast set-up); otherwise the dims are ordered as reorder_dimensions orders them: each pair by
/// the first operand whose strides tell them apart (a stride of 0 decides nothing), equal strides
/// putting the larger dim after the smaller. So x.t().exp() and x.t() * y.t() are transposed like
/// x.t(), as in PyTorch, and are computed in one pass over memory in that order.
inline Strides output_strides(const Shape& shape, std::initializer_list<const Tensor*> ops) {
    const auto nd = static_cast<int>(shape.size());
    bool same_shape = true, contiguous = true, same_strides = true;
    for (const Tensor* t : ops) {
        same_shape = same_shape && t->shape() == shape;
        contiguous = contiguous && t->is_contiguous();
        same_strides = same_strides && t->strides() == (*ops.begin())->strides();
    }
    if (nd < 2 || (same_shape && contiguous)) return {};
    if (same_shape && nd == 4) {  // all channels-last: that layout
        bool channels_last = true;
        for (const Tensor* t : ops) {
            std::int64_t expected = 1;
            for (int d : {1, 3, 2, 0}) {
                if (shape[d] == 1) continue;
                channels_last = channels_last && t->strides()[static_cast<std::size_t>(d)] == expected;
                expected *= shape[d];
            }
        }
        if (channels_last) return {shape[1] * shape[3] * shape[2], 1, shape[1] * shape[3], shape[1]};
    }
    const Strides& first = (*ops.begin())->strides();
    if (same_shape && same_strides && dense_layout(shape, first)) return first;
    auto stride = [&](const Tensor* t, int d) -> std::int64_t {
        const auto off = static_cast<int>(nd - t->dim());
        if (d < off || (t->size(d - off) == 1 && shape[d] != 1)) return 0;
        return t->strides()[static_cast<std::size_t>(d - off)];
    };
    // 1 when dim d0 should come after d1 (vary more slowly), -1 when before, 0 when no operand says.
    auto should_swap = [&](int d0, int d1) {
        for (const Tensor* t : ops) {
            const std::int64_t s0 = stride(t, d0), s1 = stride(t, d1);
            if (s0 == 0 || s1 == 0) continue;
            if (s0 != s1) return s0 < s1 ? -1 : 1;
            if (shape[d0] > shape[d1]) return 1;
        }
        return 0;
    };
    std::vector<int> perm(static_cast<std::size_t>(nd));  // fastest-varying first
    for (int i = 0; i < nd; ++i) perm[static_cast<std::size_t>(i)] = nd - 1 - i;
    // PyTorch's insertion sort, which stops at the first pair in order and passes undecided ones.
    for (int i = 1; i < nd; ++i) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; --d0) {
            const int c = should_swap(perm[static_cast<std::size_t>(d0)], perm[static_cast<std::size_t>(d1)]);
            if (c > 0) {
                std::swap(perm[static_cast<std::size_t>(d0)], perm[static_cast<std::size_t>(d1)]);
                d1 = d0;
            } else if (c < 0) {
                break;
            }
        }
    }
    bool moved = false;
    for (int i = 0; i < nd; ++i) moved = moved || perm[static_cast<std::size_t>(i)] != nd - 1 - i;
    if (!moved) return {};
    Strides out(static_cast<std::size_t>(nd), 0);
    std::int64_t step = 1;
    for (int d : perm) {
        out[static_cast<std::size_t>(d)] = step;
        step *= shape[d];
    }
    return out;
}

/// The dims of a tensor with `strides`, slowest-varying first (equal strides keep their order).
inline std::vector<int> slowest_first(const Strides& strides) {
    std::vector<int> order;
    for (int d = 0; d < static_cast<int>(strides.size()); ++d) order.push_back(d);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return strides[static_cast<std::size_t>(a)] > strides[static_cast<std::size_t>(b)];
    });
    return order;
}

/// The strides of `t` read as a tensor of `shape` (t broadcasting to it): 0 along the dims it is
/// broadcast on.
inline Strides broadcast_strides(const Tensor& t, const Shape& shape) {
    const auto nd = static_cast<std::int64_t>(shape.size()), off = nd - t.dim();
    Strides s(static_cast<std::size_t>(nd), 0);
    for (std::int64_t d = off; d < nd; ++d)
        if (t.size(d - off) == shape[d])
            s[static_cast<std::size_t>(d)] = t.strides()[static_cast<std::size_t>(d - off)];
    return s;
}

/// An elementwise output of `shape` with `strides` (output_strides'), and its operands viewed so that
/// the kernel writes a contiguous tensor: the dims in the order of the output's strides, slowest
/// first. `result` is the output as the op returns it.
struct OrderedOutput {
    std::vector<int> order;  // the dims, slowest-varying first
    Tensor dense, result;

    OrderedOutput(const Shape& shape, const Strides& strides, DType dtype, Device device, const char* op)
        : order(slowest_first(strides)) {
        dense = make_empty(in_order(shape), dtype, device, op);
        result = make_view(dense, shape, strides, 0);
    }
    Shape in_order(const Shape& shape) const {
        Shape s;
        for (int d : order) s.push_back(shape[d]);
        return s;
    }
    /// Operand `t` (of the output's shape, or broadcasting to it) with its dims in `order`.
    Tensor operand(const Tensor& t, const Shape& shape) const {
        const Strides all = broadcast_strides(t, shape);
        Strides st;
        for (int d : order) st.push_back(all[static_cast<std::size_t>(d)]);
        return make_view(t, in_order(shape), st, t.storage_offset());
    }
};

/// A new tensor of x's shape and dtype holding `op` applied to x.
/// bool, uint8 and int32 operands are computed in int64 and the result converted back, which gives
/// PyTorch's values (uint8 and int32 wrap around, a nonzero bool result is true).
inline Tensor map_unary(const Tensor& x, kernels::UnaryOp op, double a = 0, double b = 0) {
    if (is_narrow(x.dtype())) return map_unary(x.to(kInt64), op, a, b).to(x.dtype());
    // A contiguous x, or a broadcast view of one, gives a contiguous result, as PyTorch's.
    if (const Strides st = row_major(x) ? Strides() : output_strides(x.shape(), {&x}); !st.empty()) {
        const OrderedOutput o(x.shape(), st, x.dtype(), x.device(), "empty");
        kernels::unary(op, o.operand(x, x.shape()), o.dense, a, b);
        return o.result;
    }
    Tensor out = make_empty(x.shape(), x.dtype(), x.device());
    kernels::unary(op, x, out, a, b);
    return out;
}

/// op applied to x and y (of one dtype and device) into a new row-major tensor of `shape`, their
/// broadcast shape: broadcast operands are read through views, in place.
inline Tensor binary_row_major(const Tensor& x, const Tensor& y, const Shape& shape, const char* name,
                               kernels::BinaryOp op, double a, double b) {
    Tensor out = make_empty(shape, x.dtype(), x.device(), name);
    Tensor xv, yv;  // a view only for an operand that is broadcast
    kernels::binary(op, x.shape() == shape ? x : (xv = broadcast_view(x, shape)),
                    y.shape() == shape ? y : (yv = broadcast_view(y, shape)), out, a, b);
    return out;
}

/// A new tensor of the broadcast shape holding `op` applied to x and y (of one dtype and device);
/// `name` names the op in the error when the shapes do not broadcast or the devices differ. The result
/// takes the operands' layout with x's first (PyTorch's TensorIterator order), or y's with `y_first`
/// (the gradient kernels whose iterator lists the input before the gradient: threshold_backward,
/// leaky_relu_backward).
inline Tensor map_binary(const Tensor& x, const Tensor& y, const char* name, kernels::BinaryOp op, double a = 0,
                         double b = 0, bool y_first = false) {
    check_same_device(x, y, name);
    if (is_narrow(x.dtype())) return map_binary(x.to(kInt64), y.to(kInt64), name, op, a, b, y_first).to(x.dtype());
    check_same_dtype(x, y, name);
    const bool fresh = row_major(x) && row_major(y);  // then the output is row-major too
    if (x.shape() == y.shape() && fresh) {            // no views (and no handles to copy)
        Tensor out = make_empty(x.shape(), x.dtype(), x.device(), name);
        kernels::binary(op, x, y, out, a, b);
        return out;
    }
    const Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), name);
    if (const Strides st = fresh && shape.numel() > 0 ? Strides()
                           : y_first                  ? output_strides(shape, {&y, &x})
                                                      : output_strides(shape, {&x, &y});
        !st.empty()) {
        const OrderedOutput o(shape, st, x.dtype(), x.device(), name);
        kernels::binary(op, o.operand(x, shape), o.operand(y, shape), o.dense, a, b);
        return o.result;
    }
    return binary_row_major(x, y, shape, name, op, a, b);
}

/// map_binary with a row-major output whatever the operands' layouts, as PyTorch's ops whose meta
/// function asks for a contiguous result (pow of a Scalar base). x and y have the same dtype.
inline Tensor map_binary_row_major(const Tensor& x, const Tensor& y, const char* name, kernels::BinaryOp op) {
    check_same_device(x, y, name);
    check_same_dtype(x, y, name);
    const Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), name);
    return binary_row_major(x, y, shape, name, op, 0, 0);
}

/// Records `name` on `out`, a 0-d statistic of all of `self` (max(), min(), median(), nanmedian()): as
/// PyTorch's CPU evenly_distribute_backward, the gradient is shared evenly by the elements equal to it
/// (the NaNs when it is NaN), +0 elsewhere. Defined in sorting.cpp.
void record_evenly(Tensor& out, const char* name, const Tensor& self);

}  // namespace xgrad::detail
