# Writes hardening.txt: what PyTorch 1.13 does with the bad inputs of test_bad_inputs.cpp and
# test_tensor.cpp's conversion cases: cast results and the wording of its errors.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_hardening.py
#
# Tensors are golden lines (golden_writer.py); each error is a line `# message <key> <text>` with
# PyTorch's message, which xgrad's message must contain.
import math
import os

import torch
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hardening.txt")
lines = []

# Float to integer casts of values int64 cannot hold: x86-64's "integer indefinite" value.
special = [math.nan, math.inf, -math.inf, 1e30, -1e30, 2.7, -2.7, 9.3e18, -9.3e18, 2.0**62, -(2.0**63)]
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    x = torch.tensor(special, dtype=dt)
    lines.append(tensor_line(f"cast.{name}.in", x))
    lines.append(tensor_line(f"cast.{name}.out", x.to(torch.int64)))


def message(key, fn):
    try:
        fn()
    except RuntimeError as e:
        lines.append(f"# message {key} {str(e).splitlines()[0]}")
        return
    raise SystemExit(f"{key}: PyTorch raised no error")


message("full_nan", lambda: torch.full((2,), math.nan, dtype=torch.int64))
message("fill_inf", lambda: torch.zeros(2, dtype=torch.int64).fill_(math.inf))


def inplace_direct():
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3)
    y = (w * x).sum()
    x.mul_(2)
    y.backward()


message("inplace", inplace_direct)
# In-place writes into an expanded tensor, and in-place results that do not fit self's dtype.
message("overlap", lambda: torch.zeros(1).expand(3).add_(1.0))
message("cast_float_long", lambda: torch.zeros(3, dtype=torch.int64).add_(1.5))
message("cast_long_bool", lambda: torch.zeros(3, dtype=torch.bool).add_(1))
message("cast_div_long", lambda: torch.zeros(3, dtype=torch.int64).div_(2))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
