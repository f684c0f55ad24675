# Writes elementwise.txt: inputs, outputs, gradients and grad_fn names from PyTorch for test_elementwise.cpp.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_elementwise.py
#
# For every case and dtype the file holds `<case>.<dtype>.in<i>` (the leaves), `.out`, a random weight
# `.w` of out's shape and `.g<i>`, the gradient of (out * w).sum() with respect to floating input i,
# plus a comment line `# grad_fn <case>.<dtype> <name>`. The C++ test applies the same function to
# the same leaves, so views (transpose, slicing) are part of the function, not of the stored inputs.
import os
import zlib

import torch
import torch.nn.functional as F
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elementwise.txt")
lines = []


def put(name, t):
    lines.append(tensor_line(name, t))


def gen(seed):
    g = torch.Generator().manual_seed(seed)
    return g


def case(name, fn, make_inputs, dtypes=("float32", "float64")):
    """Records fn(*inputs) for each dtype. make_inputs(gen) returns float64 or int64 tensors; float64
    ones are cast to the case's dtype (int64 ones are kept)."""
    seed = zlib.crc32(name.encode())
    base = make_inputs(gen(seed))
    for dt in dtypes:
        key = f"{name}.{dt}"
        ins = []
        for t in base:
            t = t.detach().to(getattr(torch, dt)).clone() if t.is_floating_point() else t.clone()
            if t.is_floating_point():
                t.requires_grad_(True)
            ins.append(t)
        for i, t in enumerate(ins):
            put(f"{key}.in{i}", t)
        out = fn(*ins)
        put(f"{key}.out", out)
        if out.requires_grad:
            lines.append(f"# grad_fn {key} {out.grad_fn.name()}")
            w = torch.randn(out.shape, generator=gen(seed + 1), dtype=torch.float64).to(out.dtype)
            put(f"{key}.w", w)
            (out * w).sum().backward()
            for i, t in enumerate(ins):
                if t.requires_grad:
                    put(f"{key}.g{i}", t.grad)


def randn(*shape):
    return lambda g: torch.randn(shape, generator=g, dtype=torch.float64)


def positive(*shape):
    """Values in [0.5, 2): inside the domain of log, sqrt, pow and away from division by zero."""
    return lambda g: torch.rand(shape, generator=g, dtype=torch.float64) * 1.5 + 0.5


def inputs(*makers):
    return lambda g: [m(g) for m in makers]


def with_zeros(*shape):
    """randn with every third element exactly 0, where abs and relu have a kink."""
    def make(g):
        t = torch.randn(shape, generator=g, dtype=torch.float64)
        t.view(-1)[::3] = 0.0
        return t
    return make


# ---- arithmetic, tensor op tensor, with broadcasting ----------------------------------------------
case("add_bcast", lambda a, b: a + b, inputs(randn(2, 3), randn(3)))
case("add_same", lambda a, b: a + b, inputs(randn(2, 3), randn(2, 3)))
case("sub_bcast", lambda a, b: a - b, inputs(randn(3, 1), randn(2, 1, 4)))
case("mul_bcast", lambda a, b: a * b, inputs(randn(2, 1), randn(1, 4)))
case("mul_scalar_tensor", lambda a, b: a * b, inputs(randn(2, 3), randn()))
case("div_bcast", lambda a, b: a / b, inputs(randn(4, 1, 3), positive(2, 1)))
case("div_same", lambda a, b: a / b, inputs(randn(2, 3), positive(2, 3)))
# Non-contiguous operands: a transposed tensor, and slices with step 2 along each dim.
case("add_transposed", lambda a, b: a.t() + b, inputs(randn(2, 3), randn(3, 2)))
case("mul_sliced_rows", lambda a, b: a[::2] * b, inputs(randn(4, 3), randn(2, 3)))
case("sub_sliced_cols", lambda a, b: a[:, ::2] - b.t(), inputs(randn(2, 6), randn(3, 2)))
case("div_transposed", lambda a, b: a / b.transpose(0, 1), inputs(randn(3, 2), positive(2, 3)))

# ---- with a Python number on either side ------------------------------------------------------------
case("add_scalar", lambda x: x + 1.5, inputs(randn(2, 3)))
case("radd_scalar", lambda x: 1.5 + x, inputs(randn(2, 3)))
case("sub_scalar", lambda x: x - 1.5, inputs(randn(2, 3)))
case("rsub_scalar", lambda x: 2.0 - x, inputs(randn(2, 3)))
case("mul_scalar", lambda x: x * 2.5, inputs(randn(2, 3)))
case("rmul_scalar", lambda x: 2.5 * x, inputs(randn(2, 3)))
case("div_scalar", lambda x: x / 3.0, inputs(randn(2, 3)))
case("rdiv_scalar", lambda x: 1.0 / x, inputs(positive(2, 3)))
case("neg", lambda x: -x, inputs(randn(2, 3)))
case("neg_transposed", lambda x: -x.t(), inputs(randn(2, 3)))

# ---- powers, roots, exponentials ---------------------------------------------------------------------
case("pow_2", lambda x: x.pow(2.0), inputs(randn(2, 3)))
case("pow_3", lambda x: x.pow(3.0), inputs(randn(2, 3)))
# PyTorch's gradient is g * (e * x.pow(e - 1)): with e = 3 every step is exact or one rounding, so the
# C++ test compares it bit for bit ((g * x.pow(2)) * 3 differs in the last bit for about a third of them).
case("pow_3_order", lambda x: x.pow(3.0), inputs(positive(8, 8)))
case("pow_half", lambda x: x.pow(0.5), inputs(positive(2, 3)))
case("pow_minus1", lambda x: x.pow(-1.0), inputs(positive(2, 3)))
case("pow_tensor", lambda a, b: a.pow(b), inputs(positive(2, 3), randn(3)))
# 0 ** 0, 0 ** 2 and 0 ** -1: PyTorch's gradients are 0 there (no 0 * inf), and d/db 0 ** b is 0 for b >= 0.
case("pow_tensor_zero_base",
     lambda a, b: a.pow(b),
     lambda g: [torch.tensor([0.0, 0.0, 2.0, 1.5, 0.0], dtype=torch.float64),
                torch.tensor([0.0, 2.0, 0.0, -1.0, -1.0], dtype=torch.float64)])
