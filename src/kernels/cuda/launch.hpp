// The CUDA kernels' launchers, on plain device pointers, sizes and strides: the .cu files include
// only this (and the runtime's declarations), so nvcc never compiles xgrad's headers. The tensor
// side (checks, dtypes, merging dims) is in backend.cpp; each launcher returns once its kernels are
// queued on the device's stream.
//
// Pointers point at a view's first element (storage offset applied). Sizes and strides are in
// elements. Every launcher does nothing for an empty tensor.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ops.hpp"

namespace xgrad::kernels::cuda {

/// An element type as the kernels see it (xgrad::DType, without its header).
enum class Scalar : std::uint8_t { kFloat32, kFloat64, kInt64, kBool, kInt32, kUInt8 };

/// Dimensions a strided walk handles after merging (more throws on the tensor side).
inline constexpr int kMaxDims = 16;

/// N operands walked over one shape in row-major order (dims merged where every operand allows),
/// passed to kernels by value. Element i of the walk is at `Σ_d idx_d(i) * strides[k][d]` in
/// operand k. `contiguous`: every stride is that of a dense row-major array, so element i is at i.
template <int N>
struct Walk {
    std::int64_t numel = 0;
    int ndim = 0;
    bool contiguous = false;
    std::int64_t sizes[kMaxDims] = {};
    std::int64_t strides[N][kMaxDims] = {};
};

// ---- elementwise.cu: out (contiguous) = op(x[, y]) --------------------------------------------------
void unary(UnaryOp op, Scalar t, const void* x, void* out, const Walk<1>& walk, double a, double b);
void binary(BinaryOp op, Scalar t, const void* x, const void* y, void* out, const Walk<2>& walk, double a, double b);
/// out = lerp(self, end, weight) (kernels::Backend::lerp); the walk's operands are (self, end, weight).
void lerp(Scalar t, const void* self, const void* end, const void* weight, void* out, const Walk<3>& walk);

// ---- copy.cu ------------------------------------------------------------------------------------
/// dst (operand 0 of the walk) = src (operand 1), converted from `src_t` to `dst_t`.
void copy(Scalar dst_t, void* dst, Scalar src_t, const void* src, const Walk<2>& walk);
/// Every element of dst (operand 0) = value.
void fill(Scalar t, void* dst, const Walk<1>& walk, double value);
/// dst[i] += alpha * src[i] for i < n.
void axpy(Scalar t, void* dst, const void* src, std::int64_t n, double alpha);
/// dst[i] = fma(a[i], b[i], dst[i]) for floating t (kernels::Backend::addcmul).
void addcmul(Scalar t, void* dst, const void* a, const void* b, std::int64_t n);

// ---- reduce.cu: `rows` results over `width` elements of contiguous `in` ---------------------------
// (in is rows × width, or width × rows when `outer`)
/// Row (or, with `outer`, column) sums of `in`, of element type `in_t`, into `out` of type `t`: the
/// same type, or int64 for bool, uint8 and int32 input (read in place).
void sum_rows(Scalar in_t, Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, bool outer,
              bool mean);
/// out[r] = the variance of row r (its square root with `take_sqrt`), and mean[r] its mean when `mean`
/// is not null (var_mean).
void var_rows(Scalar t, const void* in, void* out, void* mean, std::int64_t rows, std::int64_t width, double correction,
              bool take_sqrt);
/// out[r] = the p-norm of row r (kernels::Backend::norm_rows), a thread per row in the CPU's order.
void norm_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, double p, bool lanes);
void extreme_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, bool max);
/// values[r], indices[r] = the extreme of row r and its first index (the first NaN wins).
void arg_extreme_rows(Scalar t, const void* in, void* values, void* indices, std::int64_t rows, std::int64_t width,
                      bool max);
void prod_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width);
/// out (rows × width) = running sums (or products) of each row, from its end when `reverse`.
void scan_rows(Scalar t, const void* in, void* out, std::int64_t rows, std::int64_t width, bool prod, bool reverse);

