// The one interface between ops and arithmetic: ops (forward and backward closures) call these,
// and each call goes to the kernels of the output's device. A device is a table of plain function
// pointers (Backend); `cpu/` fills one now, `cuda/` fills another when built. Adding a device adds
// one file per kernel group and never touches an op's autograd code.
//
// Contract shared by every kernel: outputs are allocated by the caller (contiguous, on the device,
// of the right dtype and shape); inputs may be any strided view (broadcast dims have stride 0) of
// the same device; kernels never record autograd and never allocate tensors the caller sees.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ops.hpp"
#include "xgrad/tensor.hpp"

namespace xgrad::kernels {

/// How a reduction sees its input: `rows` results, each over `width` elements of `input`, which is
/// contiguous with the reduced elements last (or first, as (width, rows), when `outer`).
struct RowsView {
    Tensor input;
    std::int64_t rows = 1, width = 1;
    bool outer = false;
    /// For sums over reduced dims that do not merge into one run of memory (dims 0 and 2 of a
    /// contiguous tensor): each row is slices of `slice` elements (the innermost run), which PyTorch
    /// sums one by one and adds up in order. 0: the row is one run. `strided_slices`: that run is not
    /// contiguous in the input, so PyTorch sums each slice with scalar code. Only the CPU's sum_rows
    /// follows slices, of an `in_place` view; other kernels and devices take the row whole.
    std::int64_t slice = 0;
    bool strided_slices = false;
    /// sum_rows, prod_rows and var_rows (with one result): `input` is not contiguous but a view of the
    /// reduction's input (any strides), its `row_dims` leading dims indexing the rows (row-major) and the
    /// reduced dims following in the order of the row's elements; the CPU reads it in place, other
    /// devices make it contiguous.
    bool in_place = false;
    int row_dims = 0;
    /// With `outer`: the input is `batches` blocks of (width × rows / batches) one after another, each
    /// summed down its columns: a sum over middle dims of a contiguous tensor, in PyTorch's order (its
    /// TensorIterator runs the reduced dims and the kept inner dims as one 2-D loop per outer index).
    /// Only sum_rows takes batches; the CPU reads them in place, other devices a transposed copy.
    std::int64_t batches = 1;
    /// With `in_place`, when the reduction's input is not contiguous (permuted, strided, or repeating
    /// elements through a stride of 0, as expand() makes): view dim i is the input's dim source_dims[i].
    /// The CPU then reads the input in place in the order PyTorch's TensorIterator picks for its strides
    /// (which depends on the input's own dim order); other devices ignore it. Empty otherwise.
    Strides source_dims{};
    /// With source_dims: the result keeps the reduced dims (keepdim), so that a reduced dim of size 1
    /// keeps a stride in PyTorch's result and its TensorIterator sorts it as a kept one.
    bool keepdim = false;
};

/// How sort_rows orders equal values. PyTorch's CPU results come from libstdc++'s algorithms on
/// (value, index) pairs compared by value alone, so an order other than index order is still a
/// fixed function of the row: the CPU kernel runs the same algorithms and gets PyTorch's indices.
enum class TieOrder {
    kIndex,         ///< index order, a stable sort: `sort(stable=true)`
    kSort,          ///< PyTorch's sort: std::sort of the whole row
    kTopk,          ///< PyTorch's topk: std::partial_sort when 64 k <= width, else std::nth_element
                    ///< at k - 1 and std::sort of the k - 1 before it
    kTopkUnsorted,  ///< PyTorch's topk(sorted=false): as kTopk, without that std::sort
    kSelect,        ///< PyTorch's kthvalue: its quickselect (Sedgewick's) puts the k-th alone in place
    kRank,          ///< the k-th by value, then index (the stable sort's k-th), alone in place: median
};

/// One parameter's tensors for adam_step: the parameter and its gradient (same dtype, both
/// contiguous) and its state; `max_exp_avg_sq` is defined with amsgrad.
struct AdamTensors {
    Tensor param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;
};

/// One parameter's tensors for sgd_step: the parameter and its gradient (same dtype, both
/// contiguous) and its momentum buffer (contiguous), defined with momentum.
struct SgdTensors {
    Tensor param, grad, momentum_buffer;
};

/// The kernels of one device.
struct Backend {
    void (*unary)(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b);
    void (*binary)(BinaryOp op, const Tensor& x, const Tensor& y, const Tensor& out, double a, double b);
    /// out (contiguous, floating) = PyTorch 1.13's lerp of self, end and weight, strided views of out's
    /// shape and dtype (broadcast dims have stride 0): weight < 0.5 ? self + weight (end - self) :
    /// end - (end - self)(1 - weight), each a fused multiply-add where the device has FMA.
    void (*lerp)(const Tensor& self, const Tensor& end, const Tensor& weight, const Tensor& out);
    /// `dst` (any strides, same shape) = `src` converted to dst's dtype. Either may be on the CPU
    /// when the other is on this device: copies between the host and a device are this device's.
    void (*copy)(const Tensor& src, const Tensor& dst);
    void (*fill)(const Tensor& dst, double value);
    /// `dst += alpha * src`, same shape, both contiguous (gradient accumulation, optimizers).
    void (*axpy)(const Tensor& dst, const Tensor& src, double alpha);
    /// `dst += a * b` elementwise, one rounding where the device has FMA (PyTorch's addcmul_ once its
    /// value has scaled a); floating, same shape and dtype, all contiguous.
    void (*addcmul)(const Tensor& dst, const Tensor& a, const Tensor& b);

