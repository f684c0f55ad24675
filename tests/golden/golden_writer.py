"""The golden-file line format that tests/golden.hpp reads, shared by the gen_*.py scripts.

One tensor per line: `name dtype ndim d0 .. d{ndim-1} v0 v1 ...`, floats as float.hex() (exact).
"""


def tensor_line(name, t):
    """The line for tensor `t` (detached, any layout) under `name`."""
    t = t.detach().contiguous()
    dtype = str(t.dtype).replace("torch.", "")
    vals = t.flatten().tolist()
    text = [str(int(v)) for v in vals] if dtype == "int64" else [float(v).hex() for v in vals]
    return " ".join([name, dtype, str(t.dim())] + [str(s) for s in t.shape] + text)
