// CPU matrix products (the matmul kernel) and the BLAS thread count.
#pragma once

#include "xgrad/tensor.hpp"

namespace xgrad::kernels::cpu {

/// out (..., n, m) = beta * out + a (..., n, k) · b (..., k, m); batch dims already broadcast.
void matmul(const Tensor& a, const Tensor& b, const Tensor& out, double beta);

/// Sets the threads the BLAS library uses (xgrad::set_num_threads calls it).
void set_blas_threads(int n);

}  // namespace xgrad::kernels::cpu