    /// Sums (or means) of each row, in PyTorch's order for floating types; `out` has `rows` elements,
    /// of the input's dtype, or int64 for an integer input (bool, uint8 and int32 are read in place).
    void (*sum_rows)(const RowsView& v, const Tensor& out, bool mean);
    /// Variance of each row with `correction` (1 unbiased, 0 biased), its square root when `take_sqrt`;
    /// each row's mean into `mean` when it is defined (var_mean). The CPU takes PyTorch 1.13's CPU
    /// algorithms where they decide the bits: a Welford pass in double for var_mean and for float64
    /// results over rows (more than one), a two-pass sum for one float64 result.
    void (*var_rows)(const RowsView& v, const Tensor& out, const Tensor& mean, double correction, bool take_sqrt);
    /// The p-norm of each row (rows × width, not `outer`) for a finite p other than 0, in PyTorch 1.13's
    /// order: along the row in the dtype, Σ|x|^p then its 1/p-th power (|x| for p = 1, a fused x·x + s
    /// and a square root for p = 2). `lanes` (float32, p = 2): PyTorch's fast path for the innermost
    /// dims, eight running sums of every eighth element, added in order, then the rest.
    void (*norm_rows)(const RowsView& v, const Tensor& out, double p, bool lanes);
    /// Largest (or smallest) element of each row (of each column of an `outer` view); NaN propagates.
    void (*extreme_rows)(const RowsView& v, const Tensor& out, bool max);
    /// Largest (or smallest) element of each row and the int64 index of its first occurrence, as
    /// PyTorch's max(dim); a NaN wins, and the first NaN's index is taken.
    void (*arg_extreme_rows)(const RowsView& v, const Tensor& values, const Tensor& indices, bool max);
    /// Product of each row (1 for an empty row; of each column of an `outer` view, element by element). With `lanes`,
    /// in the order of PyTorch's CPU reduction over a contiguous innermost dim (vector lanes, then the rest one by
    /// one); else element by element, as its reduction over an outer dim. Other devices may multiply in their own
    /// order.
    void (*prod_rows)(const RowsView& v, const Tensor& out, bool lanes);
    /// Inclusive running sum (or product) along each row into `out` (rows × width), from the row's
    /// end when `reverse`; down each column of an `outer` view into `out` of the same layout.
    void (*scan_rows)(const RowsView& v, const Tensor& out, bool prod, bool reverse);
    /// The first `k` elements of each row in ascending (or descending) order, NaN above everything,
    /// ties as `ties` says (the CPU's; the CUDA kernel keeps them in index order): values and int64
    /// indices (rows × k).
    void (*sort_rows)(const RowsView& v, const Tensor& values, const Tensor& indices, std::int64_t k, bool descending,
                      TieOrder ties);
    /// dx (rows × width, contiguous, zeroed by the caller) at indices[r, j] += grad[r, j] (rows × k);
    /// the indices of a row are distinct.
    void (*scatter_rows)(const Tensor& grad, const Tensor& indices, const Tensor& dx);

