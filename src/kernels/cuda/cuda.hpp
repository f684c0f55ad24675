// The CUDA backend's kernel table, and what its sources share on the tensor side.
#pragma once

#include <array>

#include "detail/tensor_impl.hpp"
#include "kernels/cpu/loop.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda/runtime.hpp"
#include "kernels/kernels.hpp"

namespace xgrad::kernels::cuda {

/// The CUDA kernel table (kernels::backend(kCUDA) returns it).
const Backend& backend();

/// out (..., n, m) = beta * out + op(a) (..., n, k) · op(b) (..., k, m), op(t) t's last two dims swapped
/// where `t` says so, through cuBLAS (matmul.cpp).
void matmul(const Tensor& a, const Tensor& b, const Tensor& out, double beta, Transpose t);
/// out (n) = a (n, k) · x (k), as a one-column matmul (matmul.cpp).
void mv(const Tensor& a, const Tensor& x, const Tensor& out);
/// out (0-d) = a (k) · b (k), as a (1, k) · (k, 1) matmul (matmul.cpp).
void dot(const Tensor& a, const Tensor& b, const Tensor& out);

/// The kernels' name for a tensor's dtype.
inline Scalar scalar(DType dtype) {
    switch (dtype) {
        case DType::kFloat32:
            return Scalar::kFloat32;
        case DType::kFloat64:
            return Scalar::kFloat64;
        case DType::kInt64:
            return Scalar::kInt64;
        case DType::kBool:
            return Scalar::kBool;
        case DType::kInt32:
            return Scalar::kInt32;
        case DType::kUInt8:
            return Scalar::kUInt8;
    }
    return Scalar::kFloat32;
}

/// The address of a view's first element (storage offset applied); null for an undefined tensor.
inline void* ptr(const Tensor& t) {
    if (!t.defined()) return nullptr;
    return static_cast<char*>(t.impl()->storage->data) +
           t.storage_offset() * static_cast<std::int64_t>(element_size(t.dtype()));
}

/// Makes `t`'s device current for the launches that follow and checks that every other defined
/// tensor lives there too (the ops check this with the user's names; this guards the kernels).
void use_device(const Tensor& t, std::initializer_list<const Tensor*> others, const char* op);

/// N operands walked over `shape`, with the dims merged as the CPU kernels merge them.
template <int N>
Walk<N> walk_of(const Shape& shape, const std::array<const Tensor*, N>& ops, const char* op) {
    const cpu::StridedGeometry<N> geo(shape, ops);
    Walk<N> w;
    w.numel = shape.numel();
    const auto nd = static_cast<int>(geo.sizes.size());
    if (nd > kMaxDims)
        detail::fail(op, "the CUDA kernels walk at most " + std::to_string(kMaxDims) +
                             " dimensions after merging, and the tensors of shape " + to_string(shape) + " need " +
                             std::to_string(nd) + "; make them contiguous first");
    w.ndim = nd;
    bool contiguous = nd == 1;
    for (int d = 0; d < nd; ++d) {
        w.sizes[d] = geo.sizes[static_cast<std::size_t>(d)];
        for (int k = 0; k < N; ++k) {
            w.strides[k][d] = geo.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
            contiguous = contiguous && w.strides[k][d] == 1;
        }
    }
    w.contiguous = contiguous;
    return w;
}

}  // namespace xgrad::kernels::cuda
