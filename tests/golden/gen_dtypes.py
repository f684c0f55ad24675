# Writes dtypes.txt: what PyTorch 1.13 prints for bool, uint8 and int32 tensors (factories, casts,
# arithmetic, type promotion, reductions) and the errors it raises; test_dtypes.cpp builds the same
# tensors with xgrad under the same names and compares the printed text character for character.
#
# Run from the repository root with Debian's PyTorch:
#     /usr/bin/python3 tests/golden/gen_dtypes.py
import os

import torch
import torch.nn.functional as F

from golden_writer import repr_lines

HERE = os.path.dirname(os.path.abspath(__file__))
nan, inf = float("nan"), float("inf")
T = torch.tensor
b, u8, i32, i64, f32, f64 = torch.bool, torch.uint8, torch.int32, torch.int64, torch.float32, torch.float64

CASES = {
    # printing and factories
    "bool_vec": lambda: T([True, False, True]),
    "bool_all_true": lambda: T([True, True]),
    "bool_2d": lambda: T([[True], [False]]),
    "bool_0d": lambda: T(True),
    "bool_empty": lambda: T([], dtype=b),
    "bool_zeros": lambda: torch.zeros(2, 3, dtype=b),
    "bool_long": lambda: torch.ones(1200, dtype=b),
    "bool_from_floats": lambda: T([0.0, 0.5, nan, -2.0], dtype=b),
    "int32_vec": lambda: T([100000, 2], dtype=i32),
    "int32_empty": lambda: torch.zeros(0, 2, dtype=i32),
    "int32_ones": lambda: torch.ones(2, 2, dtype=i32),
    "uint8_vec": lambda: T([0, 1, 255], dtype=u8),
    "uint8_full_neg": lambda: torch.full((3,), -1, dtype=u8),
    "bool_full": lambda: torch.full((2,), 2.5, dtype=b),
    "uint8_arange": lambda: torch.arange(3, dtype=u8),
    "int32_arange": lambda: torch.arange(-2, 7, 3, dtype=i32),
    "uint8_t": lambda: T([[1, 2]], dtype=u8).t(),
    # casts
    "f32_to_int32": lambda: T([nan, 1e20, -1e20, 3.7, -3.7]).to(i32),
    "f32_to_uint8": lambda: T([nan, 1e20, -1e20, -3.7, 300.5]).to(u8),
    "f32_to_bool": lambda: T([0.0, -0.0, 0.5, nan, inf]).to(b),
    "bool_to_f64": lambda: T([True, False]).to(f64),
    "int32_to_uint8": lambda: T([-1, 256, 255], dtype=i32).to(u8),
    "int64_to_int32": lambda: T([2**40 + 5, -1]).to(i32),
    "uint8_to_int64": lambda: T([200, 3], dtype=u8).to(i64),
    # arithmetic: computed as PyTorch's, wrapping for uint8 and int32
    "uint8_add_scalar": lambda: T([200, 1], dtype=u8) + 100,
    "uint8_mul": lambda: T([200], dtype=u8) * T([2], dtype=u8),
    "uint8_sub_wrap": lambda: T([5], dtype=u8) - T([6], dtype=u8),
    "uint8_neg": lambda: T([200], dtype=u8).neg(),
    "int32_wrap": lambda: T([2**31 - 1], dtype=i32) + 1,
    "bool_add": lambda: T([True, False]) + T([True, True]),
    "bool_mul": lambda: T([True, False]) * T([True, True]),
    "bool_mul_float": lambda: T([True, False]) * 2.5,
    "bool_add_int": lambda: T([True, False]) + 2,
    "int32_div": lambda: T([2, 3], dtype=i32) / 2,
    "int32_abs": lambda: T([1, -2], dtype=i32).abs(),
    "int32_pow": lambda: T([1, 2], dtype=i32).pow(2),
    "int32_exp": lambda: T([1, 2], dtype=i32).exp(),
    "int32_clamp": lambda: T([1, 2, 5], dtype=i32).clamp(0, 3),
    "int32_maximum": lambda: torch.maximum(T([1, 7], dtype=i32), T([4, 2], dtype=i32)),
    # type promotion: zero-dim tensors count only when of a higher category
    "int32_plus_0d_int64": lambda: torch.ones(2, dtype=i32) + T(1),
    "int32_plus_0d_f64": lambda: torch.ones(2, dtype=i32) + T(1.0, dtype=f64),
    "f32_plus_0d_f64": lambda: torch.ones(2) + T(1.0, dtype=f64),
    "uint8_plus_0d_int64": lambda: T([1, 2], dtype=u8) + T(1000),
    "f32_plus_bool": lambda: T([1.0, 2.0]) + T([True, False]),
    "int32_plus_int64": lambda: T([1, 2], dtype=i32) + T([3, 4]),
    "uint8_plus_int32": lambda: T([250], dtype=u8) + T([10], dtype=i32),
    "bool_times_uint8": lambda: T([True, False]) * T([7, 9], dtype=u8),
    "0d_f32_plus_0d_f64": lambda: T(1.0) + T(2.0, dtype=f64),
    "f64_plus_0d_int64": lambda: T([1.5], dtype=f64) + T(2),
    # reductions, sorting, products, joins
    "bool_sum": lambda: T([True, False, True]).sum(),
    "uint8_sum": lambda: T([200, 100], dtype=u8).sum(),
    "int32_sum_dim": lambda: T([[1, 2], [3, 4]], dtype=i32).sum(0),
    "int32_max": lambda: T([1, 2], dtype=i32).max(),
    "bool_max": lambda: T([True, False]).max(),
    "uint8_argmax": lambda: T([1, 9, 2], dtype=u8).argmax(),
    "int32_max_dim_values": lambda: T([[3, 1], [2, 8]], dtype=i32).max(1).values,
    "int32_sort_values": lambda: T([3, 1, 2], dtype=i32).sort().values,
    "int32_sort_indices": lambda: T([3, 1, 2], dtype=i32).sort().indices,
    "bool_sort_values": lambda: T([True, False]).sort().values,
    "uint8_cumsum": lambda: T([3, 255], dtype=u8).cumsum(0),
    "int32_prod": lambda: T([1, 2, 3], dtype=i32).prod(),
    "int32_matmul": lambda: T([[1, 2]], dtype=i32) @ T([[3], [4]], dtype=i32),
    "cat_int32_int64": lambda: torch.cat([T([1], dtype=i32), T([2])]),
    "uint8_index_select": lambda: T([10, 20, 30], dtype=u8).index_select(0, T([2, 0])),
    "bool_reshape": lambda: T([True, False, False, True]).reshape(2, 2),
    # true division and atan2 bring integer operands to float32 from their own values (a zero-dim
    # int64 divisor of a uint8 tensor is not wrapped to uint8 first)
    "uint8_div_0d_int64": lambda: T([1, 2], dtype=u8) / T(300),
    "int32_div_0d_int64": lambda: T([3], dtype=i32) / T(2**33),
    "uint8_atan2_0d_int64": lambda: T([128], dtype=u8).atan2(T(-2)),
    # integer activations keep the dtype; clamp's zero-dim bounds count only when of a higher category
    "int64_relu": lambda: T([-2, 3]).relu(),
    "uint8_relu": lambda: torch.relu(T([7, 0], dtype=u8)),
    "int64_hardtanh": lambda: F.hardtanh(T([5, -3, 0])),
    "int64_hardtanh_fractional": lambda: F.hardtanh(T([5, -3]), -2.5, 2.5),
    "int32_relu6": lambda: F.relu6(T([7, -1, 3], dtype=i32)),
    "f32_clamp_0d_f64": lambda: T([1.0, 2.0]).clamp(T(1.5, dtype=f64)),
    "uint8_clamp_0d_int64": lambda: T([3, 5], dtype=u8).clamp(T(4)),
    "uint8_clamp_0d_negative": lambda: T([3, 254, 5], dtype=u8).clamp(T(-2)),
    "int32_clamp_0d_f64": lambda: T([1, 5], dtype=i32).clamp(T(2.5, dtype=f64), T(4.5, dtype=f64)),
    "bool_pow": lambda: T([True, False]).pow(2),
    "rpow_uint8": lambda: torch.pow(2, T([3, 9], dtype=u8)),
    "rpow_int32": lambda: torch.pow(3, T([2, 20], dtype=i32)),
    # errors
    "err_relu_bool": lambda: torch.relu(T([True])),
    "err_hardtanh_bool": lambda: F.hardtanh(T([True])),
    "err_hardtanh_uint8_negative": lambda: F.hardtanh(T([5], dtype=u8)),
    "err_lerp_uint8": lambda: T([1], dtype=u8).lerp(T([1]), 0.5),
    # what PyTorch's kernels are not built for (bool; gelu: integers too)
    "err_gelu_int64": lambda: F.gelu(T([1, 2])),
    "err_gelu_bool": lambda: F.gelu(T([True])),
    "err_abs_bool": lambda: T([True]).abs(),
    "err_floor_bool": lambda: T([True]).floor(),
    "err_ceil_bool": lambda: T([True]).ceil(),
    "err_round_bool": lambda: T([True]).round(),
    "err_trunc_bool": lambda: T([True]).trunc(),
    "err_argmax_bool": lambda: T([True, False]).argmax(),
    "err_argmin_bool": lambda: T([True, False]).argmin(0),
    "err_topk_bool": lambda: T([True, False]).topk(1),
    "err_median_bool": lambda: T([True, False]).median(),
    "err_median_dim_bool": lambda: T([True, False]).median(0),
    "err_kthvalue_bool": lambda: T([True, False]).kthvalue(1),
    "err_sub_bool_float": lambda: T([True]) - 1.5,
    "err_rsub_bool": lambda: 0.5 - T([True]),
    "err_sub_int_bool": lambda: T([1]) - T([True]),
    "err_pow_bool": lambda: T([True]).pow(T([True])),
    "err_remainder_bool": lambda: T([True]).remainder(T([True])),
    "err_fmod_bool": lambda: T([True]).fmod(T([True])),
    "err_floor_divide_bool": lambda: torch.div(T([True]), T([True]), rounding_mode="floor"),
    "err_matmul_bool": lambda: T([[True, False]]) @ T([[True], [True]]),
    "err_masked_fill_uint8_overflow": lambda: torch.zeros(2, dtype=u8).masked_fill(T([True, False]), T(300)),
    "int32_masked_fill_0d_float": lambda: torch.zeros(2, dtype=i32).masked_fill(T([True, False]), T(2.5)),
    "bool_sort_values_still": lambda: T([True, False]).sort().values,
    "err_full_uint8": lambda: torch.full((2,), 300, dtype=u8),
    "err_full_int32": lambda: torch.full((2,), 2**31, dtype=i32),
    "err_full_int32_nan": lambda: torch.full((2,), nan, dtype=i32),
    "err_sub_bool": lambda: T([True]) - T([True]),
    "err_neg_bool": lambda: -T([True]),
    "err_requires_grad_int32": lambda: T([1, 2], dtype=i32).requires_grad_(),
}

lines = repr_lines(CASES)

with open(os.path.join(HERE, "dtypes.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(CASES)} cases to dtypes.txt")