    /// out (..., n, m) = beta * out + op(a) (..., n, k) · op(b) (..., k, m), with op(t) t's last two
    /// dims swapped where `t` says so; batch dims already broadcast, transposed operands read through
    /// their strides (PyTorch's mm/addmm/bmm).
    void (*matmul)(const Tensor& a, const Tensor& b, const Tensor& out, double beta, Transpose t);
    /// matmul for a batch of products whose bits need not be PyTorch's (convolution's): the CPU runs
    /// each product on one thread and splits the batch between threads, so the bits do not depend on
    /// the thread count, and many small products keep every thread busy. Other devices: matmul.
    void (*matmul_batch_parallel)(const Tensor& a, const Tensor& b, const Tensor& out, double beta, Transpose t);
    /// out (n) = a (n, k) · x (k), as PyTorch's mv.
    void (*mv)(const Tensor& a, const Tensor& x, const Tensor& out);
    /// out (0-d) = a (k) · b (k), as PyTorch's dot.
    void (*dot)(const Tensor& a, const Tensor& b, const Tensor& out);

    /// LayerNorm over rows of x (rows × width, contiguous): out, and per-row mean and rstd.
    void (*layer_norm_forward)(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                               const Tensor& mean, const Tensor& rstd);
    /// Its backward: writes each defined one of dx, dweight, dbias.
    void (*layer_norm_backward)(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                const Tensor& rstd, const Tensor& dx, const Tensor& dweight, const Tensor& dbias);
    void (*rms_norm_forward)(const Tensor& x, const Tensor& weight, double eps, const Tensor& out, const Tensor& rstd);
    void (*rms_norm_backward)(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                              const Tensor& dx, const Tensor& dweight);
    /// BatchNorm over x (N, C, *), contiguous, per channel: in training, the batch's mean and inverse
    /// standard deviation 1 / sqrt(var + eps) (biased variance) into save_mean and save_invstd (C), and
    /// running_mean and running_var (C, contiguous, x's dtype; each may be undefined) updated in place
    /// with `momentum` (the unbiased variance); in evaluation, save_mean and save_invstd from the
    /// running statistics. Then out = x · invstd·w + (b - mean·invstd·w). weight and bias may be
    /// undefined. The CPU's numbers are PyTorch 1.13's CPU kernel's (cpu/batch_norm.cpp).
    void (*batch_norm_forward)(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                               const Tensor& save_mean, const Tensor& save_invstd);
    /// Its backward, grad and x contiguous: writes each defined one of dx (x's shape), dweight and
    /// dbias (C). In training, mean and invstd are the forward's save_mean and save_invstd; in
    /// evaluation, mean is the running mean and invstd holds the running variance (the kernel takes
    /// 1 / sqrt(var + eps) of it, in double as PyTorch's backward does).
    void (*batch_norm_backward)(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                const Tensor& invstd, bool training, double eps, const Tensor& dx,
                                const Tensor& dweight, const Tensor& dbias);
    /// GroupNorm over x (N, C, *), contiguous, in `groups` groups of C / groups channels: per (sample,
    /// group) the mean and 1 / sqrt(var + eps) (biased variance) into mean and rstd (N·groups), and
    /// out = x·scale + bias per channel, scale = rstd·w and bias = -scale·mean + b (without weight and
    /// bias, (x - mean)·rstd). The CPU's numbers are PyTorch 1.13's CPU kernel's (cpu/group_norm.cpp).
    void (*group_norm_forward)(const Tensor& x, const Tensor& weight, const Tensor& bias, std::int64_t groups,
                               double eps, const Tensor& out, const Tensor& mean, const Tensor& rstd);
    /// Its backward, grad and x contiguous: writes each defined one of dx (x's shape), dweight and
    /// dbias (C).
    void (*group_norm_backward)(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                const Tensor& rstd, std::int64_t groups, const Tensor& dx, const Tensor& dweight,
                                const Tensor& dbias);
    /// torch.cdist's direct kernel (PyTorch's _cdist_forward): out (B, R1, R2) = the p-distance of each
    /// row of a (B, R1, M) to each row of b (B, R2, M), all contiguous. The CPU's numbers are PyTorch
    /// 1.13's CPU kernel's (cpu/distance.cpp).
    void (*cdist_forward)(const Tensor& a, const Tensor& b, double p, const Tensor& out);
    /// Its backward for a (PyTorch's _cdist_backward): out (B, R1, M) = Σ over b's rows of the derivative
    /// of each distance times grad (B, R1, R2), dist the forward's result; all contiguous. b's gradient
    /// is the same call with the roles swapped and grad and dist transposed.
    void (*cdist_backward)(const Tensor& grad, const Tensor& a, const Tensor& b, double p, const Tensor& dist,
                           const Tensor& out);

