# Writes reduction_more.txt for test_reduction_more.cpp: max/min with indices, amax/amin,
# argmax/argmin, sort/argsort/topk, prod, cumsum, cumprod, logsumexp, var/std with correction,
# searchsorted/bucketize, aminmax, var_mean/std_mean and kron.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_reduction_more.py
#
# Layout as reduction.txt: `<case>.<dtype>.in0` (the leaf), `.out`, `.idx` (the int64 indices of
# max(dim), sort and topk), a random weight `.w` of out's shape, `.g0` = d (out * w).sum() / d in0, and
# a comment line `# grad_fn <case>.<dtype> <name>`. The `# error` lines record PyTorch's messages for
# the bad inputs whose wording the C++ messages follow.
import os
import zlib

import torch
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reduction_more.txt")
lines = []
NAN, INF = float("nan"), float("inf")


def put(name, t):
    lines.append(tensor_line(name, t))


def case(name, fn, make_input, dtypes=("float32", "float64")):
    """Records fn(x) for each dtype; fn returns a tensor or a (values, indices) pair."""
    seed = zlib.crc32(name.encode())
    base = make_input(torch.Generator().manual_seed(seed))
    for dt in dtypes:
        key = f"{name}.{dt}"
        if base.is_floating_point():
            x = base.to(getattr(torch, dt)).clone().requires_grad_(True)
        else:
            x = base.clone()
        put(f"{key}.in0", x)
        out = fn(x)
        if isinstance(out, tuple):
            out, idx = out
            put(f"{key}.idx", idx)
        put(f"{key}.out", out)
        if out.requires_grad:
            lines.append(f"# grad_fn {key} {out.grad_fn.name()}")
            w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
            put(f"{key}.w", w.to(out.dtype))
            (out * w.to(out.dtype)).sum().backward()
            if x.grad is not None:  # None: the backward gave no gradient (the 0-norm's)
                put(f"{key}.g0", x.grad)


def randn(*shape):
    return lambda g: torch.randn(shape, generator=g, dtype=torch.float64)


def ties(*shape):
    """Small integers (as floats): the extreme of a row often appears more than once."""
    return lambda g: torch.randint(-2, 3, shape, generator=g).double()


def ints(*shape):
    return lambda g: torch.randint(-5, 6, shape, generator=g)


def const(rows):
    return lambda g: torch.tensor(rows, dtype=torch.float64)


X = randn(2, 3, 4)
WITH_NAN = const([[1.0, NAN, 3.0, NAN], [0.5, -1.0, 2.0, 2.0], [4.0, 0.0, -2.0, 1.0]])

# ---- max/min along a dim: values and the first index; amax/amin; max over several dims ------------
for op in ("max", "min"):
    f = getattr(torch.Tensor, op)
    a = getattr(torch.Tensor, "a" + op)
    case(f"{op}_dim1", lambda x, f=f: tuple(f(x, 1)), X)
    case(f"{op}_dimneg1_keep", lambda x, f=f: tuple(f(x, -1, keepdim=True)), X)
    case(f"{op}_dim0_transposed", lambda x, f=f: tuple(f(x.transpose(0, 2), 0)), X)
    case(f"{op}_dim1_ties", lambda x, f=f: tuple(f(x, 1)), ties(4, 6))
    case(f"{op}_dim1_nan", lambda x, f=f: tuple(f(x, 1)), WITH_NAN)
    case(f"{op}_0d", lambda x, f=f: tuple(f(x, 0)), randn())
    case(f"{op}_int_dim0", lambda x, f=f: tuple(f(x, 0)), ints(5, 3), dtypes=("int64",))
    case(f"a{op}_all", lambda x, a=a: a(x), X)
    case(f"a{op}_dims02", lambda x, a=a: a(x, (0, 2)), X)
    case(f"a{op}_dimneg1_keep", lambda x, a=a: a(x, -1, keepdim=True), X)
    case(f"a{op}_dims01_ties_keep", lambda x, a=a: a(x, (0, 1), keepdim=True), ties(3, 4, 2))
    case(f"a{op}_all_ties", lambda x, a=a: a(x), ties(3, 4))
    # A NaN result: PyTorch's grad / count * (x == result) makes that row's gradient NaN.
    case(f"a{op}_dim1_nan", lambda x, a=a: a(x, 1), WITH_NAN)

