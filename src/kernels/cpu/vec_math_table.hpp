// The per-instruction-set function table behind vec_math.hpp, shared by vec_math.cpp (which picks
// one at run time) and the vec_math_<arch>.cpp files (each compiled with its own -m flags).
#pragma once

#include <cstdint>

#include "kernels/cpu/vec_math.hpp"  // AdamCoefficients

namespace xgrad::kernels::cpu::detail {

/// The one-input kernels, in the order of VecMathKernels::unary.
enum Unary : int {
    kExp,
    kLog,
    kTanh,
    kSigmoid,
    kErf,
    kGelu,
    kGeluTanh,
    kSqrt,
    kRsqrt,
    kRelu,
    kSilu,
    kLog1p,
    kMish,
    kLogSigmoid,
    kLog2,
    kLog10,
    kExpm1,
    kSin,
    kCos,
    kTan,
    kAtan,
    kAsin,
    kAcos,
    kSinh,
    kCosh,
    kGeluErf,
    kUnaryCount
};
/// The two-input arithmetic kernels (vec_math.hpp's Arith), in the order of VecMathKernels::arith.
enum ArithKernel : int {
    kArithAdd,
    kArithSub,
    kArithMul,
    kArithDiv,
    kArithReluBackward,
    kArithTanhBackward,
    kArithSigmoidBackward,
    kArithMaximum,
    kArithMinimum,
    kArithCount
};
/// The two-input (gradient, input) kernels, in the order of VecMathKernels::backward.
enum Backward : int {
    kGeluBackward,
    kGeluTanhBackward,
    kSiluBackward,
    kMishBackward,
    kLogSigmoidBackward,
    kGeluErfBackward,
    kGlu,
    kGluBackwardFirst,
    kGluBackwardSecond,
    kLogAddExp,
    kLogAddExp2,
    kBackwardCount
};

/// One instruction set's kernels for element type T.
template <typename T>
struct VecMathKernels {
    void (*unary[kUnaryCount])(const T* x, T* y, std::int64_t n);
    void (*backward[kBackwardCount])(const T* g, const T* x, T* dx, std::int64_t n);
    void (*arith[kArithCount])(const T* a, const T* b, T* y, std::int64_t n, bool stream);
    void (*scalar_map[kScalarMapCount])(const T* x, T a, T b, T* y, std::int64_t n, bool stream);
    // vec_math.hpp's varith_rows, by op (kArithAdd to kArithDiv) and RowOperands.
    void (*arith_rows[4][3])(const T* x, std::int64_t x_row, const T* y, std::int64_t y_row, T* out, std::int64_t n,
                             std::int64_t rows);
    void (*grad_map[kGradMapCount])(const T* g, const T* x, T a, T b, T* y, std::int64_t n, bool stream);
    // One tap of max pooling over a row of windows (vec_math.hpp's max_pool_taps); indices of T's width.
    void (*max_pool_taps)(const T* x, std::int64_t stride, std::int64_t count, std::int64_t at, T* m,
                          std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>* best);
    // The ELU family (vec_math.hpp's velu and velu_backward).
    void (*elu)(const T* x, T* y, std::int64_t n, T pos, T neg, T input_scale);
    void (*elu_backward)(const T* g, const T* x, T* dx, std::int64_t n, T pos, T neg, T input_scale);
    void (*pow)(const T* x, T e, T* y, std::int64_t n);                ///< general exponent (no special cases)
    void (*pow_tensor)(const T* x, const T* e, T* y, std::int64_t n);  ///< an exponent per element
    void (*atan2)(const T* y, const T* x, T* out, std::int64_t n);     ///< SLEEF's atan2, element by element
    // LayerNorm/RMSNorm rows (vec_math.hpp's norm_* and *_norm_row_backward functions; w and b may be null).
    void (*norm_moments_rows)(const T* const* x, int rows, std::int64_t n, T* mean, T* m2);  // 1 to 4 rows
    // Sums in PyTorch's reduce_all order (vec_math.hpp's lanes_sum and lanes_dot).
    T (*lanes_sum)(const T* x, std::int64_t n);
    T (*lanes_dot)(const T* a, const T* b, std::int64_t n);
    T (*norm_row)(const T* x, std::int64_t n, T p, bool lanes);  // vec_math.hpp's norm_row
    // PyTorch's lerp (vec_math.hpp's vlerp); a * b + c (vec_math.hpp's vmla).
    void (*lerp)(const T* a, const T* b, const T* w, std::int64_t w_step, T* y, std::int64_t n);
    void (*mla)(const T* a, const T* b, const T* c, T* y, std::int64_t n);
    // vec_math.hpp's softmax_rows and softmax_backward_rows.
    void (*softmax_rows)(const T* x, T* y, std::int64_t rows, std::int64_t n, bool log);
    void (*softmax_backward_rows)(const T* g, const T* o, T* dx, std::int64_t rows, std::int64_t n, bool log);
    void (*select)(const bool* c, const T* a, std::int64_t a_step, const T* b, std::int64_t b_step, T* y,
                   std::int64_t n);  // vec_math.hpp's vselect
    void (*compare[6])(const T* a, std::int64_t a_step, const T* b, std::int64_t b_step, bool* y,
                       std::int64_t n);                                       // vec_math.hpp's vcompare, by Compare
    std::int64_t (*row_extreme_index)(const T* x, std::int64_t n, bool max);  // vec_math.hpp's row_extreme_index
    // A cascade sum in PyTorch's order (vec_math.hpp's sum_cascade).
    void (*sum_cascade)(const T* x, std::int64_t rows, std::int64_t stride, int power, T* out, bool square);
    // Sums of contiguous rows in PyTorch's order (vec_math.hpp's sum_rows_serial).
    void (*sum_rows_serial)(const T* x, std::int64_t rows, std::int64_t n, T* out, bool square);
    // Rows' means and squared deviations in double (vec_math.hpp's var_rows).
    void (*var_rows)(const T* x, std::int64_t rows, std::int64_t n, double* mean, double* m2, std::int64_t ahead);
    // Σ (x - c)² in double (vec_math.hpp's sq_dev_sum).
    double (*sq_dev_sum)(const T* x, std::int64_t n, double c);
    // PyTorch's Welford pass along rows (vec_math.hpp's welford_rows).
    void (*welford_rows)(const T* x, std::int64_t rows, std::int64_t n, double* mean, double* m2);
    // A small matrix product, sums in order with fused multiply-adds (vec_math.hpp's small_gemm);
    // null where the instruction set has no FMA.
    void (*small_gemm)(const T* a, std::int64_t ars, std::int64_t acs, const T* b, std::int64_t brs, std::int64_t bcs,
                       T* c, std::int64_t n, std::int64_t m, std::int64_t k, bool accumulate);
    void (*norm_apply)(const T* x, T scale, T shift, const T* w, const T* b, T* y, std::int64_t n, bool stream,
                       std::int64_t ahead, bool plus_zero);
    void (*layer_norm_row_backward)(const T* g, const T* x, const T* w, T rstd, T mean, T* dx, T* acc_w, T* acc_b,
                                    std::int64_t n, bool stream, std::int64_t ahead);
    void (*layer_norm_rows_backward)(const T* g, const T* x, const T* w, const T* rstd, const T* mean, T* dx, T* acc_w,
                                     T* acc_b, std::int64_t n, std::int64_t rows, bool stream, std::int64_t ahead);
    void (*rms_norm_row_terms)(const T* g, const T* x, const T* w, T rstd, T* quad_sums, T* acc, T* acc_rest,
                               std::int64_t cut, std::int64_t n);
    void (*rms_norm_row_dx)(const T* g, const T* x, const T* w, T rstd, T dms, T* dx, std::int64_t n, bool stream,
                            std::int64_t ahead);
    // GroupNorm's backward rows (vec_math.hpp's lanes_fma_sums and group_norm_row_dx).
    void (*lanes_fma_sums)(const T* a, const T* b, std::int64_t n, T* acc_ab, T* acc_a);
    void (*group_norm_row_dx)(const T* g, const T* x, T c1, T c2, T c3, T* dx, std::int64_t n);
    // One row of BatchNorm's training backward (vec_math.hpp's batch_norm_row_dx).
    void (*batch_norm_row_dx)(const T* g, const T* x, T mean, T k, T grad_mean, T invstd, T w, T* dx, std::int64_t n);
    // Distances from one row to columns of a transposed input, p = 1 or 2 (vec_math.hpp's cdist_forward_row).
    void (*cdist_forward_row)(const T* x, const T* yt, std::int64_t stride, std::int64_t count, std::int64_t m, int p,
                              std::int64_t apart, T* out);
    // One row of cdist's backward for p = 1 or 2 (vec_math.hpp's cdist_backward_row).
    void (*cdist_backward_row)(const T* x, const T* y, const T* g, const T* dist, std::int64_t rows, std::int64_t m,
                               int p, T* res);
    // Adam's update of n elements (vec_math.hpp's adam_update; vmax null without amsgrad).
    void (*adam)(T* p, const T* g, T* m, T* v, T* vmax, const AdamCoefficients<T>& c, std::int64_t n);
    // SGD's update and y += a·x (vec_math.hpp's sgd_update and axpy).
    void (*sgd)(T* p, const T* g, T* buf, const SgdCoefficients<T>& c, std::int64_t n);
    void (*axpy)(T* y, const T* x, T a, std::int64_t n);
};

/// One instruction set's kernels for both element types.
struct VecMathTable {
    const char* name;
    VecMathKernels<float> f32;
    VecMathKernels<double> f64;
};

/// xsimd::dispatch's functor: `table_for(Arch{})` is Arch's table. Its operator() is explicitly
/// instantiated once per arch, each in the translation unit compiled for that arch.
struct TableFor {
    /// The table of kernels compiled for Arch.
    template <class Arch>
    const VecMathTable* operator()(Arch) const noexcept;
};

}  // namespace xgrad::kernels::cpu::detail
