# Writes group_norm.txt: PyTorch 1.13's group_norm on the CPU (forward and backward), bit for bit, on
# shapes that run every part of its CPU kernel, for test_conv.cpp's exact tests.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_group_norm.py
#
# PyTorch's backward sums over each channel's image and over each group's channels in AVX2 registers,
# then the elements left over, some of which its compiler vectorised in narrower registers. The
# shapes give images and groups with 0 to 7 elements left over after whole registers, and the weight
# and the bias alone, together, and neither. The inputs are formulas of the indices (golden_writer.py's
# channel_inputs(); the test computes the same doubles with C's sin and cos and rounds them to the
# dtype), so only the results are stored. One thread.
import os

import torch
import torch.nn.functional as F
from golden_writer import channel_inputs, tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "group_norm.txt")
torch.set_num_threads(1)

# (shape, groups): channels per group (D) 1 to 13, images of 1 to 23 elements
CASES = [((2, 6, 4, 3), 3), ((3, 4, 5), 2), ((2, 8, 7, 5), 4), ((2, 8, 37), 2), ((2, 16, 3, 11), 8), ((2, 12, 1), 3),
         ((2, 6, 2), 2), ((2, 10, 6), 2), ((2, 14, 7), 2), ((2, 18, 13), 2), ((1, 26, 15), 2), ((1, 13, 22), 1),
         ((2, 22, 3), 2), ((1, 14, 23), 7)]
# (shape, groups) also run with the weight alone, the bias alone (the forward only: PyTorch 1.13's
# backward throws then), and neither
MIXED = [((2, 6, 4, 3), 3), ((2, 14, 7), 2)]



lines = []
for dt in ("float32", "float64"):
    for shape, groups in CASES:
        key = f"{dt}.{'x'.join(map(str, shape))}.g{groups}"
        x, up, w, b, _, _ = channel_inputs(dt, shape)
        runs = ["wb"] + (["w", "b", "plain"] if (shape, groups) in MIXED else [])
        for mode in runs:
            xl = x.clone().requires_grad_()
            wl = w.clone().requires_grad_() if "w" in mode else None
            bl = b.clone().requires_grad_() if "b" in mode else None
            y = F.group_norm(xl, groups, wl, bl, 1e-5)
            k = f"{key}.{mode}"
            lines.append(tensor_line(k + ".y", y))
            if mode == "b":  # PyTorch 1.13's backward fails without a weight: "tensor does not have a device"
                continue
            (y * up).sum().backward()
            lines.append(tensor_line(k + ".dx", xl.grad))
            if wl is not None:
                lines.append(tensor_line(k + ".dw", wl.grad))
            if bl is not None:
                lines.append(tensor_line(k + ".db", bl.grad))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