// ---- sort.cu: rows × width contiguous ----------------------------------------------------------------
/// The first k of each row in order (values, int64 indices: rows × k), ties by index, NaN largest.
void sort_rows(Scalar t, const void* in, void* values, void* indices, std::int64_t rows, std::int64_t width,
               std::int64_t k, bool descending);
/// dx[r, indices[r, j]] += grad[r, j] (grad and indices rows × k, dx rows × width).
void scatter_rows(Scalar t, const void* grad, const void* indices, void* dx, std::int64_t rows, std::int64_t width,
                  std::int64_t k);

// ---- norm.cu: rows × width contiguous; weight and bias may be null ------------------------------------
void layer_norm_forward(Scalar t, const void* x, const void* weight, const void* bias, double eps, void* out,
                        void* mean, void* rstd, std::int64_t rows, std::int64_t width);
void layer_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* mean,
                         const void* rstd, void* dx, void* dweight, void* dbias, std::int64_t rows, std::int64_t width,
                         int device);
void rms_norm_forward(Scalar t, const void* x, const void* weight, double eps, void* out, void* rstd, std::int64_t rows,
                      std::int64_t width);
void rms_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* rstd, void* dx,
                       void* dweight, std::int64_t rows, std::int64_t width, int device);
/// BatchNorm's forward over (n, channels, image) elements, one block per channel (kernels::Backend's
/// batch_norm_forward); rm and rv may be null (no running statistics to update).
void batch_norm_forward(Scalar t, const void* x, const void* weight, const void* bias, void* rm, void* rv,
                        bool training, double momentum, double eps, void* out, void* save_mean, void* save_invstd,
                        std::int64_t n, std::int64_t channels, std::int64_t image);
/// Its backward (kernels::Backend's batch_norm_backward); dx, dw and db may each be null.
void batch_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* mean,
                         const void* invstd, bool training, double eps, void* dx, void* dw, void* db, std::int64_t n,
                         std::int64_t channels, std::int64_t image);
/// GroupNorm's forward over (n, channels, image) elements in `groups` groups (kernels::Backend's
/// group_norm_forward); weight and bias may be null.
void group_norm_forward(Scalar t, const void* x, const void* weight, const void* bias, double eps, void* out,
                        void* mean, void* rstd, std::int64_t n, std::int64_t channels, std::int64_t image,
                        std::int64_t groups);
/// Its backward (kernels::Backend's group_norm_backward); dx, dw and db may each be null.
void group_norm_backward(Scalar t, const void* grad, const void* x, const void* weight, const void* mean,
                         const void* rstd, void* dx, void* dw, void* db, std::int64_t n, std::int64_t channels,
                         std::int64_t image, std::int64_t groups, int device);
/// cdist's direct kernel over (batch, r1, m) and (batch, r2, m) rows (kernels::Backend's cdist_forward).
void cdist_forward(Scalar t, const void* a, const void* b, double p, void* out, std::int64_t batch, std::int64_t r1,
                   std::int64_t r2, std::int64_t m);
/// Its backward for a (kernels::Backend's cdist_backward).
void cdist_backward(Scalar t, const void* grad, const void* a, const void* b, double p, const void* dist, void* out,
                    std::int64_t batch, std::int64_t r1, std::int64_t r2, std::int64_t m);

// ---- softmax.cu: over rows of `width` contiguous elements ---------------------------------------------
void softmax_rows(Scalar t, const void* x, void* out, std::int64_t rows, std::int64_t width, bool log);
void softmax_backward_rows(Scalar t, const void* grad, const void* out, void* dx, std::int64_t rows, std::int64_t width,
                           bool log);