    /// Softmax (or log_softmax when `log`) over the last dim of contiguous x, into out.
    void (*softmax_rows)(const Tensor& x, const Tensor& out, bool log);
    /// Its backward from the forward's output: dx = out · (g - Σ g·out), or g - exp(out) Σ g for log.
    void (*softmax_backward_rows)(const Tensor& grad, const Tensor& out, const Tensor& dx, bool log);
    /// Softmax (or log_softmax) over the middle dim of contiguous x seen as (outer, dim, inner), in
    /// place of a transpose to rows and softmax_rows: the CPU's gives PyTorch's bits, whose kernel for a
    /// dim that is not last sums in another order. Null on a device without one (the op then transposes).
    void (*softmax_inner)(const Tensor& x, const Tensor& out, std::int64_t dim, std::int64_t inner, bool log);
    /// Its backward, as softmax_backward_rows's formulas over (outer, dim, inner); null with softmax_inner.
    void (*softmax_backward_inner)(const Tensor& grad, const Tensor& out, const Tensor& dx, std::int64_t dim,
                                   std::int64_t inner, bool log);
    /// nll_loss over log-probabilities x (n, c, l), contiguous, and int64 targets (n·l), contiguous,
    /// with per-class weights (c, x's dtype) or undefined (all 1): loss_i = -w[t_i]·x[n_i, t_i, l_i],
    /// 0 where t_i is ignore_index. Not `reduce`: out (n·l) holds each loss_i. `reduce`: out () holds
    /// Σ loss_i, summed in float64 (in order of i on the CPU), divided by total_weight when `mean`;
    /// total_weight () (float64) gets Σ w[t_i]. Returns the first i whose target lies outside
    /// [0, c) and is not ignore_index (nothing else is then defined), or -1.
    std::int64_t (*nll_loss_forward)(const Tensor& x, const Tensor& target, const Tensor& weight,
                                     std::int64_t ignore_index, bool reduce, bool mean, const Tensor& out,
                                     const Tensor& total_weight);
    /// Its backward: dx (n, c, l), zeroed by the caller, gets -w[t_i]·g at each target's place, with
    /// g = grad[i] when not `reduce`, else grad () (divided by total_weight when `mean`).
    void (*nll_loss_backward)(const Tensor& grad, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                              bool reduce, bool mean, const Tensor& total_weight, const Tensor& dx);

    /// One Adam/AdamW step on each of `count` parameters (one dtype and device, amsgrad for all or
    /// none) with the same coefficients, as PyTorch 1.13's single-tensor update (same operations in the
    /// same order). The GPU updates many parameters in one launch.
    void (*adam_step)(const AdamTensors* params, std::size_t count, const AdamStep& s);
    /// One SGD step on each of `count` parameters (one dtype and device, momentum buffers for all or
    /// none) with the same hyper-parameters: PyTorch 1.13's single-tensor update, each of its tensor
    /// operations done on every element in its order and dtype, in one pass. The GPU updates many
    /// parameters in one launch.
    void (*sgd_step)(const SgdTensors* params, std::size_t count, const SgdStep& s);

