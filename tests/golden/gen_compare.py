# Writes compare.txt: what PyTorch 1.13 prints for comparisons, logical ops, the isnan family,
# any/all, equal, isclose/allclose (NaN and inf, broadcasting, promotion, bool/uint8/int32 inputs) and
# the errors it raises; test_compare.cpp builds the same cases with xgrad under the same names and
# compares the printed text character for character.
#
# Run from the repository root with Debian's PyTorch:
#     /usr/bin/python3 tests/golden/gen_compare.py
import os

import torch

from golden_writer import repr_lines

HERE = os.path.dirname(os.path.abspath(__file__))
nan, inf = float("nan"), float("inf")
T = torch.tensor
b, u8, i32, i64, f32, f64 = torch.bool, torch.uint8, torch.int32, torch.int64, torch.float32, torch.float64

X = lambda: T([1.0, nan, -inf, inf, 2.0, -0.0])  # noqa: E731
Y = lambda: T([1.0, nan, -inf, 3.0, nan, 0.0])  # noqa: E731

CASES = {
    # the six comparisons, IEEE: NaN compares false except under ne
    "eq_nan": lambda: X() == Y(),
    "ne_nan": lambda: X() != Y(),
    "lt_nan": lambda: X() < Y(),
    "le_nan": lambda: X() <= Y(),
    "gt_nan": lambda: X() > Y(),
    "ge_nan": lambda: X() >= Y(),
    "eq_method_f64": lambda: T([1.0, 2.0], dtype=f64).eq(T([1.0, 3.0], dtype=f64)),
    "ge_fn_int": lambda: torch.ge(T([1, 5, -3]), T([1, 4, -2])),
    # broadcasting, views
    "lt_broadcast": lambda: T([[1.0], [2.0], [3.0]]) < T([1.5, 2.5]),
    "eq_transposed": lambda: T([[1.0, 2.0], [3.0, 4.0]]).t() == T([[1.0, 3.0], [2.0, 5.0]]),
    "gt_expand": lambda: T([2.0]).expand(3) > T([1.0, 2.0, 3.0]),
    "eq_empty": lambda: torch.zeros(0, 3) == torch.zeros(1, 3),
    # numbers on either side
    "gt_scalar": lambda: X() > 1.5,
    "le_rscalar": lambda: 1.5 <= X(),
    "eq_rscalar": lambda: 2.0 == T([1.0, 2.0]),
    "ne_scalar_nan": lambda: T([1.0, nan]) != nan,
    "eq_scalar_nan": lambda: T([1.0, nan]) == nan,
    "lt_scalar_inf": lambda: T([1.0, inf]) < inf,
    "eq_f32_scalar": lambda: T([0.1]) == 0.1,  # the number meets float32 in float32
    "lt_rscalar_int": lambda: 2 < T([1, 2, 3]),
    "ge_int_half": lambda: T([1, 2, 3]) >= 2.5,
    "eq_int_big": lambda: T([16777217]) == 16777217,
    "eq_uint8_256": lambda: T([0, 255], dtype=u8) == 256,  # the number converts to uint8 (wraps)
    "eq_uint8_neg": lambda: T([0, 255], dtype=u8) == -1,
    "lt_uint8_half": lambda: T([0, 255], dtype=u8) < 2.5,
    "eq_bool_one": lambda: T([True, False]) == 1,
    "lt_bool_half": lambda: T([True, False]) < 0.5,
    "gt_int32_scalar": lambda: T([-5, 100000], dtype=i32) > -6,
    # promotion between tensors (result_type, 0-d tensors count only by category)
    "eq_int_float0d": lambda: T([1, 2]) == T(1.0),
    "lt_int_float": lambda: T([1, 2, 3]) < T([1.5, 2.0, 3.5]),
    "eq_f32_f64": lambda: T([0.1]) == T([0.1], dtype=f64),
    "eq_f32_f64_0d": lambda: T([0.1]) == T(0.1, dtype=f64),
    "eq_uint8_int0d": lambda: T([0, 255], dtype=u8) == T(256),
    "lt_uint8_int32": lambda: T([0, 255], dtype=u8) < T([-1, 300], dtype=i32),
    "eq_bool_bool": lambda: T([True, False, True]) == T([True, True, False]),
    "lt_bool_bool": lambda: T([True, False, True]) < T([True, True, False]),
    "eq_bool_int": lambda: T([True, False]) == T([1, 2]),
    "gt_bool_float": lambda: T([True, False]) > T([0.5, -0.5]),
    "eq_0d_0d": lambda: T(2.0) == T(2),
    "le_int32_int64": lambda: T([3, -4], dtype=i32) <= T([3, -5]),
    # logical ops of any dtypes (nonzero, NaN included, is true)
    "logical_and": lambda: torch.logical_and(T([1.0, 0.0, nan, 2.0]), T([2, 0, 1, 0])),
    "logical_or": lambda: torch.logical_or(T([1.0, 0.0, nan, 0.0]), T([0, 0, 0, 3], dtype=u8)),
    "logical_xor": lambda: torch.logical_xor(T([True, False, True, False]), T([True, True, False, False])),
    "logical_xor_bcast": lambda: T([[0.0], [1.0]]).logical_xor(T([0, 1, 2], dtype=i32)),
    "logical_not_f": lambda: torch.logical_not(T([0.0, -0.0, 1.0, nan])),
    "logical_not_u8": lambda: T([0, 7], dtype=u8).logical_not(),
    "logical_not_b": lambda: T([True, False]).logical_not(),
    "and_op": lambda: T([True, False, True]) & T([True, True, False]),
    "or_op": lambda: T([True, False, False]) | T([False, False, True]),
    "xor_op": lambda: T([True, False, True]) ^ T([True, True, False]),
    "not_op": lambda: ~T([True, False]),
    # on integer tensors the operators are bitwise, in the result_type (bools as 0 and 1)
    "and_int": lambda: T([12, -1, 5]) & T([10, 7, 0]),
    "or_int_bcast": lambda: T([[1], [8]]) | T([2, 4]),
    "xor_int32": lambda: T([5, -6], dtype=i32) ^ T([3, 3], dtype=i32),
    "and_u8_0d": lambda: T([255, 18], dtype=u8) & T(15),
    "or_bool_int": lambda: T([True, False]) | T([2, 2]),
    "not_int": lambda: ~T([0, 5, -1]),
    "not_u8": lambda: ~T([0, 5, 255], dtype=u8),
    "not_int32": lambda: ~T([7], dtype=i32),
    "range_mask": lambda: (T([-1.0, 0.0, 5.0, 10.0]) >= 0) & (T([-1.0, 0.0, 5.0, 10.0]) < 10),
    # an integer or bool number: it takes an integer tensor's dtype (wrapping), makes a bool one int64
    "and_bool_true": lambda: T([True, False]) & True,
    "and_bool_int": lambda: T([True, False]) & 1,
    "xor_true_bool": lambda: True ^ T([True, False]),
    "and_u8_num": lambda: T([5, 12], dtype=u8) & 3,
    "xor_u8_255": lambda: T([5, 12], dtype=u8) ^ 255,
    "and_u8_wrap": lambda: T([5, 12], dtype=u8) & 300,
    "or_int32_num": lambda: T([5, -3], dtype=i32) | 8,
    "and_num_int32": lambda: 3 & T([5, -3], dtype=i32),
    "and_int32_big": lambda: T([5, -3], dtype=i32) & 5000000000,
    "or_int_neg": lambda: T([12, 0]) | -16,
    # the tests of each element
    "isnan": lambda: torch.isnan(X()),
    "isinf": lambda: torch.isinf(X()),
    "isposinf": lambda: torch.isposinf(X()),
    "isneginf": lambda: torch.isneginf(X()),
    "isfinite": lambda: torch.isfinite(X()),
    "isnan_f64": lambda: T([nan, 1.0], dtype=f64).isnan(),
    "isfinite_f64": lambda: T([1e308, inf, nan], dtype=f64).isfinite(),
    "isinf_int": lambda: T([1, 2]).isinf(),
    "isnan_bool": lambda: T([True]).isnan(),
    "isfinite_u8": lambda: T([3], dtype=u8).isfinite(),
    "isposinf_i32": lambda: T([3], dtype=i32).isposinf(),
    # any / all (uint8 gives uint8 in PyTorch 1.13)
    "any_f": lambda: T([0.0, 0.0, 2.0]).any(),
    "any_f_none": lambda: T([0.0, -0.0]).any(),
    "any_nan": lambda: T([0.0, nan]).any(),
    "all_f": lambda: T([1.0, 2.0, nan]).all(),
    "all_f_zero": lambda: T([1.0, 0.0]).all(),
    "any_dim": lambda: T([[0.0, 1.0], [0.0, 0.0]]).any(1),
    "all_dim0": lambda: T([[1.0, 1.0], [0.0, 3.0]]).all(0),
    "all_dim_keep": lambda: T([[1.0, 1.0], [0.0, 3.0]]).all(-1, keepdim=True),
    "any_dim_keep": lambda: torch.any(T([[0, 0], [0, 5]]), 0, keepdim=True),
    "any_u8": lambda: T([0, 2], dtype=u8).any(),
    "all_u8": lambda: T([1, 2], dtype=u8).all(),
    "all_u8_dim": lambda: T([[1, 0]], dtype=u8).all(1),
    "any_u8_empty": lambda: T([], dtype=u8).any(),
    "any_i32": lambda: T([0, 0], dtype=i32).any(),
    "all_bool": lambda: T([True, True]).all(),
    "any_bool_dim": lambda: T([[True, False], [False, False]]).any(1),
    "any_empty": lambda: torch.zeros(0).any(),
    "all_empty": lambda: torch.zeros(0).all(),
    "any_empty_dim": lambda: torch.zeros(2, 0).any(1),
    "all_empty_dim": lambda: torch.zeros(2, 0).all(1),
    "any_0d": lambda: T(3.0).any(),
    "all_0d_dim": lambda: T(0.0).all(0),
    "all_fn": lambda: torch.all(T([[1, 2], [3, 4]])),
    # isclose (all dtypes of PyTorch's formula, NaN and inf)
    "isclose_default": lambda: torch.isclose(T([1.0, 1.0, 1.0, 1e-9]), T([1.0 + 1e-6, 1.0 + 1e-4, 1.00001, 0.0])),
    "isclose_nan": lambda: torch.isclose(T([nan, 1.0, inf, -inf, inf]), T([nan, nan, inf, inf, 1e38])),
    "isclose_equal_nan": lambda: torch.isclose(T([nan, 1.0, nan]), T([nan, nan, 2.0]), equal_nan=True),
    "isclose_tol": lambda: T([1.0, 2.0, 3.0], dtype=f64).isclose(T([1.1, 2.3, 3.0], dtype=f64), rtol=0.1, atol=0.05),
    "isclose_zero_tol": lambda: torch.isclose(T([1.0, 1.0 + 1e-7]), T([1.0, 1.0]), rtol=0.0, atol=0.0),
    "isclose_bcast": lambda: torch.isclose(T([[1.0], [2.0]]), T([1.0, 2.0, 2.00001])),
    "isclose_int": lambda: torch.isclose(T([100, 100, 5]), T([101, 100, 7]), rtol=0.01, atol=0.0),
    "isclose_u8": lambda: torch.isclose(T([0, 10], dtype=u8), T([1, 10], dtype=u8), rtol=0.0, atol=1.0),
    "isclose_bool": lambda: torch.isclose(T([True, False]), T([True, True]), atol=0.5),
    # equal, allclose: Python bools
    "equal_true": lambda: torch.equal(T([1.0, 2.0]), T([1.0, 2.0])),
    "equal_false": lambda: torch.equal(T([1.0, 2.0]), T([1.0, 2.5])),
    "equal_shape": lambda: torch.equal(T([1.0, 2.0]), T([[1.0, 2.0]])),
    "equal_nan": lambda: torch.equal(T([nan]), T([nan])),
    "equal_dtypes": lambda: torch.equal(T([1, 2]), T([1.0, 2.0])),
    "allclose_true": lambda: torch.allclose(T([1.0, 2.0]), T([1.0, 2.000001])),
    "allclose_false": lambda: torch.allclose(T([1.0, 2.0]), T([1.0, 2.1])),
    "allclose_bcast": lambda: torch.allclose(T([1.0]), T([1.0, 2.0])),
    "allclose_nan": lambda: torch.allclose(T([nan]), T([nan]), equal_nan=True),
    # errors (shapes that do not broadcast and dims out of range get xgrad's own messages, which
    # name the op and both shapes: test_compare.cpp checks them)
    "err_isclose_dtypes": lambda: torch.isclose(T([1, 2]), T([1.0, 2.0])),
    "err_isclose_rtol": lambda: torch.isclose(T([1.0]), T([1.0]), rtol=-1),
    "err_isclose_atol": lambda: torch.isclose(T([1.0]), T([1.0]), atol=-0.5),
    "err_and_float": lambda: T([1.0]) & T([1.0]),
    "err_xor_int_float": lambda: T([1]) ^ T([1.0]),
}

lines = repr_lines(CASES)

with open(os.path.join(HERE, "compare.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(CASES)} cases to compare.txt")
