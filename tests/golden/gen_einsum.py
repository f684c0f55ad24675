# Writes einsum.txt: inputs, outputs and gradients of torch.einsum for test_einsum.cpp.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_einsum.py
#
# For every case and dtype the file holds `<case>.<dtype>.in<i>` (the leaves), `.out`, a random weight
# `.w` of out's shape and `.g<i>`, the gradient of (out * w).sum() with respect to input i (see
# golden_writer.record_case). The equation of case k is on a line `# equation <case> <equation>`.
# torch 1.13 here has no opt_einsum, so it contracts the operands left to right, as xgrad does.
# The error messages xgrad matches (torch's RuntimeError texts) are written as `# error` lines:
# `# error <equation>|<operand shapes>|<message>`.
import os

import torch
import torch.backends.opt_einsum
from golden_writer import record_case

assert not torch.backends.opt_einsum.is_available(), "the cases assume left-to-right contraction"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "einsum.txt")
lines = []

both = ("float32", "float64")
CASES = [
    # name, equation, operand shapes, dtypes
    ("matmul", "ij,jk->ik", [(3, 4), (4, 5)], both),
    ("matmul_implicit", "ij,jk", [(3, 4), (4, 5)], both),
    ("transpose", "ij->ji", [(2, 3)], both),
    ("sum_all", "ij->", [(2, 3)], both),
    ("sum_dim", "ijk->ik", [(2, 3, 4)], both),
    ("trace", "ii", [(4, 4)], both),
    ("diagonal", "ii->i", [(3, 3)], both),
    ("diag3", "iij->ji", [(3, 3, 2)], both),
    ("triple_diag", "iii->i", [(3, 3, 3)], both),
    ("outer", "i,j->ij", [(3,), (4,)], both),
    ("dot", "i,i->", [(5,)] * 2, both),
    ("hadamard", "ij,ij->ij", [(2, 3), (2, 3)], both),
    ("bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], both),
    ("batch_ellipsis", "...ij,...jk->...ik", [(2, 3, 4), (4, 5)], both),
    ("ellipsis_implicit", "...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)], both),
    ("ellipsis_middle", "a...b,b...->a...", [(2, 3, 4), (4, 3)], both),
    ("ellipsis_dropped", "...ij->ij", [(2, 3, 4)], both),
    ("ellipsis_only", "...", [(2, 3)], both),
    ("attention", "bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)], both),
    ("bilinear", "bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)], both),
    ("three_chain", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], both),
    ("four_ops", "ab,bc,cd,de->ae", [(2, 3), (3, 2), (2, 4), (4, 3)], both),
    ("sum_early", "ij,jk->j", [(3, 4), (4, 5)], both),
    ("broadcast_label", "ij,ij->ij", [(2, 1), (2, 3)], both),
    ("diag_and_contract", "iij,jk->ik", [(3, 3, 4), (4, 2)], both),
    ("upper_lower", "Ab,bA->A", [(3, 4), (4, 3)], both),
    ("implicit_order", "ba,ac", [(2, 3), (3, 4)], both),
    ("spaces", " i j , j k -> k i ", [(2, 3), (3, 4)], both),
    ("scalar", ",ij->ij", [(), (2, 3)], both),
    ("scalar_only", "", [()], both),
    ("kept_summed_one", "ij,jk->ik", [(3, 1), (1, 5)], both),
    ("separate_sums", "ij,kl->", [(2, 3), (4, 5)], both),
]
for name, eq, shapes, dts in CASES:
    lines.append(f"# equation {name} {eq}")
    record_case(lines, name, lambda *ops, eq=eq: torch.einsum(eq, *ops), shapes, dts)

ERRORS = [
    ("ij->k", [(2, 3)]),
    ("ij", [(2, 3), (2, 3)]),
    ("ij,jk", [(2, 3)]),
    ("i", [(2, 3)]),
    ("...ijk", [(2, 3)]),
    ("i.j", [(2, 3)]),
    ("...i...", [(2, 3)]),
    ("ij->ii", [(2, 3)]),
    ("ij->i->j", [(2, 3)]),
    (" i1", [(2, 3)]),
    ("ii", [(2, 3)]),
    ("ij,ij->ij", [(2, 3), (3, 2)]),
    ("...i,...i", [(2, 2, 3), (5, 2, 3)]),
    ("ij->..", [(2, 3)]),
    ("...ij->......", [(2, 3)]),
]
for eq, shapes in ERRORS:
    try:
        torch.einsum(eq, *[torch.zeros(s) for s in shapes])
        raise SystemExit(f"{eq}: torch accepted it")
    except RuntimeError as e:
        msg = str(e).split("\n")[0]
    lines.append("# error " + eq + "|" + ";".join(",".join(map(str, s)) for s in shapes) + "|" + msg)
# Mixed dtypes: torch's bmm says "expected scalar type Float but found Double"; xgrad says so naming einsum.

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
