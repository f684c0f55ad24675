# Writes batch_norm.txt: PyTorch 1.13's batch_norm on the CPU (forward, backward and the running
# statistics), bit for bit, on shapes that run every part of its two CPU kernels, for
# test_conv.cpp's exact tests.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_batch_norm.py
#
# PyTorch takes its channels-last kernel for 2-D input (N, C) and channels-last input, and its contiguous
# kernel otherwise. The
# shapes cover both, with channel counts that leave channels over after whole AVX2 registers, images
# shorter than a register, images of odd and even length (float64's variance sum fuses the last product
# of an odd image), and images long enough for whole registers and a tail. The inputs are formulas of
# the indices (golden_writer.py's channel_inputs(); the test computes the same doubles with C's sin and
# cos, as Python's math module does, and rounds them to the dtype), so only the results are stored.
# One thread, as PyTorch's channels-last sums are per thread.
import os

import torch
import torch.nn.functional as F
from golden_writer import channel_inputs, tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batch_norm.txt")
torch.set_num_threads(1)

SHAPES = [(6, 4), (16, 8), (9, 13), (64, 7), (2, 3, 2), (3, 4, 3), (3, 5, 7), (2, 3, 40), (5, 3, 33), (3, 2, 65),
          (2, 2, 5, 7)]
# shapes also run without a weight and bias, in training without running statistics
PLAIN = [(9, 13), (3, 5, 7), (5, 3, 33)]



lines = []
for dt in ("float32", "float64"):
    for shape in SHAPES:
        key = dt + "." + "x".join(map(str, shape))
        x, up, w, b, rm, rv = channel_inputs(dt, shape)
        runs = [("train", True, True), ("eval", False, True)] + ([("plain", True, False)] if shape in PLAIN else [])
        for mode, training, affine in runs:
            xl = x.clone().requires_grad_()
            wl = w.clone().requires_grad_() if affine else None
            bl = b.clone().requires_grad_() if affine else None
            rml, rvl = (rm.clone(), rv.clone()) if affine else (None, None)
            y = F.batch_norm(xl, rml, rvl, wl, bl, training, 0.1, 1e-5)
            (y * up).sum().backward()
            k = f"{key}.{mode}"
            lines.append(tensor_line(k + ".y", y))
            lines.append(tensor_line(k + ".dx", xl.grad))
            if affine:
                lines.append(tensor_line(k + ".dw", wl.grad))
                lines.append(tensor_line(k + ".db", bl.grad))
            if training and affine:
                lines.append(tensor_line(k + ".rm", rml))
                lines.append(tensor_line(k + ".rv", rvl))

# Channels-last 4-D input, with a channels-last upstream gradient: PyTorch runs its channels-last kernels,
# which are its 2-D kernels on the (N·H·W, C) rows of the memory, and gives channels-last results. (With a
# contiguous gradient its backward takes another, element-by-element path, as a channels-last-3d 5-D input
# does.)
CHANNELS_LAST = [(3, 13, 4, 5), (2, 3, 1, 7)]
for dt in ("float32", "float64"):
    for shape in CHANNELS_LAST:
        key = dt + ".cl." + "x".join(map(str, shape))
        fmt = torch.channels_last
        x, up, w, b, rm, rv = channel_inputs(dt, shape)
        x, up = x.contiguous(memory_format=fmt), up.contiguous(memory_format=fmt)
        for mode, training in (("train", True), ("eval", False)):
            xl, wl, bl = x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()
            rml, rvl = rm.clone(), rv.clone()
            y = F.batch_norm(xl, rml, rvl, wl, bl, training, 0.1, 1e-5)
            assert y.is_contiguous(memory_format=fmt) and xl.grad is None
            (y * up).sum().backward()
            assert xl.grad.is_contiguous(memory_format=fmt)
            k = f"{key}.{mode}"
            lines.append(tensor_line(k + ".y", y))
            lines.append(tensor_line(k + ".dx", xl.grad))
            lines.append(tensor_line(k + ".dw", wl.grad))
            lines.append(tensor_line(k + ".db", bl.grad))
            if training:
                lines.append(tensor_line(k + ".rm", rml))
                lines.append(tensor_line(k + ".rv", rvl))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