# ---- argmax/argmin ------------------------------------------------------------------------------
for op in ("argmax", "argmin"):
    f = getattr(torch.Tensor, op)
    case(f"{op}_flat", lambda x, f=f: f(x), X)
    case(f"{op}_flat_keep", lambda x, f=f: f(x, keepdim=True), X)
    case(f"{op}_dim1", lambda x, f=f: f(x, 1), X)
    case(f"{op}_dimneg1_keep", lambda x, f=f: f(x, -1, keepdim=True), X)
    case(f"{op}_ties", lambda x, f=f: f(x, 0), ties(6, 4))
    case(f"{op}_nan", lambda x, f=f: f(x, 1), WITH_NAN)
    case(f"{op}_int", lambda x, f=f: f(x), ints(4, 5), dtypes=("int64",))

# ---- sort, argsort, topk ----------------------------------------------------------------------------
case("sort_last", lambda x: tuple(torch.sort(x)), X)
case("sort_dim0_desc", lambda x: tuple(torch.sort(x, 0, descending=True)), X)
case("sort_transposed", lambda x: tuple(torch.sort(x.transpose(0, 1), 1)), X)
# Ties keep their index order with stable=True; without it, sort and topk leave them in the order
# libstdc++'s std::sort / partial_sort / nth_element give, which xgrad's CPU kernel reproduces. Rows
# wider than 16 take std::sort's introsort; topk takes partial_sort where 64 k <= width.
case("sort_ties", lambda x: tuple(torch.sort(x, dim=-1)), ties(3, 40))
case("sort_ties_desc_dim0", lambda x: tuple(torch.sort(x, 0, descending=True)), ties(70, 2))
case("argsort_ties", lambda x: torch.argsort(x, -1), ties(4, 9))
case("topk_ties", lambda x: tuple(torch.topk(x, 3)), ties(3, 40))
case("topk_ties_partial", lambda x: tuple(torch.topk(x, 2)), ties(2, 200))
case("topk_ties_smallest", lambda x: tuple(torch.topk(x, 6, largest=False)), ties(3, 40))
case("topk_ties_unsorted", lambda x: tuple(torch.topk(x, 7, sorted=False)), ties(3, 40))
case("sort_int_unstable", lambda x: tuple(torch.sort(x, dim=1)), ints(3, 30), dtypes=("int64",))
# kthvalue (PyTorch's quickselect picks among equal values) and median (the lower median, ranked by
# value then index; a row with NaN gives its first NaN).
case("kthvalue_2", lambda x: tuple(torch.kthvalue(x, 2)), X)
case("kthvalue_dim0_keep", lambda x: tuple(torch.kthvalue(x, 3, 0, keepdim=True)), randn(5, 3))
case("kthvalue_ties", lambda x: tuple(torch.kthvalue(x, 17)), ties(3, 40))
case("kthvalue_ties_dim0", lambda x: tuple(torch.kthvalue(x, 30, 0)), ties(70, 2))
case("kthvalue_nan", lambda x: tuple(torch.kthvalue(x, 3, 1)), WITH_NAN)
case("kthvalue_int", lambda x: tuple(torch.kthvalue(x, 4, 1)), ints(3, 30), dtypes=("int64",))
case("median_dim", lambda x: tuple(torch.median(x, -1)), X)
case("median_dim0_keep", lambda x: tuple(torch.median(x, 0, keepdim=True)), randn(4, 3))
case("median_ties", lambda x: tuple(torch.median(x, 1)), ties(3, 40))
case("median_ties_odd", lambda x: tuple(torch.median(x, 0)), ties(41, 2))
case("median_nan", lambda x: tuple(torch.median(x, 1)), WITH_NAN)
case("median_all", lambda x: torch.median(x), X)
case("median_all_nan", lambda x: torch.median(x), WITH_NAN)
case("median_int", lambda x: tuple(torch.median(x, 1)), ints(3, 30), dtypes=("int64",))
# nanmedian: the lower median of the numbers (ranked by value then index); a row of NaNs gives NaN
# at the index libstdc++'s nth_element leaves first (67 for a row of 100).
ALL_NAN_ROWS = const([[NAN] * 5, [1.0, NAN, 3.0, 2.0, NAN], [NAN] * 4 + [7.0]])
LONG_NAN = const([[NAN] * 100, [float(i % 7) if i % 3 else NAN for i in range(100)]])
case("nanmedian_dim", lambda x: tuple(torch.nanmedian(x, 1)), WITH_NAN)
case("nanmedian_all_nan_rows", lambda x: tuple(torch.nanmedian(x, 1)), ALL_NAN_ROWS)
case("nanmedian_long_nan_keep", lambda x: tuple(torch.nanmedian(x, 1, keepdim=True)), LONG_NAN)
case("nanmedian_dim0", lambda x: tuple(torch.nanmedian(x, 0)), randn(5, 3))
case("nanmedian_ties", lambda x: tuple(torch.nanmedian(x, 1)), ties(3, 40))
case("nanmedian_all", lambda x: torch.nanmedian(x), WITH_NAN)
case("nanmedian_all_of_nans", lambda x: torch.nanmedian(x), const([[NAN, NAN], [NAN, NAN]]))
case("nanmedian_int", lambda x: tuple(torch.nanmedian(x, 1)), ints(3, 30), dtypes=("int64",))
# mode: the smallest of the most frequent values, at the index of the last of them as std::sort leaves
# them (stable below 17 elements, introsort's order above). NaN rows only where NaNs split no run of
# equal numbers (PyTorch's sort leaves NaN unordered; xgrad sorts it last).
MODE_NAN = const([[1.0, 2.0, 2.0, NAN], [NAN, NAN, NAN, NAN], [NAN, 3.0, 3.0, 1.0], [4.0, -0.0, 0.0, 4.0]])
case("mode_dim1", lambda x: tuple(torch.mode(x, 1)), ties(4, 9))
case("mode_ties_long", lambda x: tuple(torch.mode(x)), ties(5, 40))
case("mode_wide_keep", lambda x: tuple(torch.mode(x, -1, keepdim=True)), lambda g: torch.randint(0, 12, (3, 200), generator=g).double())
case("mode_dim0", lambda x: tuple(torch.mode(x, 0)), ties(30, 3))
case("mode_distinct", lambda x: tuple(torch.mode(x, 1)), randn(3, 5))
case("mode_nan", lambda x: tuple(torch.mode(x, 1)), MODE_NAN)
case("mode_0d", lambda x: tuple(torch.mode(x)), randn())
case("mode_int", lambda x: tuple(torch.mode(x, 1)), ints(4, 50), dtypes=("int64",))
case("mode_bool", lambda x: (torch.mode(x.bool(), 1)[0].long(), torch.mode(x.bool(), 1)[1]),
     lambda g: torch.randint(0, 2, (5, 30), generator=g), dtypes=("int64",))
