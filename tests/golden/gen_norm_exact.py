# Writes norm_exact.txt: PyTorch 1.13's LayerNorm (forward and backward), bit for bit, on rows wide enough
# for every part of its CPU kernels, for test_nn_normalization.cpp's exact tests; and the RMSNorm
# composite on the same rows, also bit for bit; and the gradients of that composite on many rows (RMS_CASES).
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_norm_exact.py
#
# PyTorch's LayerNorm sums in AVX2 registers, lane by lane: its moments are Welford passes over chunks of
# 16 registers merged in a cascade, with a scalar pass over the elements after the last register; its
# backward sums g·x·w and g·w in registers. The widths here cover a row shorter than a register, a row
# with a partial chunk, and cascades 1 to 5 levels deep. The inputs are formulas of the indices
# (inputs() below; the test computes the same doubles with C's sin and cos, as Python's math module
# does, and rounds them to the dtype), so only the results are stored. One thread, as the weight and
# bias gradients are summed per thread.
import math
import os

import torch
import torch.nn.functional as F
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "norm_exact.txt")
torch.set_num_threads(1)

# (dtype, width, rows); LayerNorm without a weight and bias too for the narrower rows
CASES = [
    ("float32", 9, 2),
    ("float32", 100, 2),
    ("float32", 300, 2),
    ("float32", 1500, 1),
    ("float32", 2100, 1),
    ("float64", 9, 2),
    ("float64", 300, 2),
]

# (dtype, width, rows) for RMSNorm's gradients, as PyTorch's autograd computes them through the composite:
# many rows, so that the weight gradient's sum over the rows (PyTorch's order for a sum over leading
# dims) climbs every level of its cascade, with widths whose columns are summed in each of its ways
# (whole groups of four registers, registers, single columns, a single column) and rows left over. Only
# the first and last three rows of dx are stored.
RMS_CASES = [
    ("float32", 37, 4419),
    ("float32", 13, 17495),
    ("float32", 20, 300),
    ("float32", 6, 70),
    ("float32", 768, 96),
    ("float64", 1, 1030),
    ("float64", 130, 700),
]


def inputs(dt, width, rows):
    """x, the weight, the bias and the upstream gradient of a case."""
    dtype = getattr(torch, dt)

    def t(values, shape):
        return torch.tensor(values, dtype=torch.float64).reshape(shape).to(dtype)

    x = [math.sin(0.37 * (j + 1) + 1.3 * r) * (1 + r) + 0.25 * r - 2 for r in range(rows) for j in range(width)]
    w = [1 + 0.5 * math.sin(0.11 * j + 0.5) for j in range(width)]
    b = [0.1 * math.cos(0.23 * j) for j in range(width)]
    up = [math.cos(0.53 * (j + 1) + 0.7 * r) for r in range(rows) for j in range(width)]
    return t(x, (rows, width)), t(w, (width,)), t(b, (width,)), t(up, (rows, width))


lines = []
for dt, width, rows in CASES:
    key = f"{dt}.w{width}r{rows}"
    x, w, b, up = inputs(dt, width, rows)
    for affine in (True, False) if width <= 300 else (True,):
        xl = x.clone().requires_grad_()
        wl = w.clone().requires_grad_() if affine else None
        bl = b.clone().requires_grad_() if affine else None
        y = F.layer_norm(xl, (width,), wl, bl, 1e-5)
        (y * up).sum().backward()
        tag = "" if affine else "0"
        lines.append(tensor_line(f"{key}.y{tag}", y))
        lines.append(tensor_line(f"{key}.dx{tag}", xl.grad))
        if affine:
            lines.append(tensor_line(f"{key}.dw", wl.grad))
            lines.append(tensor_line(f"{key}.db", bl.grad))
    if width == 100:  # PyTorch's scalar path: a weight or a bias alone
        lines.append(tensor_line(f"{key}.y_w", F.layer_norm(x, (width,), w, None, 1e-5)))
        lines.append(tensor_line(f"{key}.y_b", F.layer_norm(x, (width,), None, b, 1e-5)))
    lines.append(tensor_line(f"{key}.rms", x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w))

for dt, width, rows in RMS_CASES:
    key = f"rms.{dt}.w{width}r{rows}"
    x, w, _, up = inputs(dt, width, rows)
    for affine in (True, False):
        xl = x.clone().requires_grad_()
        wl = w.clone().requires_grad_() if affine else None
        y = xl * torch.rsqrt(xl.pow(2).mean(-1, keepdim=True) + 1e-6)
        if affine:
            y = y * wl
        (y * up).sum().backward()
        tag = "" if affine else "0"
        lines.append(tensor_line(f"{key}.dx_head{tag}", xl.grad[:3]))
        lines.append(tensor_line(f"{key}.dx_tail{tag}", xl.grad[-3:]))
        if affine:
            lines.append(tensor_line(f"{key}.dw", wl.grad))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
