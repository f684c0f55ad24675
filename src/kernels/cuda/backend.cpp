// The CUDA kernel table: each entry checks its tensors, picks their device, turns them into the
// pointers, sizes and strides the launchers take (launch.hpp), and launches. Copies between the
// host and a device are here too (cudaMemcpy, with the conversions done on whichever side is dense).
#include "kernels/cuda/cuda.hpp"

#include "kernels/cpu/cpu.hpp"
#include "xgrad/autograd.hpp"

namespace xgrad::kernels::cuda {

using detail::fail;

void use_device(const Tensor& t, std::initializer_list<const Tensor*> others, const char* op) {
    const Device device = t.device();
    for (const Tensor* o : others)
        if (o->defined() && o->device() != device)
            fail(op, "expected all tensors to be on the same device, but found at least two devices, " +
                         to_string(device) + " and " + to_string(o->device()));
    set_device(device.index());
}

namespace {

/// The int64 maps the CPU kernels define; others are refused as the CPU refuses them.
bool int64_unary(UnaryOp op) {
    return op == UnaryOp::kNeg || op == UnaryOp::kAbs || op == UnaryOp::kAdd || op == UnaryOp::kSub ||
           op == UnaryOp::kRsub || op == UnaryOp::kMul || op == UnaryOp::kClamp || op == UnaryOp::kSign ||
           op == UnaryOp::kPowInt;
}
bool int64_binary(BinaryOp op) {
    return op == BinaryOp::kAdd || op == BinaryOp::kSub || op == BinaryOp::kMul || op == BinaryOp::kMaximum ||
           op == BinaryOp::kMinimum || op == BinaryOp::kBitAnd || op == BinaryOp::kBitOr || op == BinaryOp::kBitXor ||
           op == BinaryOp::kPow || op == BinaryOp::kRemainder || op == BinaryOp::kFmod || op == BinaryOp::kDivTrunc ||
           op == BinaryOp::kDivFloor;
}

[[noreturn]] void unsupported(const char* kind, int op, DType dtype) {
    fail("kernels", std::string(kind) + " op " + std::to_string(op) + " is not defined for " + to_string(dtype));
}

void check_floating(const Tensor& t, const char* op) {
    if (!t.is_floating_point()) fail(op, "needs a floating-point tensor, got " + to_string(t.dtype()));
}

// ---- elementwise ----------------------------------------------------------------------------------------

void unary_entry(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b) {
    use_device(out, {&x}, "unary kernel");
    if (out.dtype() == kInt64 && !int64_unary(op)) unsupported("unary", static_cast<int>(op), kInt64);
    cuda::unary(op, scalar(out.dtype()), ptr(x), ptr(out), walk_of<1>(out.shape(), {&x}, "unary kernel"), a, b);
}

void binary_entry(BinaryOp op, const Tensor& x, const Tensor& y, const Tensor& out, double a, double b) {
    use_device(out, {&x, &y}, "binary kernel");
    if (out.dtype() == kInt64 && !int64_binary(op)) unsupported("binary", static_cast<int>(op), kInt64);
    cuda::binary(op, scalar(out.dtype()), ptr(x), ptr(y), ptr(out), walk_of<2>(out.shape(), {&x, &y}, "binary kernel"),
                 a, b);
}

void lerp_entry(const Tensor& self, const Tensor& end, const Tensor& weight, const Tensor& out) {
    use_device(out, {&self, &end, &weight}, "lerp");
    cuda::lerp(scalar(out.dtype()), ptr(self), ptr(end), ptr(weight), ptr(out),
               walk_of<3>(out.shape(), {&self, &end, &weight}, "lerp"));
}

// ---- copies ---------------------------------------------------------------------------------------------

/// dst = src on one device: the strided copy kernel.
void copy_on_device(const Tensor& src, const Tensor& dst) {
    cuda::copy(scalar(dst.dtype()), ptr(dst), scalar(src.dtype()), ptr(src),
               walk_of<2>(dst.shape(), {&dst, &src}, "copy"));
}

std::size_t bytes_of(const Tensor& t) {
    return static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
}

/// `src` as a dense tensor of `dtype` on its own device (itself when it is one already).
Tensor dense(const Tensor& src, DType dtype) {
    if (src.is_contiguous() && src.dtype() == dtype) return src;
    Tensor out = detail::make_empty(src.shape(), dtype, src.device());
    if (src.device().is_cpu())
        cpu::copy(src, out);
    else
        copy_on_device(src, out);
    return out;
}

/// Host to device: the host side converts and packs, one cudaMemcpy, then a strided copy on the
/// device when `dst` is not dense.
void copy_from_host(const Tensor& src, const Tensor& dst) {
    const Tensor host = dense(src, dst.dtype());
    const Tensor target = dst.is_contiguous() ? dst : detail::make_empty(dst.shape(), dst.dtype(), dst.device());
    copy_to_device(ptr(target), ptr(host), bytes_of(target), dst.device().index());
    if (target.impl() != dst.impl()) copy_on_device(target, dst);
}

/// Device to host (or to another device): the device converts and packs, then one copy.
void copy_to_other(const Tensor& src, const Tensor& dst) {
    const Tensor packed = dense(src, dst.dtype());
    const Device to = dst.device();
    const Tensor target = dst.is_contiguous() ? dst : detail::make_empty(dst.shape(), dst.dtype(), to);
    if (to.is_cpu())
        copy_to_host(ptr(target), ptr(packed), bytes_of(target), src.device().index());
    else
        copy_between_devices(ptr(target), to.index(), ptr(packed), src.device().index(), bytes_of(target));
    if (target.impl() == dst.impl()) return;
    if (to.is_cpu()) {
        cpu::copy(target, dst);
    } else {
        set_device(to.index());
        copy_on_device(target, dst);
    }
}

void copy_entry(const Tensor& src, const Tensor& dst) {
    if (dst.numel() == 0) return;
    NoGradGuard no_grad;
    if (src.device().is_cpu()) {
        set_device(dst.device().index());
        copy_from_host(src, dst);
    } else if (dst.device() != src.device()) {
        set_device(src.device().index());
        copy_to_other(src, dst);
    } else {
        set_device(dst.device().index());
        copy_on_device(src, dst);
    }
}

void fill_entry(const Tensor& dst, double value) {
    use_device(dst, {}, "fill_");
    cuda::fill(scalar(dst.dtype()), ptr(dst), walk_of<1>(dst.shape(), {&dst}, "fill_"), value);
}

void addcmul_entry(const Tensor& dst, const Tensor& a, const Tensor& b) {
    use_device(dst, {&a, &b}, "addcmul_");
    check_floating(dst, "addcmul_");
    cuda::addcmul(scalar(dst.dtype()), ptr(dst), ptr(a), ptr(b), dst.numel());
}

void axpy_entry(const Tensor& dst, const Tensor& src, double alpha) {
    use_device(dst, {&src}, "add_");
    cuda::axpy(scalar(dst.dtype()), ptr(dst), ptr(src), dst.numel(), alpha);
}

// ---- reductions -----------------------------------------------------------------------------------------

/// An in-place view (RowsView::in_place: a strided input) as the rows of a contiguous copy, which the
/// CUDA kernels read.
RowsView copied_rows(const RowsView& v) {
    NoGradGuard no_grad;
    RowsView copy = v;
    copy.input = v.input.contiguous();
    copy.in_place = false;
    copy.source_dims = {};
    return copy;
}

void sum_rows_entry(const RowsView& v, const Tensor& out, bool mean) {
    use_device(out, {&v.input}, mean ? "mean" : "sum");
    if (v.in_place) return sum_rows_entry(copied_rows(v), out, mean);
    if (v.outer && v.batches > 1) {  // blocks of (width, cols): summed as rows of a transposed copy
        const std::int64_t cols = v.rows / v.batches;
        RowsView rows = v;
        rows.input = v.input.reshape({v.batches, v.width, cols}).transpose(1, 2).contiguous();
        rows.outer = false;
        rows.batches = 1;
        return sum_rows_entry(rows, out, mean);
    }
    cuda::sum_rows(scalar(v.input.dtype()), scalar(out.dtype()), ptr(v.input), ptr(out), v.rows, v.width, v.outer,
                   mean);
}

void var_rows_entry(const RowsView& v, const Tensor& out, const Tensor& mean, double correction, bool take_sqrt) {
    use_device(out, {&v.input}, "var");
    if (v.in_place) return var_rows_entry(copied_rows(v), out, mean, correction, take_sqrt);
    check_floating(out, "var");
    cuda::var_rows(scalar(out.dtype()), ptr(v.input), ptr(out), mean.defined() ? ptr(mean) : nullptr, v.rows, v.width,
                   correction, take_sqrt);
}

void norm_rows_entry(const RowsView& v, const Tensor& out, double p, bool lanes) {
    use_device(out, {&v.input}, "norm");
    check_floating(out, "norm");
    cuda::norm_rows(scalar(out.dtype()), ptr(v.input), ptr(out), v.rows, v.width, p, lanes);
}

/// An outer (width, rows) view as rows (rows × width), through a transposed copy: the CUDA kernels
/// for extremes, products and scans read rows only.
RowsView as_rows(const RowsView& v) {
    NoGradGuard no_grad;
    return {v.input.reshape(Shape{v.width, v.rows}).t().contiguous(), v.rows, v.width, false};
}

void extreme_rows_entry(const RowsView& v, const Tensor& out, bool max) {
    if (v.outer) return extreme_rows_entry(as_rows(v), out, max);
    use_device(out, {&v.input}, max ? "max" : "min");
    cuda::extreme_rows(scalar(out.dtype()), ptr(v.input), ptr(out), v.rows, v.width, max);
}

void arg_extreme_rows_entry(const RowsView& v, const Tensor& values, const Tensor& indices, bool max) {
    use_device(values, {&v.input, &indices}, max ? "max" : "min");
    cuda::arg_extreme_rows(scalar(values.dtype()), ptr(v.input), ptr(values), ptr(indices), v.rows, v.width, max);
}

void prod_rows_entry(const RowsView& v, const Tensor& out, bool lanes /*a tree of products here*/) {
    if (v.outer) return prod_rows_entry(as_rows(v), out, lanes);
    use_device(out, {&v.input}, "prod");
    if (v.in_place) return prod_rows_entry(copied_rows(v), out, lanes);
    cuda::prod_rows(scalar(out.dtype()), ptr(v.input), ptr(out), v.rows, v.width);
}

void scan_rows_entry(const RowsView& v, const Tensor& out, bool prod, bool reverse) {
    if (v.outer) {  // down the columns: as rows, and the result transposed back
        Tensor scanned = detail::make_empty(Shape{v.rows, v.width}, out.dtype(), out.device());
        scan_rows_entry(as_rows(v), scanned, prod, reverse);
        NoGradGuard no_grad;
        out.reshape(Shape{v.width, v.rows}).copy_(scanned.t());
        return;
    }
    use_device(out, {&v.input}, prod ? "cumprod" : "cumsum");
    cuda::scan_rows(scalar(out.dtype()), ptr(v.input), ptr(out), v.rows, v.width, prod, reverse);
}

/// Rows of the last dim of a contiguous tensor.
std::pair<std::int64_t, std::int64_t> last_dim_rows(const Tensor& t) {
    const std::int64_t width = t.dim() == 0 ? 1 : t.size(-1);
    return {width == 0 ? 0 : t.numel() / width, width};
}

// Ties stay in index order whatever `ties` asks (PyTorch's own CUDA sort orders them its own way too).
void sort_rows_entry(const RowsView& v, const Tensor& values, const Tensor& indices, std::int64_t k, bool descending,
                     TieOrder /*ties*/) {
    use_device(values, {&v.input, &indices}, "sort");
    cuda::sort_rows(scalar(values.dtype()), ptr(v.input), ptr(values), ptr(indices), v.rows, v.width, k, descending);
}

void scatter_rows_entry(const Tensor& grad, const Tensor& indices, const Tensor& dx) {
    use_device(dx, {&grad, &indices}, "sort");
    check_floating(dx, "sort");
    const auto [rows, width] = last_dim_rows(dx);
    cuda::scatter_rows(scalar(dx.dtype()), ptr(grad), ptr(indices), ptr(dx), rows, width,
                       rows == 0 ? 0 : grad.numel() / rows);
}

// ---- normalisation, softmax, optimizers -------------------------------------------------------------------

void layer_norm_forward_entry(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& out,
                              const Tensor& mean, const Tensor& rstd) {
    use_device(out, {&x, &w, &b, &mean, &rstd}, "layer_norm");
    check_floating(x, "layer_norm");
    const std::int64_t rows = mean.numel(), width = rows == 0 ? 0 : x.numel() / rows;
    cuda::layer_norm_forward(scalar(x.dtype()), ptr(x), ptr(w), ptr(b), eps, ptr(out), ptr(mean), ptr(rstd), rows,
                             width);
}

void layer_norm_backward_entry(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                               const Tensor& rstd, const Tensor& dx, const Tensor& dw, const Tensor& db) {
    use_device(x, {&g, &w, &mean, &rstd, &dx, &dw, &db}, "layer_norm");
    check_floating(x, "layer_norm");
    // Without rows the width comes from the weight gradients, which are then zeros.
    const std::int64_t rows = mean.numel(), width = rows > 0       ? x.numel() / rows
                                                    : dw.defined() ? dw.numel()
                                                    : db.defined() ? db.numel()
                                                                   : 0;
    cuda::layer_norm_backward(scalar(x.dtype()), ptr(g), ptr(x), ptr(w), ptr(mean), ptr(rstd), ptr(dx), ptr(dw),
                              ptr(db), rows, width, x.device().index());
}

void rms_norm_forward_entry(const Tensor& x, const Tensor& w, double eps, const Tensor& out, const Tensor& rstd) {
    use_device(out, {&x, &w, &rstd}, "rms_norm");
    check_floating(x, "rms_norm");
    const std::int64_t rows = rstd.numel(), width = rows == 0 ? 0 : x.numel() / rows;
    cuda::rms_norm_forward(scalar(x.dtype()), ptr(x), ptr(w), eps, ptr(out), ptr(rstd), rows, width);
}

void rms_norm_backward_entry(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& rstd, const Tensor& dx,
                             const Tensor& dw) {
    use_device(x, {&g, &w, &rstd, &dx, &dw}, "rms_norm");
    check_floating(x, "rms_norm");
    const std::int64_t rows = rstd.numel(), width = rows > 0 ? x.numel() / rows : dw.defined() ? dw.numel() : 0;
    cuda::rms_norm_backward(scalar(x.dtype()), ptr(g), ptr(x), ptr(w), ptr(rstd), ptr(dx), ptr(dw), rows, width,
                            x.device().index());
}

/// (N, C, product of the other dims) of a batch_norm input.
std::array<std::int64_t, 3> batch_dims(const Tensor& x) {
    const std::int64_t n = x.size(0), c = x.size(1);
    return {n, c, n * c == 0 ? 0 : x.numel() / (n * c)};
}

void batch_norm_forward_entry(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                              bool training, double momentum, double eps, const Tensor& out, const Tensor& save_mean,
                              const Tensor& save_invstd) {
    use_device(out, {&x, &w, &b, &rm, &rv, &save_mean, &save_invstd}, "batch_norm");
    check_floating(x, "batch_norm");
    const auto d = batch_dims(x);
    cuda::batch_norm_forward(scalar(x.dtype()), ptr(x), ptr(w), ptr(b), ptr(rm), ptr(rv), training, momentum, eps,
                             ptr(out), ptr(save_mean), ptr(save_invstd), d[0], d[1], d[2]);
}

void batch_norm_backward_entry(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                               const Tensor& invstd, bool training, double eps, const Tensor& dx, const Tensor& dw,
                               const Tensor& db) {
    use_device(x, {&g, &w, &mean, &invstd, &dx, &dw, &db}, "batch_norm");
    check_floating(x, "batch_norm");
    const auto d = batch_dims(x);
    cuda::batch_norm_backward(scalar(x.dtype()), ptr(g), ptr(x), ptr(w), ptr(mean), ptr(invstd), training, eps, ptr(dx),
                              ptr(dw), ptr(db), d[0], d[1], d[2]);
}

void group_norm_forward_entry(const Tensor& x, const Tensor& w, const Tensor& b, std::int64_t groups, double eps,
                              const Tensor& out, const Tensor& mean, const Tensor& rstd) {
    use_device(out, {&x, &w, &b, &mean, &rstd}, "group_norm");
    check_floating(x, "group_norm");
    const auto d = batch_dims(x);
    cuda::group_norm_forward(scalar(x.dtype()), ptr(x), ptr(w), ptr(b), eps, ptr(out), ptr(mean), ptr(rstd), d[0], d[1],
                             d[2], groups);
}

void group_norm_backward_entry(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                               const Tensor& rstd, std::int64_t groups, const Tensor& dx, const Tensor& dw,
                               const Tensor& db) {
    use_device(x, {&g, &w, &mean, &rstd, &dx, &dw, &db}, "group_norm");
    check_floating(x, "group_norm");
    const auto d = batch_dims(x);
    cuda::group_norm_backward(scalar(x.dtype()), ptr(g), ptr(x), ptr(w), ptr(mean), ptr(rstd), ptr(dx), ptr(dw),
                              ptr(db), d[0], d[1], d[2], groups, x.device().index());
}

void cdist_forward_entry(const Tensor& a, const Tensor& b, double p, const Tensor& out) {
    use_device(out, {&a, &b}, "cdist");
    check_floating(a, "cdist");
    cuda::cdist_forward(scalar(a.dtype()), ptr(a), ptr(b), p, ptr(out), a.size(0), a.size(1), b.size(1), a.size(2));
}

void cdist_backward_entry(const Tensor& grad, const Tensor& a, const Tensor& b, double p, const Tensor& dist,
                          const Tensor& out) {
    use_device(out, {&grad, &a, &b, &dist}, "cdist");
    check_floating(a, "cdist");
    cuda::cdist_backward(scalar(a.dtype()), ptr(grad), ptr(a), ptr(b), p, ptr(dist), ptr(out), a.size(0), a.size(1),
                         b.size(1), a.size(2));
}

/// Rows of the last dim, as the CPU kernels count them.
std::pair<std::int64_t, std::int64_t> rows_and_width(const Tensor& t) {
    const std::int64_t width = t.dim() == 0 ? 1 : t.size(-1);
    return {width == 0 ? 0 : t.numel() / width, width};
}

void softmax_rows_entry(const Tensor& x, const Tensor& out, bool log) {
    const char* op = log ? "log_softmax" : "softmax";
    use_device(out, {&x}, op);
    check_floating(x, op);
    const auto [rows, width] = rows_and_width(x);
    cuda::softmax_rows(scalar(x.dtype()), ptr(x), ptr(out), rows, width, log);
}

void softmax_backward_rows_entry(const Tensor& grad, const Tensor& out, const Tensor& dx, bool log) {
    const char* op = log ? "log_softmax" : "softmax";
    use_device(dx, {&grad, &out}, op);
    check_floating(out, op);
    const auto [rows, width] = rows_and_width(out);
    cuda::softmax_backward_rows(scalar(out.dtype()), ptr(grad), ptr(out), ptr(dx), rows, width, log);
}

std::int64_t nll_loss_forward_entry(const Tensor& x, const Tensor& target, const Tensor& weight,
                                    std::int64_t ignore_index, bool reduce, bool mean, const Tensor& out,
                                    const Tensor& total_weight) {
    use_device(out, {&x, &target, &weight, &total_weight}, "nll_loss");
    check_floating(x, "nll_loss");
    return cuda::nll_loss_forward(scalar(x.dtype()), ptr(x), static_cast<const std::int64_t*>(ptr(target)), ptr(weight),
                                  x.size(0), x.size(1), x.size(2), ignore_index, reduce, mean, ptr(out),
                                  static_cast<double*>(ptr(total_weight)), out.device().index());
}

void nll_loss_backward_entry(const Tensor& grad, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                             bool reduce, bool mean, const Tensor& total_weight, const Tensor& dx) {
    use_device(dx, {&grad, &target, &weight, &total_weight}, "nll_loss");
    check_floating(dx, "nll_loss");
    cuda::nll_loss_backward(scalar(dx.dtype()), ptr(grad), static_cast<const std::int64_t*>(ptr(target)), ptr(weight),
                            dx.size(0), dx.size(1), dx.size(2), ignore_index, reduce, mean,
                            static_cast<const double*>(ptr(total_weight)), ptr(dx));
}

/// The kernel's pointers for `count` parameters updated in one launch (adam_step, sgd_step): `make`
/// checks one parameter's devices and gives its pointers; all must share the first one's dtype, and
/// have the optional state `extra` (amsgrad's maximum, the momentum buffer) all or none.
template <class Pointers, class Params, class Make>
std::vector<Pointers> update_list(const Params* params, std::size_t count, Tensor Params::*extra, const char* op,
                                  const char* extra_name, Make make) {
    const Tensor& first = params[0].param;
    check_floating(first, op);
    std::vector<Pointers> pointers(count);
    for (std::size_t i = 0; i < count; ++i) {
        const Params& t = params[i];
        pointers[i] = make(t);
        if (t.param.dtype() != first.dtype() || (t.*extra).defined() != (params[0].*extra).defined())
            fail(op, std::string("parameters updated together need one dtype and ") + extra_name + " for all or none");
    }
    return pointers;
}

void adam_step_entry(const AdamTensors* params, std::size_t count, const AdamStep& s) {
    if (count == 0) return;
    const Tensor& first = params[0].param;
    const auto pointers = update_list<cuda::AdamPointers>(
        params, count, &AdamTensors::max_exp_avg_sq, "adam", "amsgrad", [&](const AdamTensors& t) {
            use_device(first, {&t.param, &t.grad, &t.exp_avg, &t.exp_avg_sq, &t.max_exp_avg_sq}, "adam");
            return cuda::AdamPointers{ptr(t.param),      ptr(t.grad),           ptr(t.exp_avg),
                                      ptr(t.exp_avg_sq), ptr(t.max_exp_avg_sq), t.param.numel()};
        });
    cuda::adam_step(scalar(first.dtype()), pointers.data(), count, s);
}

void sgd_step_entry(const SgdTensors* params, std::size_t count, const SgdStep& s) {
    if (count == 0) return;
    const Tensor& first = params[0].param;
    const auto pointers = update_list<cuda::SgdPointers>(
        params, count, &SgdTensors::momentum_buffer, "sgd", "momentum buffers", [&](const SgdTensors& t) {
            use_device(first, {&t.param, &t.grad, &t.momentum_buffer}, "sgd");
            return cuda::SgdPointers{ptr(t.param), ptr(t.grad), ptr(t.momentum_buffer), t.param.numel()};
        });
    cuda::sgd_step(scalar(first.dtype()), pointers.data(), count, s);
}

// ---- indexing ---------------------------------------------------------------------------------------------

void search_sorted_entry(const Tensor& sorted, const Tensor& values, const Tensor& out, bool right) {
    use_device(out, {&sorted, &values}, "searchsorted");
    cuda::search_sorted(scalar(values.dtype()), ptr(sorted), ptr(values), ptr(out), values.size(0), sorted.size(1),
                        values.size(1), sorted.size(0) == 1, right, out.dtype() == kInt32);
}

void gather_entry(const Tensor& src, const Tensor& index, std::int64_t stride, const Tensor& out) {
    use_device(out, {&src, &index}, "gather");
    cuda::gather(scalar(out.dtype()), ptr(src), static_cast<const std::int64_t*>(ptr(index)), stride, ptr(out),
                 walk_of<3>(index.shape(), {&out, &src, &index}, "gather"));
}

void scatter_entry(const Tensor& dst, const Tensor& index, std::int64_t stride, const Tensor& src, bool accumulate) {
    use_device(dst, {&src, &index}, "scatter");
    cuda::scatter(scalar(dst.dtype()), ptr(dst), static_cast<const std::int64_t*>(ptr(index)), stride, ptr(src),
                  walk_of<3>(index.shape(), {&dst, &src, &index}, "scatter"), accumulate);
}

// ---- convolution and pooling ----------------------------------------------------------------------------

std::int64_t count(const Tensor& t, std::int64_t per) {
    return per == 0 ? 0 : t.numel() / per;
}

void im2col_entry(const Tensor& x, const Tensor& cols, const Window2d& g) {
    use_device(cols, {&x}, "conv2d");
    check_floating(x, "conv2d");
    cuda::im2col(scalar(x.dtype()), ptr(x), ptr(cols), g, count(x, g.channels * g.height * g.width));
}

void col2im_entry(const Tensor& cols, const Tensor& dx, const Window2d& g) {
    use_device(dx, {&cols}, "conv2d");
    check_floating(dx, "conv2d");
    cuda::col2im(scalar(dx.dtype()), ptr(cols), ptr(dx), g, count(dx, g.channels * g.height * g.width));
}

void max_pool2d_entry(const Tensor& x, const Tensor& out, const Tensor& indices, const Window2d& g) {
    use_device(out, {&x, &indices}, "max_pool2d");
    check_floating(x, "max_pool2d");
    cuda::max_pool2d(scalar(x.dtype()), ptr(x), ptr(out), ptr(indices), g, count(out, g.out_h * g.out_w));
}

void max_pool2d_backward_entry(const Tensor& grad, const Tensor& indices, const Tensor& dx, const Window2d& g) {
    use_device(dx, {&grad, &indices}, "max_pool2d");
    check_floating(dx, "max_pool2d");
    cuda::max_pool2d_backward(scalar(dx.dtype()), ptr(grad), ptr(indices), ptr(dx), g, count(dx, g.height * g.width));
}

void avg_pool2d_entry(const Tensor& x, const Tensor& out, const Window2d& g) {
    use_device(out, {&x}, "avg_pool2d");
    check_floating(x, "avg_pool2d");
    cuda::avg_pool2d(scalar(x.dtype()), ptr(x), ptr(out), g, count(out, g.out_h * g.out_w));
}

void avg_pool2d_backward_entry(const Tensor& grad, const Tensor& dx, const Window2d& g) {
    use_device(dx, {&grad}, "avg_pool2d");
    check_floating(dx, "avg_pool2d");
    cuda::avg_pool2d_backward(scalar(dx.dtype()), ptr(grad), ptr(dx), g, count(dx, g.height * g.width));
}

// ---- comparisons and logical ops ------------------------------------------------------------------------

void compare_entry(CompareOp op, const Tensor& x, const Tensor& y, const Tensor& out) {
    use_device(out, {&x, &y}, "compare kernel");
    cuda::compare(op, scalar(x.dtype()), ptr(x), ptr(y), static_cast<bool*>(ptr(out)),
                  walk_of<2>(out.shape(), {&x, &y}, "compare kernel"));
}

// ---- selection by a mask ------------------------------------------------------------------------------

void where_entry(const Tensor& cond, const Tensor& x, const Tensor& y, const Tensor& out) {
    use_device(out, {&cond, &x, &y}, "where");
    cuda::where(scalar(out.dtype()), static_cast<const bool*>(ptr(cond)), ptr(x), ptr(y), ptr(out),
                walk_of<4>(out.shape(), {&out, &cond, &x, &y}, "where"));
}

}  // namespace

const Backend& backend() {
    static const Backend table{
        .unary = unary_entry,
        .binary = binary_entry,
        .lerp = lerp_entry,
        .copy = copy_entry,
        .fill = fill_entry,
        .axpy = axpy_entry,
        .addcmul = addcmul_entry,
        .sum_rows = sum_rows_entry,
        .var_rows = var_rows_entry,
        .norm_rows = norm_rows_entry,
        .extreme_rows = extreme_rows_entry,
        .arg_extreme_rows = arg_extreme_rows_entry,
        .prod_rows = prod_rows_entry,
        .scan_rows = scan_rows_entry,
        .sort_rows = sort_rows_entry,
        .scatter_rows = scatter_rows_entry,
        .matmul = matmul,
        .matmul_batch_parallel = matmul,
        .mv = mv,
        .dot = dot,
        .layer_norm_forward = layer_norm_forward_entry,
        .layer_norm_backward = layer_norm_backward_entry,
        .rms_norm_forward = rms_norm_forward_entry,
        .rms_norm_backward = rms_norm_backward_entry,
        .batch_norm_forward = batch_norm_forward_entry,
        .batch_norm_backward = batch_norm_backward_entry,
        .group_norm_forward = group_norm_forward_entry,
        .group_norm_backward = group_norm_backward_entry,
        .cdist_forward = cdist_forward_entry,
        .cdist_backward = cdist_backward_entry,
        .softmax_rows = softmax_rows_entry,
        .softmax_backward_rows = softmax_backward_rows_entry,
        // None over a middle dim: the op transposes it last (PyTorch's CUDA softmax has its own numbers).
        .softmax_inner = nullptr,
        .softmax_backward_inner = nullptr,
        .nll_loss_forward = nll_loss_forward_entry,
        .nll_loss_backward = nll_loss_backward_entry,
        .adam_step = adam_step_entry,
        .sgd_step = sgd_step_entry,
        .gather = gather_entry,
        .scatter = scatter_entry,
        .search_sorted = search_sorted_entry,
        .im2col = im2col_entry,
        .col2im = col2im_entry,
        .max_pool2d = max_pool2d_entry,
        .max_pool2d_backward = max_pool2d_backward_entry,
        .avg_pool2d = avg_pool2d_entry,
        .avg_pool2d_backward = avg_pool2d_backward_entry,
        .compare = compare_entry,
        .where = where_entry,
    };
    return table;
}

}  // namespace xgrad::kernels::cuda
