// The products torch.matmul and F.linear are made of (dot, mv, mm, addmm), unrecorded, with
// PyTorch's backward formulas for them; shared by src/linalg.cpp and src/nn/functional.cpp.
#pragma once

#include <vector>

#include "detail/tensor_impl.hpp"
#include "kernels/ops.hpp"

namespace xgrad::detail {

/// `a` (n, k) · `b` (k, m), as PyTorch's mm; with `t.a` (`t.b`) the product reads `a` (`b`) transposed,
/// as mm(a.t(), b) would, without the view.
Tensor mm(const Tensor& a, const Tensor& b, kernels::Transpose t = {});

/// `bias` (m) + `a` (n, k) · `b` (k, m), as PyTorch's addmm: the bias is copied into the output and
/// BLAS adds the product to it (beta = 1), so k-blocks after the first accumulate onto the bias.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);

/// The gradients of mm(a, b) for the output gradient `g`, as PyTorch's mm_mat1_backward and
/// mm_mat2_backward compute them (undefined where not needed).
GradList mm_backward(const Tensor& g, const Tensor& a, const Tensor& b, bool need_a, bool need_b);

/// torch.matmul(a, b) for operands of one dtype, unrecorded, and the function from its output's
/// gradient to the gradients of `a` and `b` (inputs 0 and 1 of its NeedsGrad): both reduced to
/// PyTorch 1.13's dot, mv, mm or bmm.
struct Product {
    Tensor out;
    BackwardFn backward;
};
Product matmul_product(const Tensor& a, const Tensor& b);

}  // namespace xgrad::detail