# quantile / nanquantile (composed of sort, gather and lerp in PyTorch too: same gradients).
Q3 = [0.1, 0.5, 0.9]
Q5 = [0.0, 0.33, 0.5, 0.875, 1.0]
case("quantile_dim1", lambda x: torch.quantile(x, 0.3, dim=1), X)
case("quantile_vec_dim0_keep", lambda x: torch.quantile(x, torch.tensor(Q3, dtype=x.dtype), dim=0, keepdim=True), X)
case("quantile_all", lambda x: torch.quantile(x, 0.75), X)
case("quantile_all_vec_keep", lambda x: torch.quantile(x, torch.tensor([0.25, 0.6], dtype=x.dtype), keepdim=True), X)
for mode in ("lower", "higher", "midpoint", "nearest"):
    case(f"quantile_{mode}",
         lambda x, mode=mode: torch.quantile(x, torch.tensor(Q5, dtype=x.dtype), dim=-1, interpolation=mode), randn(3, 7))
case("quantile_ties", lambda x: torch.quantile(x, torch.tensor([0.25, 0.5], dtype=x.dtype), dim=1), ties(3, 40))
case("quantile_nan", lambda x: torch.quantile(x, 0.4, dim=1), WITH_NAN)
case("quantile_0d", lambda x: torch.quantile(x, 0.5, dim=0), randn())
case("nanquantile_rows", lambda x: torch.nanquantile(x, torch.tensor([0.2, 0.5], dtype=x.dtype), dim=1), ALL_NAN_ROWS)
case("nanquantile_all", lambda x: torch.nanquantile(x, 0.5), WITH_NAN)
case("nanquantile_dim0_keep", lambda x: torch.nanquantile(x, 0.8, dim=0, keepdim=True), X)
case("sort_ties_stable", lambda x: tuple(torch.sort(x, stable=True, dim=-1)), ties(3, 8))
case("sort_ties_stable_desc", lambda x: tuple(torch.sort(x, stable=True, dim=0, descending=True)), ties(8, 3))
case("sort_nan", lambda x: tuple(torch.sort(x, 1)), WITH_NAN)
case("sort_nan_desc", lambda x: tuple(torch.sort(x, 1, descending=True)), WITH_NAN)
case("sort_int", lambda x: tuple(torch.sort(x, stable=True, dim=1)), ints(3, 6), dtypes=("int64",))
case("sort_0d", lambda x: tuple(torch.sort(x)), randn())
case("argsort_desc", lambda x: torch.argsort(x, 1, descending=True), X)
case("argsort_ties_stable", lambda x: torch.argsort(x, stable=True, dim=-1), ties(4, 7))
case("topk_2", lambda x: tuple(torch.topk(x, 2)), X)
case("topk_3_dim0_smallest", lambda x: tuple(torch.topk(x.transpose(0, 1), 3, 0, largest=False)), X)
case("topk_all", lambda x: tuple(torch.topk(x, 4, -1)), X)
case("topk_0", lambda x: tuple(torch.topk(x, 0, 1)), X)
case("topk_dim0", lambda x: tuple(torch.topk(x, 2, 0)), randn(5, 3))

