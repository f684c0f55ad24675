// CPU matrix products (gemm, gemv, dot) on OpenBLAS, called as PyTorch 1.13's CPU kernels call it.
#pragma once

#include "kernels/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad::kernels::cpu {

/// `out` (..., n, m) = `a` (..., n, k) · `b` (..., k, m) + `beta` · `out`, for float32, float64 and int64;
/// with `t.a` (`t.b`), `a` (`b`) is read transposed: its last two dims swapped, as by a view.
///
/// `out` is contiguous; `a` and `b` already have its batch shape (batch strides may be 0, from
/// expand) and any strides in their last two dims: a row- or column-major matrix goes to BLAS as
/// it is, with a transpose flag, and anything else is copied first. 2-D operands run as PyTorch's
/// mm/addmm (one BLAS gemm); batched ones as its bmm (per matrix, a plain loop below 400
/// multiply-adds, else a gemm). `beta` is 0 (`out` is only written) or 1 (addmm: `out` holds the bias).
void matmul(const Tensor& a, const Tensor& b, const Tensor& out, double beta = 0.0, Transpose t = {});

/// `matmul`, with every product of a batch on one thread (OpenBLAS told to use one) and the batch split
/// between xgrad's threads: for many small products (convolution's, one per image), where OpenBLAS's
/// own threads would cost more than they save. The bits are those of one thread, whatever the count
/// (while no other thread of the program makes a product at the same time: OpenBLAS's thread count
/// is one setting for the whole process).
void matmul_batch_parallel(const Tensor& a, const Tensor& b, const Tensor& out, double beta = 0.0, Transpose t = {});

/// True when `matmul` sums small products (k < 8, at most 512 multiply-adds) itself, without calling
/// BLAS: the instruction set in use has FMA and OpenBLAS runs a kernel whose sums xgrad knows to
/// reproduce bit for bit (Haswell, Zen, SkylakeX, Cooperlake). Either way the results are the same.
bool small_products_in_use();

/// `out` (n, contiguous) = `a` (n, k) · `x` (k), as PyTorch's mv (BLAS gemv).
void mv(const Tensor& a, const Tensor& x, const Tensor& out);

/// `out` (0-dim) = `a` (k) · `b` (k), as PyTorch's dot (BLAS dot).
void dot(const Tensor& a, const Tensor& b, const Tensor& out);

/// Gives OpenBLAS's own thread pool `n` threads. The kernels above also follow xgrad's thread count
/// (xgrad::set_num_threads, OMP_NUM_THREADS by default) by themselves: with as many threads as
/// PyTorch's OpenBLAS has (it reads OMP_NUM_THREADS too), large products come out as PyTorch's bit
/// for bit; with another count, OpenBLAS splits the work differently and some sums round differently.
void set_blas_threads(int n);

}  // namespace xgrad::kernels::cpu
