# Writes vec_math.txt: inputs and PyTorch's outputs for the kernels of src/kernels/cpu/vec_math.hpp,
# checked by test_vec_math.cpp.
#
# Run from the repository root with a Python that has torch (1.13, CPU capability AVX2):
#     /usr/bin/python3 tests/golden/gen_vec_math.py
#
# For every op and dtype the file holds `<op>.<dtype>.x` (256 inputs: edge cases, the op's useful range,
# tiny and huge magnitudes and random bit patterns) and `<op>.<dtype>.y`, PyTorch's result; the gelu
# backward cases also hold `.g`, the upstream gradient. 256 is a multiple of 16 and PyTorch runs on one
# thread here, so every element takes PyTorch's vectorised path: its elementwise loops hand the last
# (n mod 16) elements of each chunk to scalar code (std::exp, std::tanh ...), whose bits differ.
import os
import zlib

import torch
import torch.nn.functional as F
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vec_math.txt")
N = 256
torch.set_num_threads(1)
lines = []


def inputs(name, dtype, lo, hi, edges, positive=False):
    """N inputs for `name`: the edge values, uniform in [lo, hi], log-uniform magnitudes and random bits."""
    g = torch.Generator().manual_seed(zlib.crc32(f"{name}.{dtype}".encode()))
    finfo = torch.finfo(dtype)
    special = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), finfo.tiny, -finfo.tiny, finfo.max, -finfo.max,
               finfo.tiny * finfo.eps, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0] + list(edges)
    special = torch.tensor(special, dtype=torch.float64).to(dtype)
    n_rest = N - len(special)
    uniform = torch.rand(n_rest // 2, generator=g, dtype=torch.float64) * (hi - lo) + lo
    top = 38 if dtype == torch.float32 else 300
    exps = torch.rand(n_rest // 4, generator=g, dtype=torch.float64) * (2 * top) - top
    signs = torch.where(torch.rand(n_rest // 4, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
    magnitudes = signs * torch.pow(10.0, exps)
    n_bits = n_rest - uniform.numel() - magnitudes.numel()
    if dtype == torch.float32:
        bits = torch.randint(-2**31, 2**31, (n_bits,), generator=g, dtype=torch.int64).to(torch.int32)
        random_bits = bits.view(torch.float32)
    else:
        bits = torch.randint(-2**62, 2**62, (n_bits,), generator=g, dtype=torch.int64) * 2
        random_bits = bits.view(torch.float64)
    x = torch.cat([special, uniform.to(dtype), magnitudes.to(dtype), random_bits])
    assert x.numel() == N
    return x.abs() if positive else x


def put(name, t):
    lines.append(tensor_line(name, t))


def unary(name, fn, lo, hi, edges=(), positive=False):
    for dtype in (torch.float32, torch.float64):
        key = f"{name}.{str(dtype).replace('torch.', '')}"
        x = inputs(name, dtype, lo, hi, edges, positive)
        put(f"{key}.x", x)
        put(f"{key}.y", fn(x))


def backward(name, approximate, lo, hi):
    for dtype in (torch.float32, torch.float64):
        key = f"{name}.{str(dtype).replace('torch.', '')}"
        x = inputs(name, dtype, lo, hi, (-5.0, 5.0, 3.0, -3.0, 0.75, -0.75))
        g = torch.randn(N, generator=torch.Generator().manual_seed(zlib.crc32(key.encode())), dtype=dtype)
        put(f"{key}.x", x)
        put(f"{key}.g", g)
        put(f"{key}.y", torch.ops.aten.gelu_backward(g, x, approximate=approximate))


# Edges: where SLEEF switches range or saturates, and where the float32/float64 results under- or overflow.
unary("exp", torch.exp, -110.0, 100.0, (88.72, 88.73, -87.33, -103.9, -104.0, 100.0, 709.78, 709.79, -745.1, -1000.0))
unary("log", torch.log, 0.0, 100.0, (1.0 + 2**-23, 1.0 - 2**-24, 0.75, 1.5, 2.0**-130, 1e-300), positive=True)
unary("tanh", torch.tanh, -10.0, 10.0, (8.664339742, 8.67, 18.714973875, 18.72, 1e-4, -1e-4))
unary("sigmoid", torch.sigmoid, -40.0, 40.0, (88.0, -88.0, -104.0, 709.0, -745.0))
unary("erf", torch.erf, -6.0, 6.0, (1.1, 2.4, 4.0, 1.0, 3.7, 6.0, 1e-20, -1e-20))
unary("gelu", F.gelu, -8.0, 8.0, (-5.5, -3.0, 3.0, 1e-20))
unary("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), -8.0, 8.0, (-5.5, -3.0, 3.0, 1e-20))
unary("sqrt", torch.sqrt, 0.0, 100.0, (4.0, 1e-40), positive=True)
unary("rsqrt", torch.rsqrt, 0.0, 100.0, (4.0, 1e-40), positive=True)
# pow: PyTorch's special exponents (exact or sqrt-based) and general ones (SLEEF's pow); negative bases too.
# `pow<i>.<dtype>.e` holds the exponent (as a float64 scalar).
for i, e in enumerate((1.5, -0.7, 1.0 / 3.0, 7.0, -3.0, 0.5, -0.5, 2.0, 3.0, -1.0, -2.0, 0.0, 1.0)):
    unary(f"pow{i}", lambda x, e=e: torch.pow(x, e), -10.0, 10.0, (0.5, -0.5, 3.0, -3.0))
    for dtype in ("float32", "float64"):
        put(f"pow{i}.{dtype}.e", torch.tensor(e, dtype=torch.float64))
backward("gelu_backward", "none", -8.0, 8.0)
backward("gelu_tanh_backward", "tanh", -8.0, 8.0)
unary("silu", F.silu, -40.0, 40.0, (88.0, -88.0, -104.0, 709.0, -745.0))
unary("log1p", torch.log1p, -1.0, 100.0, (-1.0, -0.75, -0.5, 1e-8, -1e-8, 1e38, 2e38, 1e307, 2e307, -1.5, 3e-39))
unary("softplus", F.softplus, -40.0, 40.0, (20.0, 20.5, 19.9, -88.0, 88.0, -104.0))
unary("softplus_beta2", lambda x: F.softplus(x, beta=2.0, threshold=5.0), -20.0, 20.0, (2.5, 2.4, 2.6, -50.0))
# sin and cos within SLEEF's first range (|x| < 125 for float, 15 for double), where xgrad computes
# PyTorch's bits (beyond it, the C library's functions, within an ulp): the inputs are folded into it.
for name, fn in (("sin", torch.sin), ("cos", torch.cos)):
    for dtype in (torch.float32, torch.float64):
        key = f"{name}.{str(dtype).replace('torch.', '')}"
        limit = 124.0 if dtype == torch.float32 else 14.9
        x = inputs(name, dtype, -limit, limit, (3.14159265, 1.5707963, -1.5707963, 1e-8, 100.0, -100.0, 14.0))
        x = torch.where(x.abs() < limit, x, torch.remainder(x.nan_to_num(0.5, 2.0, -2.0), limit))
        put(f"{key}.x", x)
        put(f"{key}.y", fn(x))
# tan as sin and cos: within SLEEF's first range, the inputs folded into it. (exp2 is not here: PyTorch
# 1.13 computes it with the C library's exp2, element by element, as xgrad does.)
for dtype in (torch.float32, torch.float64):
    key = f"tan.{str(dtype).replace('torch.', '')}"
    limit = 124.0 if dtype == torch.float32 else 14.9
    x = inputs("tan", dtype, -limit, limit, (1.5707963, 1.5707964, -1.5707963, 3.14159265, 0.78539816, 1e-8, 100.0, 14.0))
    x = torch.where(x.abs() < limit, x, torch.remainder(x.nan_to_num(0.5, 2.0, -2.0), limit))
    put(f"{key}.x", x)
    put(f"{key}.y", torch.tan(x))
unary("atan", torch.atan, -10.0, 10.0, (0.9999, 1.0001, -1.0001, 1e-8, 1e8, -1e8, 1e30))
unary("asin", torch.asin, -1.0, 1.0, (0.4999, 0.5001, -0.5001, 0.99999, -0.99999, 1e-8, 1.0001, 0.75))
unary("acos", torch.acos, -1.0, 1.0, (0.4999, 0.5001, -0.5001, 0.99999, -0.99999, 1e-8, 1.0001, -0.75))
unary("sinh", torch.sinh, -20.0, 20.0, (88.7, 89.0, 89.1, -89.1, 709.8, 710.0, 710.5, 1e-8, -1e-8, 0.1))
unary("cosh", torch.cosh, -20.0, 20.0, (88.7, 89.0, 89.1, -89.1, 709.8, 710.0, 710.5, 1e-8, 0.1))
unary("log2", torch.log2, 0.0, 100.0, (1.0 + 2**-23, 1.0 - 2**-24, 0.75, 1.5, 2.0**-130, 1e-300, 8.0), positive=True)
unary("log10", torch.log10, 0.0, 100.0, (1.0 + 2**-23, 1.0 - 2**-24, 0.75, 1.5, 2.0**-130, 1e-300, 1e3), positive=True)
unary("expm1", torch.expm1, -40.0, 90.0, (88.72, 88.73, -16.63, -16.64, 709.78, 709.79, -36.73, -36.74, 1e-8, -1e-8))
unary("mish", F.mish, -40.0, 40.0, (20.0, -20.0, 88.0, -88.0, -104.0, 9.0, 10.0))
unary("log_sigmoid", F.logsigmoid, -40.0, 40.0, (88.0, -88.0, -104.0, 104.0, 709.0, -745.0))
for name, fn in (("mish_backward", lambda g, x: torch.ops.aten.mish_backward(g, x)),
                 ("log_sigmoid_backward",
                  lambda g, x: torch.ops.aten.log_sigmoid_backward(g, x, torch.ops.aten.log_sigmoid_forward(x)[1]))):
    for dtype in (torch.float32, torch.float64):
        key = f"{name}.{str(dtype).replace('torch.', '')}"
        x = inputs(name, dtype, -40.0, 40.0, (20.0, -20.0, 88.0, -88.0, -104.0, 5.0, -5.0))
        g = torch.randn(N, generator=torch.Generator().manual_seed(zlib.crc32(key.encode())), dtype=dtype)
        put(f"{key}.x", x)
        put(f"{key}.g", g)
        put(f"{key}.y", fn(g, x))
for dtype in (torch.float32, torch.float64):
    key = f"softplus_backward.{str(dtype).replace('torch.', '')}"
    x = inputs("softplus_backward", dtype, -40.0, 40.0, (20.0, 20.5, 19.9, -88.0, 88.0, -104.0))
    g = torch.randn(N, generator=torch.Generator().manual_seed(zlib.crc32(key.encode())), dtype=dtype)
    put(f"{key}.x", x)
    put(f"{key}.g", g)
    put(f"{key}.y", torch.ops.aten.softplus_backward(g, x, 1.0, 20.0))
for dtype in (torch.float32, torch.float64):
    key = f"silu_backward.{str(dtype).replace('torch.', '')}"
    x = inputs("silu_backward", dtype, -40.0, 40.0, (88.0, -88.0, -104.0, 709.0, -745.0, 5.0, -5.0))
    g = torch.randn(N, generator=torch.Generator().manual_seed(zlib.crc32(key.encode())), dtype=dtype)
    put(f"{key}.x", x)
    put(f"{key}.g", g)
    put(f"{key}.y", torch.ops.aten.silu_backward(g, x))
# pow of two tensors: `.x` the bases, `.g` the exponents. The first N pairs are inputs() bases with
# exponents that are integers (odd and even), halves, uniform, large or special; then every special
# base with every special exponent (a multiple of 16 too).
for dtype in (torch.float32, torch.float64):
    key = f"pow_tensor.{str(dtype).replace('torch.', '')}"
    x = inputs("pow_tensor", dtype, -10.0, 10.0, (0.5, -0.5, 3.0, -3.0))
    gen = torch.Generator().manual_seed(zlib.crc32(key.encode()))
    q = N // 4
    e = torch.cat([torch.randint(-9, 10, (q,), generator=gen).to(torch.float64),
                   torch.randint(-20, 21, (q,), generator=gen).to(torch.float64) / 2,
                   torch.rand(q, generator=gen, dtype=torch.float64) * 20 - 10,
                   torch.rand(q, generator=gen, dtype=torch.float64) * 200 - 100]).to(dtype)
    e_special = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 0.5, -0.5, float("inf"), float("-inf"),
                              float("nan"), 1e30, -1e30, 2.0**24 + 2, 2.0**53 + 2, 2.0**23 + 1], dtype=torch.float64)
    x_special = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, float("inf"), float("-inf"),
                              float("nan"), 1e-30, -1e-30, 1.0 + 2**-20, -(1.0 - 2**-20), 1e30], dtype=torch.float64)
    xs = x_special.repeat_interleave(16).to(dtype)
    es = e_special.repeat(16).to(dtype)
    x = torch.cat([x, xs])
    e = torch.cat([e, es])
    put(f"{key}.x", x)
    put(f"{key}.g", e)
    put(f"{key}.y", torch.pow(x, e))

# atan2 of two tensors: `.x` the first operand (y), `.g` the second (x). inputs() values against
# uniform, log-uniform and special ones; then every special value against every special value.
for dtype in (torch.float32, torch.float64):
    key = f"atan2.{str(dtype).replace('torch.', '')}"
    y = inputs("atan2", dtype, -10.0, 10.0, (1e-40, -1e-40, 3e-39, 1e-310, 5.0, -5.0))
    gen = torch.Generator().manual_seed(zlib.crc32(key.encode()))
    h = N // 2
    signs = torch.where(torch.rand(h, generator=gen) < 0.5, -1.0, 1.0).to(torch.float64)
    top = 38 if dtype == torch.float32 else 300
    x = torch.cat([torch.rand(h, generator=gen, dtype=torch.float64) * 20 - 10,
                   signs * torch.pow(10.0, torch.rand(h, generator=gen, dtype=torch.float64) * (2 * top) - top)]).to(dtype)
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-40,
                            2.9e-39, 1e-300, 1e30, -1e30, 0.5, -2.0, 3.0], dtype=torch.float64)
    y = torch.cat([y, special.repeat_interleave(16).to(dtype)])
    x = torch.cat([x, special.repeat(16).to(dtype)])
    put(f"{key}.x", y)
    put(f"{key}.g", x)
    put(f"{key}.y", torch.atan2(y, x))

# gelu's erf form by PyTorch's own vectorised formula, which it runs for float32 tensors it does not hand
# to oneDNN: here a dense transposed layout (not contiguous, still one vectorised run of 256).
def transposed(fn):
    def run(*ts):
        return fn(*(t.view(16, 16).t().contiguous().t() for t in ts)).reshape(-1)
    return run


unary("gelu_erf", transposed(F.gelu), -8.0, 8.0, (-5.5, -3.0, 3.0, 1e-20))
for dtype in (torch.float32, torch.float64):
    key = f"gelu_erf_backward.{str(dtype).replace('torch.', '')}"
    x = inputs("gelu_erf_backward", dtype, -8.0, 8.0, (-5.0, 5.0, 3.0, -3.0, 0.75, -0.75))
    g = torch.randn(N, generator=torch.Generator().manual_seed(zlib.crc32(key.encode())), dtype=dtype)
    put(f"{key}.x", x)
    put(f"{key}.g", g)
    put(f"{key}.y", transposed(lambda g_, x_: torch.ops.aten.gelu_backward(g_, x_))(g, x))

with open(OUT, "w") as f:
    f.write("# vec_math goldens from PyTorch " + torch.__version__ + " (gen_vec_math.py); one tensor per line\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