# x ** 0 is 1 even at 0; 0 ** e is inf for e < 0.
case("pow_0", lambda x: x.pow(0.0), inputs(with_zeros(2, 3)))
case("pow_scalar_zero_base", lambda x: x.pow(-2.0), lambda g: [torch.tensor([0.0, 1.5, -2.0], dtype=torch.float64)])
case("rdiv_zero", lambda x: 1.0 / x, lambda g: [torch.tensor([0.0, 2.0, -4.0], dtype=torch.float64)])
case("sqrt", lambda x: x.sqrt(), inputs(positive(2, 3)))
case("rsqrt", lambda x: x.rsqrt(), inputs(positive(2, 3)))
case("exp", lambda x: x.exp(), inputs(randn(2, 3)))
case("exp_sliced", lambda x: x[:, 1::2].exp(), inputs(randn(3, 5)))
case("log", lambda x: x.log(), inputs(positive(2, 3)))
case("abs", lambda x: x.abs(), inputs(with_zeros(3, 4)))

# ---- activations ---------------------------------------------------------------------------------
case("tanh", lambda x: x.tanh(), inputs(randn(3, 4)))
case("sigmoid", lambda x: x.sigmoid(), inputs(randn(3, 4)))
case("relu", lambda x: x.relu(), inputs(with_zeros(3, 4)))
case("gelu", lambda x: F.gelu(x), inputs(randn(3, 4)))
case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), inputs(randn(3, 4)))
case("tanh_transposed", lambda x: x.t().tanh(), inputs(randn(3, 4)))

# ---- selections ------------------------------------------------------------------------------------


def ties(g):
    """Two (3, 4) tensors of small integers (as floats), so that many elements are equal."""
    a = torch.randint(-2, 3, (3, 4), generator=g).double()
    b = torch.randint(-2, 3, (3, 4), generator=g).double()
    return [a, b]


case("maximum", lambda a, b: torch.maximum(a, b), inputs(randn(3, 4), randn(3, 4)))
case("minimum", lambda a, b: torch.minimum(a, b), inputs(randn(3, 4), randn(3, 4)))
case("maximum_ties", lambda a, b: torch.maximum(a, b), ties)
case("minimum_ties", lambda a, b: torch.minimum(a, b), ties)
case("maximum_bcast", lambda a, b: torch.maximum(a, b), inputs(randn(3, 4), randn(4)))
case("clamp_both", lambda x: x.clamp(-0.5, 0.7), inputs(randn(3, 4)))
case("clamp_min", lambda x: x.clamp(min=-0.5), inputs(randn(3, 4)))
case("clamp_max", lambda x: x.clamp(max=0.7), inputs(randn(3, 4)))

# NaN propagates through maximum, minimum, clamp and relu; PyTorch's backward formulas decide
# where its gradient goes.
NAN = float("nan")
nans = lambda g: [torch.tensor([NAN, 1.0, -5.0, 2.0, NAN, 0.5], dtype=torch.float64),
                  torch.tensor([0.0, NAN, 0.0, 2.0, NAN, -0.5], dtype=torch.float64)]
case("maximum_nan", lambda a, b: torch.maximum(a, b), nans)
case("minimum_nan", lambda a, b: torch.minimum(a, b), nans)
case("clamp_nan", lambda a: a.clamp(-1.0, 1.5), lambda g: nans(g)[:1])
case("relu_nan", lambda a: a.relu(), lambda g: nans(g)[:1])
# A fractional bound promotes int64 to float32; an integral one keeps int64.
case("clamp_int_fractional", lambda a: a.clamp(min=0.5), lambda g: [torch.tensor([-3, 1, 5])], dtypes=("int64",))
case("clamp_int_integral", lambda a: a.clamp(-1, 2), lambda g: [torch.tensor([-3, 1, 5])], dtypes=("int64",))

# ---- int64: kept where PyTorch keeps it, promoted where it promotes ---------------------------------


def ints(*shape):
    return lambda g: torch.randint(-9, 10, shape, generator=g)


case("add_int", lambda a, b: a + b, inputs(ints(2, 3), ints(3)), dtypes=("int64",))
case("mul_int", lambda a, b: a * b, inputs(ints(2, 3), ints(2, 3)), dtypes=("int64",))
case("sub_int_scalar", lambda a: a - 4, inputs(ints(2, 3)), dtypes=("int64",))
case("neg_int", lambda a: -a, inputs(ints(2, 3)), dtypes=("int64",))
case("div_int", lambda a, b: a / b, lambda g: [torch.tensor([7, -7, 9]), torch.tensor([2, 2, -4])], dtypes=("int64",))
case("add_int_float", lambda a, b: a + b, inputs(ints(2, 3), randn(2, 3)), dtypes=("float32",))
case("mul_float_int", lambda a, b: a * b, inputs(randn(2, 3), ints(3)), dtypes=("float32", "float64"))

with open(OUT, "w") as f:
    f.write("# Generated by gen_elementwise.py with torch " + torch.__version__ + "; do not edit.\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
