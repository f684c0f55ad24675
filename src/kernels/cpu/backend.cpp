// The CPU's kernel table.
#include "kernels/cpu/cpu.hpp"

namespace xgrad::kernels::cpu {

const Backend& backend() {
    static const Backend table{
        .unary = unary,
        .binary = binary,
        .copy = copy,
        .fill = fill,
        .axpy = axpy,
        .sum_rows = sum_rows,
        .var_rows = var_rows,
        .extreme_rows = extreme_rows,
        .first_hit_rows = first_hit_rows,
        .matmul = matmul,
        .mv = mv,
        .dot = dot,
        .layer_norm_forward = layer_norm_forward,
        .layer_norm_backward = layer_norm_backward,
        .rms_norm_forward = rms_norm_forward,
        .rms_norm_backward = rms_norm_backward,
        .softmax_rows = softmax_rows,
        .softmax_backward_rows = softmax_backward_rows,
        .adam_step = adam_step,
        .im2col = im2col,
        .col2im = col2im,
        .max_pool2d = max_pool2d,
        .max_pool2d_backward = max_pool2d_backward,
        .avg_pool2d = avg_pool2d,
        .avg_pool2d_backward = avg_pool2d_backward,
    };
    return table;
}

}  // namespace xgrad::kernels::cpu