    // ---- indexing along one dim (index_select, index_add, x[idx], Embedding, one_hot build on these) ----
    /// out[i] = src[at(i) + index[i] * stride] for every i of index's shape (out is contiguous of
    /// that shape). `src` is a view of the source with index's shape whose stride along the indexed
    /// dim is 0, so that at(i) is the strided walk's offset, and `stride` the source's stride there.
    /// The op has checked every index.
    void (*gather)(const Tensor& src, const Tensor& index, std::int64_t stride, const Tensor& out);
    /// dst[at(i) + index[i] * stride] = src[i] (`+=` when `accumulate`) for every i of index's shape,
    /// `dst` a view of the output laid out as gather's `src`. Accumulation on the CPU is in row-major
    /// order of the index (PyTorch's); on a GPU atomic, in no fixed order.
    void (*scatter)(const Tensor& dst, const Tensor& index, std::int64_t stride, const Tensor& src, bool accumulate);
    /// searchsorted: out[r, j] = where values[r, j] goes in row r of `sorted` (row 0 for every r when
    /// `sorted` has one row), by PyTorch's binary search: the first position whose element is not below
    /// the value (with `right`, not at or below it), so NaN goes last. `sorted` (1 or rows, m) and
    /// `values` (rows, n) are contiguous of one dtype; `out` (rows, n) is contiguous int64 or int32.
    void (*search_sorted)(const Tensor& sorted, const Tensor& values, const Tensor& out, bool right);
    // ---- convolution and pooling (conv.cpp / conv.cu) ----
    /// x (N, channels, height, width) contiguous → cols (N, channels·kernel_h·kernel_w, out_h·out_w),
    /// zeros where the window reads padding (PyTorch's im2col / unfolded2d order).
    void (*im2col)(const Tensor& x, const Tensor& cols, const Window2d& w);
    /// The adjoint of im2col: dx (N, channels, height, width) = Σ of the columns over the windows
    /// that read each element (dx is overwritten). cols is scratch: a kernel may overwrite it.
    void (*col2im)(const Tensor& cols, const Tensor& dx, const Window2d& w);
    /// Max pooling of x (planes, height, width) contiguous: out and indices (planes, out_h, out_w),
    /// indices flat in the input plane (h·width + w), padding never chosen, NaN wins as PyTorch.
    void (*max_pool2d)(const Tensor& x, const Tensor& out, const Tensor& indices, const Window2d& w);
    /// dx (planes, height, width) = grad scattered to `indices` (dx is overwritten).
    void (*max_pool2d_backward)(const Tensor& grad, const Tensor& indices, const Tensor& dx, const Window2d& w);
    /// Average pooling (or adaptive average pooling when w.adaptive) of x (planes, height, width).
    void (*avg_pool2d)(const Tensor& x, const Tensor& out, const Window2d& w);
    /// Its backward: each output's gradient divided by its divisor, added to its window (dx overwritten).
    void (*avg_pool2d_backward)(const Tensor& grad, const Tensor& dx, const Window2d& w);
    // ---- comparisons and logical ops (compare.cpp / compare.cu) ----
    /// out (bool, contiguous) = op(x, y) elementwise; x and y are views of out's shape of one
    /// compute dtype (float32, float64 or int64). The unary tests (kIsNan ...) read x only.
    void (*compare)(CompareOp op, const Tensor& x, const Tensor& y, const Tensor& out);
    // ---- selection by a mask (mask.cpp / mask.cu) ----
    /// out = cond ? x : y elementwise; cond is kBool, x, y and out of one dtype (any of the six),
    /// cond, x and y strided views of out's shape (broadcast dims have stride 0).
    void (*where)(const Tensor& cond, const Tensor& x, const Tensor& y, const Tensor& out);
};

/// The kernels of `device`; throws when xgrad was built without that device.
const Backend& backend(Device device);

// One inline forwarder per kernel, dispatching on the device of the output.

inline void unary(UnaryOp op, const Tensor& x, const Tensor& out, double a = 0, double b = 0) {
    backend(out.device()).unary(op, x, out, a, b);
}
inline void binary(BinaryOp op, const Tensor& x, const Tensor& y, const Tensor& out, double a = 0, double b = 0) {
    backend(out.device()).binary(op, x, y, out, a, b);
}
inline void lerp(const Tensor& self, const Tensor& end, const Tensor& weight, const Tensor& out) {
    backend(out.device()).lerp(self, end, weight, out);
}
/// Copies between devices go to the device that is not the CPU (it knows how to reach the host).
inline void copy(const Tensor& src, const Tensor& dst) {
    backend(dst.device().is_cpu() ? src.device() : dst.device()).copy(src, dst);
}
inline void fill(const Tensor& dst, double value) {
    backend(dst.device()).fill(dst, value);
}
inline void axpy(const Tensor& dst, const Tensor& src, double alpha) {
    backend(dst.device()).axpy(dst, src, alpha);
}
inline void addcmul(const Tensor& dst, const Tensor& a, const Tensor& b) {
    backend(dst.device()).addcmul(dst, a, b);
}
inline void sum_rows(const RowsView& v, const Tensor& out, bool mean) {
    backend(out.device()).sum_rows(v, out, mean);
}
inline void var_rows(const RowsView& v, const Tensor& out, const Tensor& mean, double correction, bool take_sqrt) {
    backend(out.device()).var_rows(v, out, mean, correction, take_sqrt);
}
inline void norm_rows(const RowsView& v, const Tensor& out, double p, bool lanes) {
    backend(out.device()).norm_rows(v, out, p, lanes);
}
inline void extreme_rows(const RowsView& v, const Tensor& out, bool max) {
    backend(out.device()).extreme_rows(v, out, max);
}
inline void arg_extreme_rows(const RowsView& v, const Tensor& values, const Tensor& indices, bool max) {
    backend(values.device()).arg_extreme_rows(v, values, indices, max);
}
inline void prod_rows(const RowsView& v, const Tensor& out, bool lanes) {
    backend(out.device()).prod_rows(v, out, lanes);
}
inline void scan_rows(const RowsView& v, const Tensor& out, bool prod, bool reverse) {
    backend(out.device()).scan_rows(v, out, prod, reverse);
}
inline void sort_rows(const RowsView& v, const Tensor& values, const Tensor& indices, std::int64_t k, bool descending,
                      TieOrder ties) {
    backend(values.device()).sort_rows(v, values, indices, k, descending, ties);
}
inline void scatter_rows(const Tensor& grad, const Tensor& indices, const Tensor& dx) {
    backend(dx.device()).scatter_rows(grad, indices, dx);
}
inline void matmul(const Tensor& a, const Tensor& b, const Tensor& out, double beta = 0, Transpose t = {}) {
    backend(out.device()).matmul(a, b, out, beta, t);
}
inline void matmul_batch_parallel(const Tensor& a, const Tensor& b, const Tensor& out, double beta = 0,
                                  Transpose t = {}) {
    backend(out.device()).matmul_batch_parallel(a, b, out, beta, t);
}
inline void mv(const Tensor& a, const Tensor& x, const Tensor& out) {
    backend(out.device()).mv(a, x, out);
}
inline void dot(const Tensor& a, const Tensor& b, const Tensor& out) {
    backend(out.device()).dot(a, b, out);
}
inline void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                               const Tensor& mean, const Tensor& rstd) {
    backend(out.device()).layer_norm_forward(x, weight, bias, eps, out, mean, rstd);
}
inline void layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                const Tensor& rstd, const Tensor& dx, const Tensor& dweight, const Tensor& dbias) {
    backend(x.device()).layer_norm_backward(grad, x, weight, mean, rstd, dx, dweight, dbias);
}
inline void rms_norm_forward(const Tensor& x, const Tensor& weight, double eps, const Tensor& out, const Tensor& rstd) {
    backend(out.device()).rms_norm_forward(x, weight, eps, out, rstd);
}
inline void rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                              const Tensor& dx, const Tensor& dweight) {
    backend(x.device()).rms_norm_backward(grad, x, weight, rstd, dx, dweight);
}
inline void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                               const Tensor& save_mean, const Tensor& save_invstd) {
    backend(out.device())
        .batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean,
                            save_invstd);
}
inline void batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                const Tensor& invstd, bool training, double eps, const Tensor& dx,
                                const Tensor& dweight, const Tensor& dbias) {
    backend(x.device()).batch_norm_backward(grad, x, weight, mean, invstd, training, eps, dx, dweight, dbias);
}
inline void group_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, std::int64_t groups,
                               double eps, const Tensor& out, const Tensor& mean, const Tensor& rstd) {
    backend(out.device()).group_norm_forward(x, weight, bias, groups, eps, out, mean, rstd);
}
inline void group_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                const Tensor& rstd, std::int64_t groups, const Tensor& dx, const Tensor& dweight,
                                const Tensor& dbias) {
    backend(x.device()).group_norm_backward(grad, x, weight, mean, rstd, groups, dx, dweight, dbias);
}
inline void cdist_forward(const Tensor& a, const Tensor& b, double p, const Tensor& out) {
    backend(out.device()).cdist_forward(a, b, p, out);
}
inline void cdist_backward(const Tensor& grad, const Tensor& a, const Tensor& b, double p, const Tensor& dist,
                           const Tensor& out) {
    backend(out.device()).cdist_backward(grad, a, b, p, dist, out);
}
inline void softmax_rows(const Tensor& x, const Tensor& out, bool log) {
    backend(out.device()).softmax_rows(x, out, log);
}
inline void softmax_backward_rows(const Tensor& grad, const Tensor& out, const Tensor& dx, bool log) {
    backend(dx.device()).softmax_backward_rows(grad, out, dx, log);
}
/// Whether `device` has softmax_inner (and softmax_backward_inner).
inline bool has_softmax_inner(Device device) {
    return backend(device).softmax_inner != nullptr;
}
inline void softmax_inner(const Tensor& x, const Tensor& out, std::int64_t dim, std::int64_t inner, bool log) {
    backend(out.device()).softmax_inner(x, out, dim, inner, log);
}
inline void softmax_backward_inner(const Tensor& grad, const Tensor& out, const Tensor& dx, std::int64_t dim,
                                   std::int64_t inner, bool log) {
    backend(dx.device()).softmax_backward_inner(grad, out, dx, dim, inner, log);
}
inline std::int64_t nll_loss_forward(const Tensor& x, const Tensor& target, const Tensor& weight,
                                     std::int64_t ignore_index, bool reduce, bool mean, const Tensor& out,
                                     const Tensor& total_weight) {
    return backend(out.device()).nll_loss_forward(x, target, weight, ignore_index, reduce, mean, out, total_weight);
}
inline void nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                              bool reduce, bool mean, const Tensor& total_weight, const Tensor& dx) {
    backend(dx.device()).nll_loss_backward(grad, target, weight, ignore_index, reduce, mean, total_weight, dx);
}
inline void adam_step(const AdamTensors* params, std::size_t count, const AdamStep& s) {
    if (count > 0) backend(params[0].param.device()).adam_step(params, count, s);
}
inline void sgd_step(const SgdTensors* params, std::size_t count, const SgdStep& s) {
    if (count > 0) backend(params[0].param.device()).sgd_step(params, count, s);
}