/// nll_loss over x (n, c, l) and targets (n·l) (kernels::Backend::nll_loss_forward); total_weight is
/// null when not `reduce`. Returns the first out-of-range target's position, or -1 (one sync).
std::int64_t nll_loss_forward(Scalar t, const void* x, const std::int64_t* target, const void* weight, std::int64_t n,
                              std::int64_t c, std::int64_t l, std::int64_t ignore_index, bool reduce, bool mean,
                              void* out, double* total_weight, int device);
/// Its backward into dx (n, c, l), zeroed by the caller.
void nll_loss_backward(Scalar t, const void* grad, const std::int64_t* target, const void* weight, std::int64_t n,
                       std::int64_t c, std::int64_t l, std::int64_t ignore_index, bool reduce, bool mean,
                       const double* total_weight, void* dx);

// ---- optim.cu -----------------------------------------------------------------------------------------
/// One parameter's Adam update: n contiguous elements of each; max_exp_avg_sq is null without amsgrad.
struct AdamPointers {
    void* param;
    const void* grad;
    void* exp_avg;
    void* exp_avg_sq;
    void* max_exp_avg_sq;
    std::int64_t n;
};
/// One Adam step on each of `count` parameters (one dtype; amsgrad for all or none), many per launch.
void adam_step(Scalar t, const AdamPointers* params, std::size_t count, const AdamStep& s);
/// One parameter's SGD update: n contiguous elements of each; momentum_buffer is null without momentum.
struct SgdPointers {
    void* param;
    const void* grad;
    void* momentum_buffer;
    std::int64_t n;
};
/// One SGD step on each of `count` parameters (one dtype; momentum buffers for all or none), many per
/// launch.
void sgd_step(Scalar t, const SgdPointers* params, std::size_t count, const SgdStep& s);

// ---- index.cu: operands of the walk are (out or dst, src, index), over index's shape -------------------
/// out[i] = src[at(i) + index[i] * stride] (kernels::Backend::gather).
void gather(Scalar t, const void* src, const std::int64_t* index, std::int64_t stride, void* out, const Walk<3>& walk);
/// dst[at(i) + index[i] * stride] = src[i], or += atomically when `accumulate`.
void scatter(Scalar t, void* dst, const std::int64_t* index, std::int64_t stride, const void* src, const Walk<3>& walk,
             bool accumulate);
/// searchsorted (kernels::Backend::search_sorted): out[i] for each of the rows × n values, searched in
/// row i / n of `sorted` (rows × m; its one row when `shared`); int32 indices when `out_int32`.
void search_sorted(Scalar t, const void* sorted, const void* values, void* out, std::int64_t rows, std::int64_t m,
                   std::int64_t n, bool shared, bool right, bool out_int32);
// ---- conv.cu: images (n, channels, height, width) or planes (planes, height, width), contiguous --------
void im2col(Scalar t, const void* x, void* cols, const Window2d& g, std::int64_t n);
void col2im(Scalar t, const void* cols, void* dx, const Window2d& g, std::int64_t n);
void max_pool2d(Scalar t, const void* x, void* out, void* indices, const Window2d& g, std::int64_t planes);
void max_pool2d_backward(Scalar t, const void* grad, const void* indices, void* dx, const Window2d& g,
                         std::int64_t planes);
void avg_pool2d(Scalar t, const void* x, void* out, const Window2d& g, std::int64_t planes);
void avg_pool2d_backward(Scalar t, const void* grad, void* dx, const Window2d& g, std::int64_t planes);

// ---- compare.cu: out (bool, contiguous) = op(x, y), x and y of one compute type -----------------------
void compare(CompareOp op, Scalar t, const void* x, const void* y, bool* out, const Walk<2>& walk);
// ---- mask.cu: operands of the walk are (out, cond, x, y), over out's shape ------------------------------
/// out[i] = cond[i] ? x[i] : y[i] (kernels::Backend::where).
void where(Scalar t, const bool* cond, const void* x, const void* y, void* out, const Walk<4>& walk);

}  // namespace xgrad::kernels::cuda
