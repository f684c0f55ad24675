// The CPU's kernel table.
#include "kernels/cpu/cpu.hpp"

namespace xgrad::kernels::cpu {

const Backend& backend() {
    static const Backend table{
        .unary = unary,
        .binary = binary,
        .lerp = lerp,
        .copy = copy,
        .fill = fill,
        .axpy = axpy,
        .addcmul = addcmul,
        .sum_rows = sum_rows,
        .var_rows = var_rows,
        .norm_rows = norm_rows,
        .extreme_rows = extreme_rows,
        .arg_extreme_rows = arg_extreme_rows,
        .prod_rows = prod_rows,
        .scan_rows = scan_rows,
        .sort_rows = sort_rows,
        .scatter_rows = scatter_rows,
        .matmul = matmul,
        .matmul_batch_parallel = matmul_batch_parallel,
        .mv = mv,
        .dot = dot,
        .layer_norm_forward = layer_norm_forward,
        .layer_norm_backward = layer_norm_backward,
        .rms_norm_forward = rms_norm_forward,
        .rms_norm_backward = rms_norm_backward,
        .batch_norm_forward = batch_norm_forward,
        .batch_norm_backward = batch_norm_backward,
        .group_norm_forward = group_norm_forward,
        .group_norm_backward = group_norm_backward,
        .cdist_forward = cdist_forward,
        .cdist_backward = cdist_backward,
        .softmax_rows = softmax_rows,
        .softmax_backward_rows = softmax_backward_rows,
        .softmax_inner = softmax_inner,
        .softmax_backward_inner = softmax_backward_inner,
        .nll_loss_forward = nll_loss_forward,
        .nll_loss_backward = nll_loss_backward,
        .adam_step = adam_step,
        .sgd_step = sgd_step,
        .gather = gather,
        .scatter = scatter,
        .search_sorted = search_sorted,
        .im2col = im2col,
        .col2im = col2im,
        .max_pool2d = max_pool2d,
        .max_pool2d_backward = max_pool2d_backward,
        .avg_pool2d = avg_pool2d,
        .avg_pool2d_backward = avg_pool2d_backward,
        .compare = compare,
        .where = where,
    };
    return table;
}

}  // namespace xgrad::kernels::cpu
