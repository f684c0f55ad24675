# Writes elementwise_more.txt and elementwise_more_repr.txt for test_elementwise_more.cpp: the maths and
# activations of issue 11 (trigonometry, logarithms, rounding, remainders, integer powers, lerp, tensor
# clamps, torch.nn's activations) with PyTorch's outputs, grad_fn names, gradients, error messages and
# printed modules.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_elementwise_more.py
#
# Per case and dtype: `<case>.<dtype>.in<i>` (the leaves), `.out`, a random weight `.w` of out's shape
# and `.g<i>`, the gradient of (out * w).sum() for each floating input, plus `# grad_fn <key> <name>`.
# Error messages are `# error <name> <message>` lines; QuickGELU (not in torch 1.13) is its formula.
import os
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from golden_writer import tensor_line

HERE = os.path.dirname(os.path.abspath(__file__))
lines = []

INF, NAN = float("inf"), float("nan")
# The special values every unary map sees once: infinities, NaN, both zeros, and ordinary numbers.
SPECIAL = [INF, -INF, NAN, 0.0, -0.0, 0.5, -0.5, 2.5, -3.5, 1.0, -1.0, 7.0]


def put(name, t):
    lines.append(tensor_line(name, t))


def case(name, fn, make_inputs, dtypes=("float32", "float64")):
    """Records fn(*inputs) for each dtype. make_inputs(gen) returns float64 or int64 tensors; float64
    ones are cast to the case's dtype and require grad (int64 ones are kept)."""
    seed = zlib.crc32(name.encode())
    base = make_inputs(torch.Generator().manual_seed(seed))
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
            w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
            put(f"{key}.w", w.to(out.dtype))
            (out * w.to(out.dtype)).sum().backward()
            for i, t in enumerate(ins):
                if t.requires_grad:
                    put(f"{key}.g{i}", t.grad)


def randn(*shape, scale=1.0):
    return lambda g: torch.randn(shape, generator=g, dtype=torch.float64) * scale


def uniform(lo, hi, *shape):
    return lambda g: torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo


def values(*vs):
    return lambda g: torch.tensor(vs, dtype=torch.float64)


def ints(*vs):
    return lambda g: torch.tensor(vs, dtype=torch.int64)


def inputs(*makers):
    return lambda g: [m(g) for m in makers]


