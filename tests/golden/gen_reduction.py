# Writes reduction.txt: inputs, outputs, gradients and grad_fn names from PyTorch for test_reduction.cpp.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_reduction.py
#
# Same layout as elementwise.txt: `<case>.<dtype>.in0` (the leaf), `.out`, a random weight `.w` of
# out's shape, `.g0` = d (out * w).sum() / d in0, and a comment line `# grad_fn <case>.<dtype> <name>`.
# Views (transpose, slicing) are part of the case's function, applied again by the C++ test.
import os
import zlib

import torch
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reduction.txt")
lines = []


def put(name, t):
    lines.append(tensor_line(name, t))


def case(name, fn, make_input, dtypes=("float32", "float64")):
    """Records fn(x) for each dtype; make_input(generator) returns a float64 or int64 tensor."""
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
        put(f"{key}.out", out)
        if out.requires_grad:
            lines.append(f"# grad_fn {key} {out.grad_fn.name()}")
            w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
            w = w.to(out.dtype)
            put(f"{key}.w", w)
            (out * w).sum().backward()
            put(f"{key}.g0", x.grad)


def randn(*shape):
    return lambda g: torch.randn(shape, generator=g, dtype=torch.float64)


def ties(*shape):
    """Small integers (as floats), so that the extreme value of a row often appears more than once."""
    return lambda g: torch.randint(-2, 3, shape, generator=g).double()


def ints(*shape):
    return lambda g: torch.randint(-50, 50, shape, generator=g)


X = randn(2, 3, 4)

# ---- sum and mean --------------------------------------------------------------------------------
for op in ("sum", "mean"):
    f = getattr(torch.Tensor, op)
    case(f"{op}_all", lambda x, f=f: f(x), X)
    case(f"{op}_dim1", lambda x, f=f: f(x, 1), X)
    case(f"{op}_dim0_keep", lambda x, f=f: f(x, 0, keepdim=True), X)
    case(f"{op}_dimneg1_keep", lambda x, f=f: f(x, -1, keepdim=True), X)
    case(f"{op}_dims02", lambda x, f=f: f(x, (0, 2)), X)
    case(f"{op}_dimsneg2neg1_keep", lambda x, f=f: f(x, (-2, -1), keepdim=True), X)
    case(f"{op}_dims_all", lambda x, f=f: f(x, (0, 1, 2)), X)
    case(f"{op}_transposed", lambda x, f=f: f(x.transpose(0, 2), 0), X)
    case(f"{op}_sliced", lambda x, f=f: f(x[:, :, ::2], -1), X)
    case(f"{op}_0d", lambda x, f=f: f(x, 0), randn())

# ---- var and std ---------------------------------------------------------------------------------
for op in ("var", "std"):
    f = getattr(torch.Tensor, op)
    case(f"{op}_all", lambda x, f=f: f(x), X)
    for unbiased in (True, False):
        for keepdim in (True, False):
            tag = f"{'unbiased' if unbiased else 'biased'}{'_keep' if keepdim else ''}"
            case(f"{op}_dim1_{tag}", lambda x, f=f, u=unbiased, k=keepdim: f(x, 1, unbiased=u, keepdim=k), X)
    case(f"{op}_dimneg1_biased", lambda x, f=f: f(x, -1, unbiased=False), X)
    case(f"{op}_dims02", lambda x, f=f: f(x, (0, 2)), X)
    case(f"{op}_dimsneg2neg1_biased_keep", lambda x, f=f: f(x, (-2, -1), unbiased=False, keepdim=True), X)
    case(f"{op}_dims_all_biased", lambda x, f=f: f(x, (0, 1, 2), unbiased=False), X)
    case(f"{op}_transposed", lambda x, f=f: f(x.transpose(0, 2), 1), X)
    case(f"{op}_sliced", lambda x, f=f: f(x[:, ::2, :], 0), X)
# A constant row: std is 0 there, and PyTorch's gradient is 0 rather than 0/0.
case("std_constant_row", lambda x: x.std(1),
     lambda g: torch.tensor([[1.5, 1.5, 1.5], [1.0, 2.0, 4.0]], dtype=torch.float64))

# ---- max and min ---------------------------------------------------------------------------------
for op in ("max", "min"):
    f = getattr(torch.Tensor, op)
    case(f"{op}_all", lambda x, f=f: f(x), X)
    case(f"{op}_dim1", lambda x, f=f: f(x, 1).values, X)
    case(f"{op}_dimneg1_keep", lambda x, f=f: f(x, -1, keepdim=True).values, X)
    case(f"{op}_transposed", lambda x, f=f: f(x.transpose(0, 2), 0).values, X)
    # Ties: the all-reduction shares the gradient evenly; along a dim it goes to the index returned.
    case(f"{op}_all_ties", lambda x, f=f: f(x), ties(3, 4))
    case(f"{op}_dim1_ties", lambda x, f=f: f(x, 1).values, ties(3, 5))
    case(f"{op}_dim0_ties_keep", lambda x, f=f: f(x, 0, keepdim=True).values, ties(4, 3))

# NaN wins, and takes the gradient (split between the NaNs for the all-reduction).
NAN = float("nan")


def with_nan(g):
    return torch.tensor([[1.0, NAN, 3.0, NAN], [0.5, -1.0, 2.0, NAN], [4.0, 0.0, -2.0, 1.0]], dtype=torch.float64)


case("max_all_nan", lambda x: x.max(), with_nan)
case("min_all_nan", lambda x: x.min(), with_nan)
case("max_dim1_nan", lambda x: x.max(1).values, with_nan)
case("min_dim0_nan", lambda x: x.min(0).values, with_nan)

# ---- int64 stays int64 -----------------------------------------------------------------------------
case("sum_int_all", lambda x: x.sum(), ints(3, 4), dtypes=("int64",))
case("sum_int_dim0", lambda x: x.sum(0), ints(3, 4), dtypes=("int64",))
case("max_int_dim1", lambda x: x.max(1).values, ints(3, 4), dtypes=("int64",))
case("min_int_all", lambda x: x.min(), ints(3, 4), dtypes=("int64",))

# ---- layouts: reduced dims that do not merge into one run of memory ---------------------------------
# PyTorch sums the innermost run's slices one by one (a vector sum when contiguous and at least one
# register long, scalar code when strided) and adds them up in order; var visits the elements by
# decreasing stride.
W = randn(5, 3, 40)
for op in ("sum", "mean"):
    f = getattr(torch.Tensor, op)
    case(f"{op}_dims02_wide", lambda x, f=f: f(x, (0, 2)), W)
    case(f"{op}_dims02_strided", lambda x, f=f: f(x[:, :, ::2], (0, 2)), W)
    case(f"{op}_dims02_permuted", lambda x, f=f: f(x.permute(2, 1, 0), (0, 2)), W)
    case(f"{op}_dims013", lambda x, f=f: f(x, (0, 1, 3), keepdim=True), randn(3, 4, 5, 6))
    case(f"{op}_all_sliced", lambda x, f=f: f(x[:, 1:3]), randn(3, 8))
for op in ("var", "std"):
    f = getattr(torch.Tensor, op)
    case(f"{op}_dims02_permuted", lambda x, f=f: f(x.permute(2, 1, 0), (0, 2)), W)
case("sum_int_dims02", lambda x: x.sum((0, 2)), ints(3, 4, 5), dtypes=("int64",))

with open(OUT, "w") as f:
    f.write("# Generated by gen_reduction.py with torch " + torch.__version__ + "; do not edit.\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
