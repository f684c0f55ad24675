# Writes layout.txt: the strides PyTorch 1.13 gives the results of elementwise ops on permuted,
# transposed and sliced operands (TensorIterator's output layout), for test_elementwise.cpp.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_layout.py
#
# Each result is a golden line (golden_writer.py) of its strides as int64, `<case>.strides`. The
# operands are made the same way in the test, from arange() so that no random numbers are involved.
import os

import torch
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layout.txt")


def ar(*shape):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n, dtype=torch.float32).reshape(shape) / 7 + 1


t = ar(4, 3).t()                       # (3, 4), strides (1, 3)
c = ar(3, 4)                           # contiguous (3, 4)
p = ar(2, 3, 4).permute(2, 0, 1)       # (4, 2, 3), strides (1, 12, 4)
s = ar(4, 3).t().narrow(1, 0, 2)       # (3, 2), strides (1, 3): not dense
nhwc = ar(2, 4, 5, 3).permute(0, 3, 1, 2)  # (2, 3, 4, 5), channels last
col = ar(3, 1)
one = ar(3, 1).t()                     # (1, 3), strides (1, 1)
cases = {
    "t.exp": t.exp(),
    "t.mul_scalar": t * 2.0,
    "t.add_t": t + t,
    "t.mul_c": t * c,
    "c.mul_t": c * t,
    "t.add_row": t + ar(4),
    "t.mul_col": t * col,
    "col.sub_t": col - t,
    "p.add_scalar": p + 1.0,
    "p.mul_p": p * p,
    "p.mul_bcast": p * ar(4, 1, 1),
    "p.add_row": p + ar(3),
    "p.neg": -p,
    "s.mul_scalar": s * 2.0,
    "s.add_s": s + s,
    "nhwc.mul_channel": nhwc * ar(1, 3, 1, 1),
    "nhwc.relu": torch.relu(nhwc),
    "nhwc.add_nhwc": nhwc + nhwc,
    "nhwc.mul_c": nhwc * ar(2, 3, 4, 5),
    "one.exp": one.exp(),
    "one.add_row": one + ar(3),
}
lines = [tensor_line(f"{k}.strides", torch.tensor(v.stride(), dtype=torch.int64)) for k, v in cases.items()]
with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
