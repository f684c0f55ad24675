# Writes cdist.txt: PyTorch 1.13's torch.cdist through its direct CPU kernel (compute_mode
# "donot_use_mm_for_euclid_dist"), forward and backward, bit for bit, for 1 to 25 features, for
# test_nn_gaps.cpp's exact tests.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_cdist.py
#
# PyTorch's forward for p = 2 adds the squares in order, but its compiler vectorised the loop: the squares
# in whole registers are rounded apart from the sum and the ones left over fused with it, so which is
# which depends on the number of features. The inputs are formulas of the indices (inputs() below; the
# test computes the same doubles with C's sin and cos and rounds them to the dtype), so only the results
# are stored. One thread.
import math
import os

import torch
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cdist.txt")
torch.set_num_threads(1)

FEATURES = list(range(1, 18)) + [24, 25]
POWERS = [2.0, 3.0, 0.5]


def inputs(dt, m):
    """x (6, m), y (5, m) and the upstream gradient (6, 5)."""
    dtype = getattr(torch, dt)

    def t(values, s):
        return torch.tensor(values, dtype=torch.float64).reshape(s).to(dtype)

    x = [math.sin(0.37 * (k + 1)) * 2 + 0.5 + 0.1 * (k % 3) for k in range(6 * m)]
    y = [math.cos(0.53 * (k + 1)) * 1.5 for k in range(5 * m)]
    up = [math.sin(0.71 * (k + 1)) for k in range(30)]
    return t(x, (6, m)), t(y, (5, m)), t(up, (6, 5))


lines = []
for dt in ("float32", "float64"):
    for m in FEATURES:
        for p in POWERS:
            x, y, up = inputs(dt, m)
            x.requires_grad_()
            y.requires_grad_()
            d = torch.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist")
            (d * up).sum().backward()
            k = f"{dt}.m{m}.p{p:g}"
            lines.append(tensor_line(k + ".d", d))
            lines.append(tensor_line(k + ".gx", x.grad))
            lines.append(tensor_line(k + ".gy", y.grad))

# Many rows on the other side and long rows, p = 1 and 2: xgrad's kernels put pairs (forward) and
# features (backward) side by side in vector lanes, in blocks of up to 64, so these reach every block
# size on every instruction set. x (3, m), y (65, m), the upstream gradient (3, 65); y's gradient for
# m = 17 only (for 65 features it would be 4225 numbers, and x's covers the same kernel).
for dt in ("float32", "float64"):
    dtype = getattr(torch, dt)
    for m in (17, 65):
        for p in (1.0, 2.0):
            def t(values, s):
                return torch.tensor(values, dtype=torch.float64).reshape(s).to(dtype)

            x = t([math.sin(0.37 * (k + 1)) * 2 + 0.5 for k in range(3 * m)], (3, m)).requires_grad_()
            y = t([math.cos(0.53 * (k + 1)) * 1.5 for k in range(65 * m)], (65, m)).requires_grad_(m == 17)
            up = t([math.sin(0.71 * (k + 1)) for k in range(3 * 65)], (3, 65))
            d = torch.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist")
            (d * up).sum().backward()
            k = f"wide.{dt}.m{m}.p{p:g}"
            lines.append(tensor_line(k + ".d", d))
            lines.append(tensor_line(k + ".gx", x.grad))
            if m == 17:
                lines.append(tensor_line(k + ".gy", y.grad))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
