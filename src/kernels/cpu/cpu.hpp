// The CPU kernels, one declaration per entry of kernels::Backend (see kernels/kernels.hpp).
#pragma once

#include "kernels/cpu/matmul.hpp"
#include "kernels/kernels.hpp"

namespace xgrad::kernels::cpu {

void unary(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b);
void binary(BinaryOp op, const Tensor& x, const Tensor& y, const Tensor& out, double a, double b);
void lerp(const Tensor& self, const Tensor& end, const Tensor& weight, const Tensor& out);
void copy(const Tensor& src, const Tensor& dst);
/// Whether t's last two dims are a transposed matrix (dim -2 of stride 1, dim -1 of a stride at least
/// dim -2's size), as x.t() is: the layout copy() moves tile by tile.
bool transposed_matrix(const Tensor& t);
void fill(const Tensor& dst, double value);
void axpy(const Tensor& dst, const Tensor& src, double alpha);
void addcmul(const Tensor& dst, const Tensor& a, const Tensor& b);
void sum_rows(const RowsView& v, const Tensor& out, bool mean);
void var_rows(const RowsView& v, const Tensor& out, const Tensor& mean_out, double correction, bool take_sqrt);
void norm_rows(const RowsView& v, const Tensor& out, double p, bool lanes);
void extreme_rows(const RowsView& v, const Tensor& out, bool max);
void arg_extreme_rows(const RowsView& v, const Tensor& values, const Tensor& indices, bool max);
void prod_rows(const RowsView& v, const Tensor& out, bool lanes);
void scan_rows(const RowsView& v, const Tensor& out, bool prod, bool reverse);
void sort_rows(const RowsView& v, const Tensor& values, const Tensor& indices, std::int64_t k, bool descending,
               TieOrder ties);
void scatter_rows(const Tensor& grad, const Tensor& indices, const Tensor& dx);
void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                        const Tensor& mean, const Tensor& rstd);
void layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dweight, const Tensor& dbias);
void rms_norm_forward(const Tensor& x, const Tensor& weight, double eps, const Tensor& out, const Tensor& rstd);
void rms_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& rstd, const Tensor& dx,
                       const Tensor& dweight);
void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd);
void batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                         const Tensor& invstd, bool training, double eps, const Tensor& dx, const Tensor& dweight,
                         const Tensor& dbias);
void group_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, std::int64_t groups, double eps,
                        const Tensor& out, const Tensor& mean, const Tensor& rstd);
void group_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                         const Tensor& rstd, std::int64_t groups, const Tensor& dx, const Tensor& dweight,
                         const Tensor& dbias);
void cdist_forward(const Tensor& a, const Tensor& b, double p, const Tensor& out);
void cdist_backward(const Tensor& grad, const Tensor& a, const Tensor& b, double p, const Tensor& dist,
                    const Tensor& out);
void softmax_rows(const Tensor& x, const Tensor& out, bool log);
void softmax_backward_rows(const Tensor& grad, const Tensor& out, const Tensor& dx, bool log);
void softmax_inner(const Tensor& x, const Tensor& out, std::int64_t dim, std::int64_t inner, bool log);
void softmax_backward_inner(const Tensor& grad, const Tensor& out, const Tensor& dx, std::int64_t dim,
                            std::int64_t inner, bool log);
std::int64_t nll_loss_forward(const Tensor& x, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                              bool reduce, bool mean, const Tensor& out, const Tensor& total_weight);
void nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, std::int64_t ignore_index,
                       bool reduce, bool mean, const Tensor& total_weight, const Tensor& dx);
void adam_step(const AdamTensors* params, std::size_t count, const AdamStep& s);
void sgd_step(const SgdTensors* params, std::size_t count, const SgdStep& s);
void gather(const Tensor& src, const Tensor& index, std::int64_t stride, const Tensor& out);
void scatter(const Tensor& dst, const Tensor& index, std::int64_t stride, const Tensor& src, bool accumulate);
void search_sorted(const Tensor& sorted, const Tensor& values, const Tensor& out, bool right);
void im2col(const Tensor& x, const Tensor& cols, const Window2d& w);
void col2im(const Tensor& cols, const Tensor& dx, const Window2d& w);
void max_pool2d(const Tensor& x, const Tensor& out, const Tensor& indices, const Window2d& w);
void max_pool2d_backward(const Tensor& grad, const Tensor& indices, const Tensor& dx, const Window2d& w);
void avg_pool2d(const Tensor& x, const Tensor& out, const Window2d& w);
void avg_pool2d_backward(const Tensor& grad, const Tensor& dx, const Window2d& w);
// comparisons and logical ops
void compare(CompareOp op, const Tensor& x, const Tensor& y, const Tensor& out);
void where(const Tensor& cond, const Tensor& x, const Tensor& y, const Tensor& out);

/// The CPU's kernel table.
const Backend& backend();

}  // namespace xgrad::kernels::cpu