inline void gather(const Tensor& src, const Tensor& index, std::int64_t stride, const Tensor& out) {
    backend(out.device()).gather(src, index, stride, out);
}
inline void search_sorted(const Tensor& sorted, const Tensor& values, const Tensor& out, bool right) {
    backend(out.device()).search_sorted(sorted, values, out, right);
}
inline void scatter(const Tensor& dst, const Tensor& index, std::int64_t stride, const Tensor& src, bool accumulate) {
    backend(dst.device()).scatter(dst, index, stride, src, accumulate);
}

inline void im2col(const Tensor& x, const Tensor& cols, const Window2d& w) {
    backend(cols.device()).im2col(x, cols, w);
}
inline void col2im(const Tensor& cols, const Tensor& dx, const Window2d& w) {
    backend(dx.device()).col2im(cols, dx, w);
}
inline void max_pool2d(const Tensor& x, const Tensor& out, const Tensor& indices, const Window2d& w) {
    backend(out.device()).max_pool2d(x, out, indices, w);
}
inline void max_pool2d_backward(const Tensor& grad, const Tensor& indices, const Tensor& dx, const Window2d& w) {
    backend(dx.device()).max_pool2d_backward(grad, indices, dx, w);
}
inline void avg_pool2d(const Tensor& x, const Tensor& out, const Window2d& w) {
    backend(out.device()).avg_pool2d(x, out, w);
}
inline void avg_pool2d_backward(const Tensor& grad, const Tensor& dx, const Window2d& w) {
    backend(dx.device()).avg_pool2d_backward(grad, dx, w);
}

inline void compare(CompareOp op, const Tensor& x, const Tensor& y, const Tensor& out) {
    backend(out.device()).compare(op, x, y, out);
}
inline void where(const Tensor& cond, const Tensor& x, const Tensor& y, const Tensor& out) {
    backend(out.device()).where(cond, x, y, out);
}

}  // namespace xgrad::kernels
