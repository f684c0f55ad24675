// Op-side helpers for elementwise kernels: allocate the output, broadcast the operands as views, and
// call the device's kernel. Nothing here records autograd.
#pragma once

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

/// A new tensor of x's shape and dtype holding `op` applied to x.
/// bool, uint8 and int32 operands are computed in int64 and the result converted back, which gives
/// PyTorch's values (uint8 and int32 wrap around, a nonzero bool result is true).
inline Tensor map_unary(const Tensor& x, kernels::UnaryOp op, double a = 0, double b = 0) {
    if (is_narrow(x.dtype())) return map_unary(x.to(kInt64), op, a, b).to(x.dtype());
    Tensor out = make_empty(x.shape(), x.dtype(), x.device());
    kernels::unary(op, x, out, a, b);
    return out;
}

/// A new tensor of the broadcast shape holding `op` applied to x and y (of one dtype and device);
/// `name` names the op in the error when the shapes do not broadcast or the devices differ.
inline Tensor map_binary(const Tensor& x, const Tensor& y, const char* name, kernels::BinaryOp op, double a = 0,
                         double b = 0) {
    check_same_device(x, y, name);
    if (is_narrow(x.dtype())) return map_binary(x.to(kInt64), y.to(kInt64), name, op, a, b).to(x.dtype());
    if (x.shape() == y.shape()) {  // no views to make (and no handles to copy)
        Tensor out = make_empty(x.shape(), x.dtype(), x.device(), name);
        kernels::binary(op, x, y, out, a, b);
        return out;
    }
    const Shape shape = broadcast_shapes(x.shape(), y.shape(), name);
    Tensor out = make_empty(shape, x.dtype(), x.device(), name);
    Tensor xv, yv;  // a view only for an operand that is broadcast
    kernels::binary(op, x.shape() == shape ? x : (xv = broadcast_view(x, shape)),
                    y.shape() == shape ? y : (yv = broadcast_view(y, shape)), out, a, b);
    return out;
}

}  // namespace xgrad::detail