# ---- norm, linalg.vector_norm, outer --------------------------------------------------------------
ZERO_ROW = const([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0], [1.0, 2.0, 2.0]])
case("norm_all", lambda x: x.norm(), X)
case("norm_p1_dim1", lambda x: x.norm(1, 1), X)
case("norm_p3_dims02_keep", lambda x: torch.norm(x, 3, (0, 2), keepdim=True), X)
case("norm_p05_dim0", lambda x: x.norm(0.5, 0), X)
case("norm_pneg_dim1", lambda x: x.norm(-1.5, -1), X)
case("norm_inf_dim1", lambda x: torch.norm(x, INF, 1), ties(3, 6))
case("norm_ninf_all", lambda x: x.norm(-INF), X)
case("norm_p0_dim1", lambda x: x.norm(0, 1), ZERO_ROW)
case("norm_zero_row", lambda x: x.norm(2, 1), ZERO_ROW)
case("norm_0d", lambda x: x.norm(), randn())
case("vector_norm_all", lambda x: torch.linalg.vector_norm(x), X)
case("vector_norm_dim_keep", lambda x: torch.linalg.vector_norm(x, 2, (-1,), True), X)
case("vector_norm_p15_dims01", lambda x: torch.linalg.vector_norm(x, 1.5, (0, 1)), X)
case("outer", lambda x: torch.outer(x[0], x[1]), randn(2, 5))

# ---- logaddexp, nan_to_num, count_nonzero, diff, meshgrid ----------------------------------------------
BIG = lambda g: torch.randn((2, 7), generator=g, dtype=torch.float64) * 20  # noqa: E731
EXP_SPECIAL = const([[1.0, INF, -INF, 3.0, -INF, 0.0, 50.0, NAN], [2.0, INF, -INF, INF, 0.0, -INF, -50.0, 1.0]])
for f in ("logaddexp", "logaddexp2"):
    op = getattr(torch, f)
    case(f"{f}", lambda x, op=op: op(x[0], x[1]), BIG)
    case(f"{f}_broadcast", lambda x, op=op: op(x[0].unsqueeze(1), x[1]), BIG)
    case(f"{f}_special", lambda x, op=op: op(x[0], x[1]), EXP_SPECIAL)
