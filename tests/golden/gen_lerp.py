# Writes lerp.txt: PyTorch 1.13's lerp, bit for bit, for test_elementwise_more.cpp's exact lerp test.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_lerp.py
#
# PyTorch computes weight < 0.5 ? self + weight * (end - self) : end - (end - self) * (1 - weight)
# per element, for a scalar and a tensor weight alike, and its AVX2 kernel's compiler fuses each form
# into one multiply-add: about a third of these results differ in the last bit from the unfused forms.
# Each line is a golden line (golden_writer.py): the inputs, then one result per weight.
import os

import torch
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lerp.txt")

g = torch.Generator().manual_seed(11)
a = torch.randn(2, 160, generator=g, dtype=torch.float64)
b = torch.randn(2, 160, generator=g, dtype=torch.float64) * 3
w = torch.rand(2, 160, generator=g, dtype=torch.float64) * 4 - 2
w[0, :8] = torch.tensor([0.5, 0.0, 1.0, -0.5, float("nan"), 0.49999, 0.5000001, -0.0], dtype=torch.float64)
row = torch.randn(160, generator=g, dtype=torch.float64)
col = torch.rand(2, 1, generator=g, dtype=torch.float64) * 2 - 0.5
SCALARS = [-0.6, 0.0, 0.3, 0.5, 0.7, 1.0, 1.2]

lines = []
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    A, B, W, R, C = (t.to(dt) for t in (a, b, w, row, col))
    for key, t in (("a", A), ("b", B), ("w", W), ("row", R), ("col", C)):
        lines.append(tensor_line(f"{name}.{key}", t))
    lines.append(tensor_line(f"{name}.tensor", torch.lerp(A, B, W)))
    for s in SCALARS:
        lines.append(tensor_line(f"{name}.scalar{s}", torch.lerp(A, B, s)))
    # a transposed self, a broadcast end row and a weight per row of the result
    lines.append(tensor_line(f"{name}.broadcast", torch.lerp(A.t().contiguous().t(), R, C)))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