def error(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the message is what is recorded
        lines.append(f"# error {name} {str(e).splitlines()[0]}")
        return
    raise AssertionError(f"{name} did not raise")


special = inputs(values(*SPECIAL))

# ---- maths of one operand: random values in the domain, then the special values ---------------------
unary = {
    "erf": (torch.erf, randn(3, 4)),
    "sin": (torch.sin, randn(3, 4, scale=3)),
    "cos": (torch.cos, randn(3, 4, scale=3)),
    "tan": (torch.tan, uniform(-1.4, 1.4, 3, 4)),
    "asin": (torch.asin, uniform(-0.95, 0.95, 3, 4)),
    "acos": (torch.acos, uniform(-0.95, 0.95, 3, 4)),
    "atan": (torch.atan, randn(3, 4, scale=3)),
    "sinh": (torch.sinh, randn(3, 4, scale=2)),
    "cosh": (torch.cosh, randn(3, 4, scale=2)),
    "log2": (torch.log2, uniform(0.1, 5, 3, 4)),
    "log10": (torch.log10, uniform(0.1, 5, 3, 4)),
    "log1p": (torch.log1p, uniform(-0.9, 3, 3, 4)),
    "expm1": (torch.expm1, randn(3, 4, scale=1e-3)),
    "exp2": (torch.exp2, randn(3, 4, scale=3)),
    "sign": (torch.sign, randn(3, 4)),
    "floor": (torch.floor, randn(3, 4, scale=3)),
    "ceil": (torch.ceil, randn(3, 4, scale=3)),
    "round": (torch.round, values(0.5, 1.5, 2.5, -0.5, -1.5, 0.49, 2.51, -7.3)),
    "trunc": (torch.trunc, randn(3, 4, scale=3)),
}
for name, (fn, maker) in unary.items():
    case(name, fn, inputs(maker))
    case(name + "_special", fn, special)
    case(name + "_transposed", lambda x, fn=fn: fn(x.t()), inputs(uniform(0.1, 0.9, 3, 2)))
# Integer tensors: floating maths in float32; rounding and sign keep int64.
for name in ("sin", "exp2", "log1p", "sign", "floor", "round", "trunc", "ceil"):
    case(name + "_int", getattr(torch, name), inputs(ints(-3, 0, 2, 5)), dtypes=("int64",))

# ---- powers of integers, scalar bases ---------------------------------------------------------------
case("pow_int_7", lambda x: x.pow(7), inputs(ints(3, -2, 5, 0, 1, -1, 9)), dtypes=("int64",))
case("pow_int_big", lambda x: x.pow(40), inputs(ints(3, -2, 1)), dtypes=("int64",))  # wraps as int64
case("pow_int_0", lambda x: x.pow(0), inputs(ints(3, 0, -4)), dtypes=("int64",))
case("pow_int_half", lambda x: x.pow(0.5), inputs(ints(4, 2, 0)), dtypes=("int64",))
case("pow_int_tensor", lambda a, b: a.pow(b),
     inputs(ints(2, -3, 1, -1, -1, 5, 0), ints(10, 3, -4, -3, -2, -1, 0)), dtypes=("int64",))
case("rpow", lambda x: torch.pow(2.0, x), inputs(randn(2, 3)))
case("rpow_zero_base", lambda x: torch.pow(0.0, x), inputs(values(-1.0, 0.0, 2.0)))
case("rpow_int", lambda x: torch.pow(3, x), inputs(ints(0, 2, 5, -1)), dtypes=("int64",))
case("rpow_int_float_base", lambda x: torch.pow(1.5, x), inputs(ints(0, 2, -1)), dtypes=("int64",))
error("pow_int_negative", lambda: torch.tensor([2, 3]).pow(-1))

# ---- two operands --------------------------------------------------------------------------------
case("atan2", torch.atan2, inputs(randn(2, 3), randn(3)))
case("atan2_special", torch.atan2, inputs(values(0.0, -0.0, 0.0, -0.0, 1.0, INF, -INF, NAN),
                                          values(0.0, 0.0, -0.0, -0.0, 0.0, INF, 1.0, 1.0)))
divisor = uniform(0.5, 2.0, 3)
case("remainder", torch.remainder, inputs(randn(2, 3, scale=4), lambda g: divisor(g) * torch.tensor([1.0, -1.0, 1.0])))
case("fmod", torch.fmod, inputs(randn(2, 3, scale=4), lambda g: divisor(g) * torch.tensor([1.0, -1.0, 1.0])))
case("remainder_scalar", lambda x: torch.remainder(x, -1.5), inputs(randn(2, 3, scale=4)))
case("fmod_scalar", lambda x: torch.fmod(x, 1.5), inputs(randn(2, 3, scale=4)))
mod_special = inputs(values(5.0, -5.0, 5.0, -5.0, 0.0, -0.0, INF, 3.0, NAN, 3.0),
                     values(3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 2.0, INF, 1.0, 0.0))
case("remainder_special", torch.remainder, mod_special)
case("fmod_special", torch.fmod, mod_special)
case("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), inputs(randn(2, 3, scale=4), randn(3)))
case("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"), inputs(randn(2, 3, scale=4), randn(3)))
case("div_floor_scalar", lambda a: torch.div(a, -0.7, rounding_mode="floor"), inputs(randn(2, 3, scale=4)))
case("div_trunc_scalar", lambda a: torch.div(a, 0.7, rounding_mode="trunc"), inputs(randn(2, 3, scale=4)))
case("div_floor_special", lambda a, b: torch.div(a, b, rounding_mode="floor"), mod_special)
case("div_trunc_special", lambda a, b: torch.div(a, b, rounding_mode="trunc"), mod_special)
# (INT64_MIN by -1 traps in PyTorch itself: test_elementwise_more.cpp checks it without a golden value.)
int_a, int_b = ints(7, -7, 7, -7, 0, -9, 5), ints(2, 2, -2, -2, 3, -1, 1)
for name, fn in [("remainder", torch.remainder), ("fmod", torch.fmod),
                 ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
                 ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"))]:
    case(name + "_int", fn, inputs(int_a, int_b), dtypes=("int64",))
case("remainder_int_scalar", lambda a: torch.remainder(a, 3), inputs(ints(7, -7, 0)), dtypes=("int64",))
case("remainder_int_float_scalar", lambda a: torch.remainder(a, 2.5), inputs(ints(7, -7, 0)), dtypes=("int64",))
case("div_floor_int_scalar", lambda a: torch.div(a, -2, rounding_mode="floor"), inputs(ints(7, -7, 0)),
     dtypes=("int64",))
error("remainder_int_zero", lambda: torch.remainder(torch.tensor([1, 2]), torch.tensor([1, 0])))
error("div_int_zero", lambda: torch.div(torch.tensor([1, 2]), 0, rounding_mode="floor"))
error("div_bad_mode", lambda: torch.div(torch.ones(2), 2.0, rounding_mode="round"))

# lerp: scalar weights on both sides of 0.5 (PyTorch picks the nearer end), and a tensor weight.
case("lerp_scalar_low", lambda a, b: torch.lerp(a, b, 0.25), inputs(randn(2, 3), randn(3)))
case("lerp_scalar_high", lambda a, b: torch.lerp(a, b, 0.75), inputs(randn(2, 3), randn(2, 3)))
case("lerp_tensor", torch.lerp, inputs(randn(2, 3), randn(3), uniform(0, 1, 2, 1)))
error("lerp_dtype", lambda: torch.lerp(torch.ones(2), torch.ones(2, dtype=torch.float64), 0.5))

# clamp with tensor bounds (some max < min), clamp_min/clamp_max with tensors and scalars.
case("clamp_tensor", torch.clamp, inputs(randn(2, 4), randn(4), lambda g: torch.randn(2, 1, generator=g,
                                                                                        dtype=torch.float64) + 0.5))
case("clamp_tensor_min_only", lambda x, lo: torch.clamp(x, min=lo), inputs(randn(3, 4), randn(4)))
case("clamp_min_tensor", torch.clamp_min, inputs(randn(3, 4), randn(4)))
case("clamp_max_tensor", torch.clamp_max, inputs(randn(3, 4), randn(3, 1)))
case("clamp_min_scalar", lambda x: torch.clamp_min(x, -0.2), inputs(randn(3, 4)))
case("clamp_max_scalar", lambda x: torch.clamp_max(x, 0.3), inputs(randn(3, 4)))
case("clamp_tensor_nan", torch.clamp, inputs(values(NAN, 1.0, -2.0, 3.0), values(0.0, 0.0, 0.0, 0.0),
                                             values(1.0, 0.5, 1.0, 2.0)))
error("clamp_tensor_none", lambda: torch.clamp(torch.ones(2), None, None))

# ---- activations -------------------------------------------------------------------------------------
acts = {
    "silu": F.silu,
    "leaky_relu": F.leaky_relu,
    "leaky_relu_02": lambda x: F.leaky_relu(x, 0.2),
    "elu": F.elu,
    "elu_05": lambda x: F.elu(x, 0.5),
    "selu": F.selu,
    "celu": F.celu,
    "celu_2": lambda x: F.celu(x, 2.0),
    "celu_03": lambda x: F.celu(x, 0.3),
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=3.0),
    "mish": F.mish,
    "relu6": F.relu6,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "hardtanh": F.hardtanh,
    "hardtanh_wide": lambda x: F.hardtanh(x, -2.0, 3.0),
    "logsigmoid": F.logsigmoid,
    "softsign": F.softsign,
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
    "softmax_mod": nn.Softmax(dim=1),
    "log_softmax_mod": nn.LogSoftmax(dim=0),
}
for name, fn in acts.items():
    case(name, fn, inputs(randn(4, 5, scale=3)))
    if not name.endswith("_mod"):
        # The kinks (-3, 0, 3, 6 and the thresholds) and the special values.
        case(name + "_special", fn, inputs(values(*SPECIAL, 3.0, -3.0, 6.0, -1.0e-3, 1.5, 40.0, -40.0)))
        # Fewer elements than PyTorch's vector loop takes a step: all of them get its scalar formula.
        case(name + "_short", fn, inputs(values(3.0, -3.0, 6.0, 0.0, NAN, -INF)))
error("celu_zero", lambda: F.celu(torch.ones(2), 0.0))

with open(os.path.join(HERE, "elementwise_more.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")

modules = {
    "silu": nn.SiLU(), "leaky_relu": nn.LeakyReLU(), "leaky_relu_02": nn.LeakyReLU(0.2), "elu": nn.ELU(),
    "elu_05": nn.ELU(0.5), "selu": nn.SELU(), "celu": nn.CELU(), "softplus": nn.Softplus(),
    "softplus_beta": nn.Softplus(2.5, 10), "mish": nn.Mish(), "relu6": nn.ReLU6(), "hardswish": nn.Hardswish(),
    "hardsigmoid": nn.Hardsigmoid(), "hardtanh": nn.Hardtanh(), "hardtanh_wide": nn.Hardtanh(-2.0, 3.0),
    "logsigmoid": nn.LogSigmoid(), "softsign": nn.Softsign(), "softmax": nn.Softmax(dim=1),
    "log_softmax": nn.LogSoftmax(dim=-1),
    "sequential": nn.Sequential(nn.Linear(4, 3), nn.SiLU(), nn.Linear(3, 2), nn.LogSoftmax(dim=1)),
}
with open(os.path.join(HERE, "elementwise_more_repr.txt"), "w") as f:
    for name, m in modules.items():
        f.write(f"=== {name}\n{m}\n")
    f.write("=== quick_gelu\nQuickGELU()\n")  # not in torch 1.13: as an argument-less module prints