NON_FINITE = const([[1.0, NAN, INF, -INF, 2.0], [-0.5, INF, NAN, 0.0, -INF]])
case("nan_to_num", lambda x: torch.nan_to_num(x), NON_FINITE)
case("nan_to_num_values", lambda x: x.nan_to_num(nan=1.5, posinf=9.0, neginf=-9.0), NON_FINITE)
case("nan_to_num_posinf_only", lambda x: torch.nan_to_num(x, posinf=1e3), NON_FINITE)
case("count_nonzero_all", lambda x: torch.count_nonzero(x), ZERO_ROW)
case("count_nonzero_dim1", lambda x: torch.count_nonzero(x, 1), ZERO_ROW)
case("count_nonzero_dims", lambda x: x.count_nonzero((0, 1)), ties(2, 3, 4))
case("diff", lambda x: torch.diff(x), X)
case("diff_n2_dim0_prepend", lambda x: torch.diff(x, 2, 0, prepend=torch.ones(1, 3, 4, dtype=x.dtype)), X)
case("diff_append_dim1", lambda x: x.diff(dim=1, append=x[:, :2] * 3), X)
case("diff_past_length", lambda x: torch.diff(x, n=5), X)
case("diff_int", lambda x: torch.diff(x, dim=0), ints(4, 3), dtypes=("int64",))
case("diff_bool", lambda x: torch.diff(x.bool()).long(), ints(3, 6), dtypes=("int64",))
case("meshgrid_ij", lambda x: torch.stack(torch.meshgrid(x[0], x[1, :3], indexing="ij")), randn(2, 4))
case("meshgrid_xy", lambda x: torch.stack(torch.meshgrid(x[0], x[1, :3], x[0, 1], indexing="xy")), randn(2, 4))

# unique / unique_consecutive (NaN-free: PyTorch 1.13's CPU unique places NaNs anywhere, counts 0):
# values, inverse, counts. Of -0 and +0 the first in the input is kept.
UNIQUE_INPUTS = {
    "unique_floats": torch.randint(-2, 3, (3, 8), generator=torch.Generator().manual_seed(5)).double(),
    "unique_zeros": torch.tensor([[-0.0, 0.0, 1.0, -0.0], [0.0, 2.0, -1.0, 1.0]], dtype=torch.float64),
    # Wider than 16: std::sort's introsort would move a +0 before the first -0.
    "unique_zeros_wide": torch.tensor([0.0, -0.0] * 20 + [3.0, -0.0, 1.0] * 8, dtype=torch.float64),
    "unique_int": torch.randint(-5, 6, (4, 5), generator=torch.Generator().manual_seed(6)),
    "unique_0d": torch.tensor(2.5, dtype=torch.float64),
    "unique_consecutive": torch.tensor([[1, 1, 2, 2], [3, 1, 1, 2]]),
}
for name, u in UNIQUE_INPUTS.items():
    for dt in (("int64",) if not u.is_floating_point() else ("float32", "float64")):
        x = u.to(getattr(torch, dt))
        f = torch.unique_consecutive if name == "unique_consecutive" else torch.unique
        values, inverse, counts = f(x, return_inverse=True, return_counts=True)
        put(f"{name}.{dt}.in0", x)
        put(f"{name}.{dt}.out", values)
        put(f"{name}.{dt}.inverse", inverse)
        put(f"{name}.{dt}.counts", counts)
        put(f"{name}.{dt}.signbit", torch.signbit(values).long())

# ---- prod, cumsum, cumprod ------------------------------------------------------------------------
ZEROS = const([[1.5, 0.0, 2.0, -1.0], [0.0, 3.0, 0.0, 0.5], [2.0, 0.5, -1.0, 4.0]])
case("prod_all", lambda x: x.prod(), X)
case("prod_dim1", lambda x: x.prod(1), X)
case("prod_dim0_keep", lambda x: x.prod(0, keepdim=True), X)
case("prod_dim1_zeros", lambda x: x.prod(1), ZEROS)  # one zero, two zeros, none
case("prod_all_one_zero", lambda x: x[0].prod(), ZEROS)
case("prod_all_two_zeros", lambda x: x.prod(), ZEROS)
case("prod_int", lambda x: x.prod(1), ints(3, 4), dtypes=("int64",))
case("cumsum_dim0", lambda x: x.cumsum(0), X)
case("cumsum_dimneg1", lambda x: x.cumsum(-1), X)
case("cumsum_transposed", lambda x: x.transpose(0, 2).cumsum(1), X)
case("cumsum_int", lambda x: x.cumsum(1), ints(3, 4), dtypes=("int64",))
case("cumprod_dim1", lambda x: x.cumprod(1), X)
case("cumprod_dimneg1", lambda x: x.cumprod(-1), X)
case("cumprod_zeros", lambda x: x.cumprod(1), ZEROS)
case("cumprod_zeros_dim0", lambda x: x.cumprod(0), ZEROS)
case("cumprod_int", lambda x: x.cumprod(0), ints(3, 4), dtypes=("int64",))

