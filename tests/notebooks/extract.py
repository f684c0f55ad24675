#!/usr/bin/env python3
"""Extracts the outputs printed in the notebooks of ../shared/notebooks into tests/notebooks/<id>.txt.

Run by hand from anywhere, with the shared notebooks present:
    python3 tests/notebooks/extract.py [NOTEBOOK_DIR]
The text of every block is copied verbatim from the notebook; this script only says where each
output is (its cell, the start of its first line, its number of lines) and whether the examples must
reproduce it ("checked") or cannot ("skipped", with the reason). The checker
(tests/notebooks/check_notebook.cpp) then requires every checked block, whole lines, in the example's
output, in the order listed here: the order in which the notebook's cells ran.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE.parents[1].parent / "shared" / "notebooks"

# Reasons shared by several blocks.
ENV = "environment: the notebook's torch version and device, not computed values"
UNSEEDED = "unseeded torch.randn: the values cannot be reproduced (the example seeds it)"
NOT_113 = ("not reproducible by PyTorch 1.13: from the same seed it prints -9.9341e-09 (sci) / -0.0000 "
           "for the second row; the notebook's last-bit rounding of Linear's output differs")

# For each notebook: the example that reproduces it, then its output blocks in execution order as
# (cell, first characters of the block's first line, number of lines, None or why it is skipped).
# A numbered cell is found by its unique "In [n]:" header; "In [None]" blocks are searched from the
# end of the previous block.
NOTEBOOKS = {
    "000_35d798210eca587f": ("layernorm_torch_vs_manual", [
        ("In [61]", "TORCH VERSION : ", 2, ENV),
        ("In [64]", "output tensor(", 2, None),
        ("In [64]", "*****", 3, None),                      # stars, Before LayerNorm, stars
        ("In [64]", "Mean tensor([[0.2444]", 2, None),
        ("In [64]", "Var tensor([[0.0534]", 2, None),
        ("In [64]", "*****\nAfter", 3, None),               # stars, After LayerNorm, stars
        ("In [64]", ">> Cal it manually", 1, None),
        ("In [64]", "Mean tensor([[     0.0000]", 2, None),
        ("In [64]", "Var tensor([[1.0000]", 2, None),
        ("In [64]", ">> Cal it nn.LayeNorm", 1, None),
        ("In [64]", "Mean tensor([[    -0.0000]", 2, None),
        ("In [64]", "Var tensor([[1.4996]", 2, None),
        ("In [66]", "tensor([[[     1.1169", 11, None),
        ("In [75]", "tensor([[0.9024", 5, None),            # In [74] and In [75] ran before In [89]
        ("In [90]", "torch.Size([1, 10, 12])", 1, None),
        ("In [92]", "torch.Size([1, 10, 12])", 1, None),
        # In [93]'s figures depend on how many numbers the hidden cells In [76] to In [88] drew; the
        # example uses a count for which PyTorch 1.13 prints all of them (see its kHiddenDraws).
        ("In [93]", "*****", 3, None),
        ("In [93]", "Mean tensor(0.1235", 1, None),
        ("In [93]", "Var tensor(0.0346", 1, None),
        ("In [93]", "*****\nAfter", 3, None),
        ("In [93]", ">> Class : LayerNormalization", 1, None),
        ("In [93]", "Mean tensor(    0.0000", 1, None),
        ("In [93]", "Var tensor(1.0007", 1, None),
        ("In [93]", ">> Class : RMSLayerNormalization", 1, None),
        ("In [93]", "Mean tensor(0.5532", 1, None),
        ("In [93]", "Var tensor(0.6944", 1, None),
    ]),
    "001_2930b149b504bbbf": ("giagrad_layernorm", []),  # an API page: its examples print nothing
    "002_4c7b76a36071cd58": ("layernorm_from_scratch", [
        ("In [3]", "torch.Size([2, 5])", 1, None),
        ("In [3]", "tensor([[0.2260", 3, None),
        ("In [3]", "torch.Size([2, 6])", 1, None),
        ("In [None]", "tensor([[0.1324]", 2, None),         # print(mean)
        ("In [None]", "tensor([[0.1324]", 2, None),         # print(variance): the mean again, see the example
        ("In [13]", "tensor([[ 0.2570", 3, None),
        ("In [13]", " mean :  tensor(", 2, NOT_113),
        ("In [13]", "var :  tensor(", 2, None),
        ("In [14]", " mean :  tensor(", 2, NOT_113),
        ("In [14]", "var :  tensor(", 2, None),
        ("In [17]", "Mean:", 3, None),
        ("In [17]", "Variance:", 3, None),
    ]),
    "003_1fac6d3241e073e7": ("layernorm_module", [
        ("In [None]", "tensor([[-0.1115", 2, None),
        ("In [None]", "tensor([[0.0000, 0.1898", 3, None),   # the layer cell's third run
        ("In [None]", "tensor([[0.1998]", 2, None),
        ("In [None]", "tensor([[0.0642]", 2, None),
        ("In [None]", "tensor([0.1998", 1, None),
        ("In [None]", "tensor([0.0642", 1, None),
        ("In [None]", "tensor([[-0.7884", 3, None),
        ("In [None]", "Means:", 3, None),
        ("In [None]", "Variances:", 3, None),
        ("In [None]", "Means:", 3, None),
        ("In [None]", "Variances:", 3, None),
        ("In [None]", "Outputs:", 3, None),
        ("In [None]", "Means:", 3, None),
        ("In [None]", "Variances:", 3, None),
    ]),
    "004_5cd11665885a7bba": ("layernorm_multidim", [
        ("In [1]", "torch.Size([2, 1, 3])", 1, None),
        ("In [2]", "(torch.Size([1, 3]), torch.Size([1, 3]))", 1, None),
        ("In [3]", "[-1, -2]", 1, None),
        ("In [4]", "The size of this mean matrix is", 1, None),
        ("In [4]", "The mean is", 3, None),
        ("In [5]", "'The Standard Deviation is", 1, None),
        ("In [6]", "tensor([[[ 0.0000, -1.2238", 3, None),
        ("In [7]", "tensor([[[ 0.0000, -1.2238", 3, None),
        ("In [9]", "input \n (torch.Size([5, 3, 8])) = ", 2, None),
        ("In [9]", " tensor([[[ 0.4467", 24, UNSEEDED + "; the export also cuts it short"),
        ("In [10]", "Mean \n (torch.Size([5, 3, 1])): ", 2, None),
        ("In [10]", " tensor([[[-0.4749]", 19, UNSEEDED),
        ("In [10]", "Standard Deviation \n (torch.Size([5, 3, 1])): ", 2, None),
        ("In [10]", " tensor([[[0.7292]", 19, UNSEEDED),
        ("In [10]", "y \n (torch.Size([5, 3, 8])) = ", 2, None),
        ("In [10]", " tensor([[[ 1.2639", 6, UNSEEDED + "; the export cuts it short"),
        ("In [11]", "(tensor(-1.4901e-08", 1, UNSEEDED + " (the mean is rounding noise)"),
        # sqrt(24/23) whatever the data: 3 rows of 8 normalised to variance 1, std() divides by 23.
        ("In [11]", " tensor(1.0215, grad_fn=<StdBackward0>))", 1, None),
    ]),
}


def extract(notebook: str, example: str, blocks) -> str:
    lines = (NOTEBOOK_DIR / f"{notebook}.txt").read_text().split("\n")
    out = [f"# Outputs printed by the notebook {notebook}.txt, which examples/{example}.cpp reproduces.",
           "# Generated by tests/notebooks/extract.py from the notebook's text: do not edit by hand.",
           "# Each block is a header line '@@ <status> <cell> | <n> line(s)[ | <why skipped>]' and then the",
           "# n lines exactly as the notebook printed them. 'checked' blocks must appear in the",
           "# example's output, whole lines, in this order; 'skipped' ones are kept for the record."]
    if not blocks:
        out.append("# This notebook prints no values: the example checks what it states (see its comments).")
    cursor, previous_cell = 0, None
    for cell, start, n, why in blocks:
        first = start.split("\n")
        if cell == "In [None]" or cell == previous_cell:
            search_from = cursor  # the next output after the previous block
        else:
            headers = [i for i, l in enumerate(lines) if l == cell + ":"]
            assert len(headers) == 1, f"{notebook}: {cell} found {len(headers)} times"
            search_from = headers[0] + 1
        previous_cell = cell
        found = None
        for i in range(search_from, len(lines)):
            if lines[i].startswith("In [") and cell != "In [None]":
                break  # the next cell: the block is not in this one
            if all(i + k < len(lines) and lines[i + k].startswith(f) for k, f in enumerate(first)):
                found = i
                break
        assert found is not None, f"{notebook}: no line starting {start!r} in {cell}"
        block = lines[found:found + n]
        assert len(block) == n and block[-1].strip() and not any(l.startswith("In [") for l in block), \
            f"{notebook}: block {start!r} of {cell} runs past its output"
        status = "checked" if why is None else "skipped"
        header = f"@@ {status} {cell} | {n} line{'s' if n > 1 else ''}" + ("" if why is None else f" | {why}")
        out += [header] + block
        cursor = found + n
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    NOTEBOOK_DIR = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    for notebook, (example, blocks) in NOTEBOOKS.items():
        text = extract(notebook, example, blocks)
        (HERE / f"{notebook}.txt").write_text(text)
        checked = text.count("\n@@ checked ")
        skipped = text.count("\n@@ skipped ")
        print(f"{notebook}.txt: {checked} checked, {skipped} skipped ({example})")