# ---- logsumexp -----------------------------------------------------------------------------------
case("logsumexp_dim1", lambda x: x.logsumexp(1), X)
case("logsumexp_dims02_keep", lambda x: x.logsumexp((0, 2), keepdim=True), X)
case("logsumexp_big", lambda x: x.logsumexp(-1), const([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1001.0]]))
case("logsumexp_inf", lambda x: x.logsumexp(1), const([[INF, 1.0], [-INF, -INF], [INF, -INF], [1.0, 2.0]]))
case("logsumexp_int", lambda x: x.logsumexp(1), ints(3, 4), dtypes=("int64",))

# ---- var and std with correction ---------------------------------------------------------------
SPECIAL_ROWS = [
    [INF] + [0.1 * i for i in range(1, 40)],
    [0.1 * i if i != 37 else NAN for i in range(40)],
    [-INF] + [0.25 * i for i in range(1, 39)] + [INF],
    [1000.25] * 40,
    [10000.0 + 0.01 * i for i in range(40)],
]
for op in ("var", "std"):
    f = getattr(torch.Tensor, op)
    for c in (0, 1, 2):
        case(f"{op}_dim1_correction{c}", lambda x, f=f, c=c: f(x, 1, correction=c), X)
    case(f"{op}_dims02_correction2_keep", lambda x, f=f: f(x, (0, 2), correction=2, keepdim=True), X)
    case(f"{op}_all_correction0", lambda x, f=f: f(x, None, correction=0), X)
    case(f"{op}_correction_past_n", lambda x, f=f: f(x, 1, correction=5), X)
    # Rows long enough for the vector path: inf, NaN, inf - inf, a constant row (variance 0 exactly),
    # a large mean over a small spread (cancellation).
    case(f"{op}_special_rows", lambda x, f=f: f(x, 1), const(SPECIAL_ROWS))

# ---- searchsorted, bucketize (int64 positions, no gradient) ------------------------------------------------
def ss(x, **kw):
    return torch.searchsorted(x[0].sort(-1)[0], x[1], **kw)


SS_NAN = const([[-1.0, 0.0, 0.5, 2.0, 3.0], [NAN, 0.5, -INF, INF, 2.0]])
case("searchsorted", lambda x: ss(x), randn(2, 9))
case("searchsorted_right", lambda x: ss(x, right=True), randn(2, 9))
case("searchsorted_ties", lambda x: ss(x), ties(2, 11))
case("searchsorted_ties_right", lambda x: ss(x, side="right"), ties(2, 11))
case("searchsorted_rows", lambda x: ss(x), randn(2, 3, 6))
case("searchsorted_rows_right", lambda x: ss(x, right=True), ties(2, 4, 5))
case("searchsorted_nan", lambda x: ss(x), SS_NAN)
case("searchsorted_nan_right", lambda x: ss(x, right=True), SS_NAN)
case("searchsorted_int", lambda x: ss(x), ints(2, 12), dtypes=("int64",))
case("searchsorted_sorter", lambda x: torch.searchsorted(x[0], x[1], sorter=x[0].argsort()), randn(2, 8))
case("searchsorted_scalar", lambda x: torch.searchsorted(x.sort()[0], 0.25), randn(9))
case("bucketize", lambda x: torch.bucketize(x[1:], x[0].sort()[0]), randn(4, 6))
case("bucketize_right", lambda x: torch.bucketize(x[1:], x[0].sort()[0], right=True), ties(4, 6))

# ---- aminmax, var_mean, std_mean (stacked: one output with a gradient), kron ------------------------------
case("aminmax_dim1", lambda x: torch.stack((x.amin(1), x.amax(1))), X)
case("aminmax_dimneg1_keep", lambda x: torch.stack((x.amin(-1, keepdim=True), x.amax(-1, keepdim=True))), X)
case("aminmax_all", lambda x: torch.stack((x.amin(), x.amax())), X)
case("aminmax_ties", lambda x: torch.stack((x.amin(0), x.amax(0))), ties(6, 3))
case("var_mean_dim1", lambda x: torch.stack(torch.var_mean(x, 1)), X)
case("var_mean_all", lambda x: torch.stack(torch.var_mean(x)), X)
case("var_mean_dims02_biased_keep", lambda x: torch.stack(torch.var_mean(x, (0, 2), unbiased=False, keepdim=True)), X)
case("std_mean_dim0", lambda x: torch.stack(torch.std_mean(x, 0)), X)
case("std_mean_all_biased", lambda x: torch.stack(torch.std_mean(x, unbiased=False)), X)
# kron's own grad_fn is an implementation detail (UnsafeViewBackward0 in PyTorch): compared through `* 1`.
case("kron_2d", lambda x: torch.kron(x[0, :2, :2], x[1, :3, 1:]) * 1, X)
case("kron_1d_2d", lambda x: torch.kron(x[0, 0], x[1, :2, :2]) * 1, X)
case("kron_3d_1d", lambda x: torch.kron(x, x[1, 1, :2]) * 1, X)
case("kron_int", lambda x: torch.kron(x[:2], x[2:]), ints(4, 3), dtypes=("int64",))

# ---- PyTorch's error messages, which the C++ ones follow -----------------------------------------------
z = torch.zeros(2, 3)
for what, fn in [
    ("max_dim_range", lambda: z.max(2)),
    ("max_empty_dim", lambda: torch.zeros(2, 0).max(1)),
    ("argmax_empty", lambda: torch.zeros(0).argmax()),
    ("amax_repeated", lambda: z.amax((0, 0))),
    ("topk_k_range", lambda: z.topk(4)),
    ("sort_dim_range", lambda: z.sort(2)),
    ("cumsum_dim_range", lambda: z.cumsum(-3)),
    ("var_int", lambda: torch.zeros(2, 3, dtype=torch.long).var(0, correction=1)),
    ("quantile_q_range", lambda: torch.quantile(z, 1.5)),
    ("quantile_q_values", lambda: torch.quantile(z, torch.tensor([0.5, -0.1]))),
    ("quantile_q_2d", lambda: torch.quantile(z, torch.tensor([[0.5]]))),
    ("quantile_empty", lambda: torch.quantile(torch.zeros(0), 0.5)),
    ("quantile_int", lambda: torch.quantile(torch.zeros(3, dtype=torch.long), 0.5)),
    ("quantile_q_dtype", lambda: torch.quantile(z, torch.tensor([0.5], dtype=torch.float64))),
    ("quantile_interpolation", lambda: torch.quantile(z, 0.5, interpolation="cubic")),
    ("nanmedian_empty_dim", lambda: torch.zeros(2, 0).nanmedian(1)),
    ("mode_empty_dim", lambda: torch.zeros(2, 0).mode(1)),
    ("norm_int", lambda: torch.zeros(3, dtype=torch.long).norm()),
    ("vector_norm_inf_empty", lambda: torch.linalg.vector_norm(torch.zeros(0, 3), INF, 0)),
    ("outer_2d", lambda: torch.outer(z, z)),
    ("diff_0d", lambda: torch.diff(torch.tensor(1.0))),
    ("diff_prepend_shape", lambda: torch.diff(z, prepend=torch.zeros(3, 1))),
    ("meshgrid_indexing", lambda: torch.meshgrid(z[0], z[1], indexing="foo")),
    ("meshgrid_2d", lambda: torch.meshgrid(z, z[0], indexing="ij")),
    ("searchsorted_0d", lambda: torch.searchsorted(torch.tensor(1.0), z)),
    ("searchsorted_rows", lambda: torch.searchsorted(torch.zeros(2, 3), torch.zeros(3, 3))),
    ("searchsorted_scalar_2d", lambda: torch.searchsorted(torch.zeros(2, 3), torch.tensor(1.0))),
    ("searchsorted_sorter_size", lambda: torch.searchsorted(z[0], z, sorter=torch.tensor([0, 1]))),
    ("searchsorted_sorter_dtype", lambda: torch.searchsorted(z[0], z, sorter=torch.tensor([0, 1, 2]).int())),
    ("searchsorted_bool", lambda: torch.searchsorted(torch.tensor([True]), torch.tensor([True]))),
    ("bucketize_2d", lambda: torch.bucketize(z, z)),
    ("aminmax_empty", lambda: torch.aminmax(torch.zeros(0))),
    ("aminmax_empty_dim", lambda: torch.aminmax(torch.zeros(2, 0), dim=1)),
]:
    try:
        fn()
        lines.append(f"# error {what} <none>")
    except (RuntimeError, IndexError) as e:
        lines.append(f"# error {what} {str(e).splitlines()[0]}")

with open(OUT, "w") as f:
    f.write("# Generated by gen_reduction_more.py with torch " + torch.__version__ + "; do not edit.\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
