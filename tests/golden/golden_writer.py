"""The golden-file line format that tests/golden.hpp reads, shared by the gen_*.py scripts.

One tensor per line: `name dtype ndim d0 .. d{ndim-1} v0 v1 ...`, floats as float.hex() (exact).
"""

import math
import zlib

import torch


def tensor_line(name, t):
    """The line for tensor `t` (detached, any layout) under `name`."""
    t = t.detach().contiguous()
    dtype = str(t.dtype).replace("torch.", "")
    vals = t.flatten().tolist()
    text = [str(int(v)) for v in vals] if dtype == "int64" else [float(v).hex() for v in vals]
    return " ".join([name, dtype, str(t.dim())] + [str(s) for s in t.shape] + text)


def record_case(lines, name, fn, shapes, dtypes=("float32",)):
    """Appends to `lines` fn(*inputs) for random inputs of `shapes`, for each dtype: the inputs, the
    output, its grad_fn name (a `# grad_fn` line), a random weight w and the gradients of (out * w).sum()."""
    seed = zlib.crc32(name.encode())
    g = torch.Generator().manual_seed(seed)
    base = [torch.randn(s, generator=g, dtype=torch.float64) for s in shapes]
    for dt in dtypes:
        key = f"{name}.{dt}"
        ins = [t.to(getattr(torch, dt)).clone().requires_grad_(True) for t in base]
        for i, t in enumerate(ins):
            lines.append(tensor_line(f"{key}.in{i}", t))
        out = fn(*ins)
        lines.append(tensor_line(f"{key}.out", out))
        lines.append(f"# grad_fn {key} {out.grad_fn.name()}")
        w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
        w = w.to(out.dtype)
        lines.append(tensor_line(f"{key}.w", w))
        (out * w).sum().backward()
        for i, t in enumerate(ins):
            if t.grad is not None:  # e.g. expand_as's second input only lends its shape
                lines.append(tensor_line(f"{key}.g{i}", t.grad))


def repr_lines(cases):
    """The `=== name` blocks of golden.hpp's reprs(): for each case, what PyTorch prints for fn(), or
    "!! " and the first line of the error it raises (RuntimeError, IndexError)."""
    lines = []
    for name, fn in cases.items():
        lines.append("=== " + name)
        try:
            lines.append(repr(fn()))
        except (RuntimeError, IndexError) as e:
            lines.append("!! " + str(e).split("\n")[0])
    return lines


# The replay format (tests/replay.hpp) of gen_random.py and gen_print.py.


def fnv1a(data: bytes) -> int:
    """64-bit FNV-1a hash, as tests/replay.hpp computes it."""
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def shape_str(shape):
    """A shape as replay lines write it: "2,3", or "-" for a 0-d tensor."""
    return "-" if len(shape) == 0 else ",".join(str(s) for s in shape)


def optimizer_update(lines, make_optimizer, name, opts):
    """Appends `# update <key> k=v` and 8 steps of `make_optimizer([p], opts)` on a parameter of 37
    elements (two AVX2 blocks of 16 floats and a scalar tail) with given gradients, for float32 and
    float64: `<key>.p0`, `.g` (8 x 37) and `.p` after them. No matrix product is involved, so the bits
    are the update's alone, whatever BLAS kernels run (tests/golden.hpp's check_updates)."""
    for dt in ("float32", "float64"):
        key = f"{name}.{dt}"
        lines.append(f"# update {key} " + " ".join(f"{k}={v}" for k, v in opts.items()))
        gen = torch.Generator().manual_seed(20241129)
        p = torch.randn(37, generator=gen, dtype=torch.float64).to(getattr(torch, dt)).requires_grad_(True)
        grads = torch.randn(8, 37, generator=gen, dtype=torch.float64).to(getattr(torch, dt))
        lines.append(tensor_line(f"{key}.p0", p))
        lines.append(tensor_line(f"{key}.g", grads))
        opt = make_optimizer([p], opts)
        for t in range(8):
            p.grad = grads[t].clone()
            opt.step()
        lines.append(tensor_line(f"{key}.p", p))


def channel_inputs(dt, shape):
    """Inputs of a normalisation over dim 1 from formulas of the indices (gen_batch_norm.py and
    gen_group_norm.py; test_conv.cpp computes the same doubles with C's sin and cos, as Python's math
    module does, and rounds them to the dtype): x and the upstream gradient of `shape`, and per channel
    the weight, the bias, a running mean and a running variance."""
    dtype = getattr(torch, dt)
    numel = math.prod(shape)
    c = shape[1]

    def t(values, s):
        return torch.tensor(values, dtype=torch.float64).reshape(s).to(dtype)

    x = [math.sin(0.37 * (k + 1)) * 2 + 0.5 + 0.1 * (k % 3) for k in range(numel)]
    up = [math.cos(0.53 * (k + 1)) for k in range(numel)]
    w = [1 + 0.5 * math.sin(0.11 * j + 0.5) for j in range(c)]
    b = [0.1 * math.cos(0.23 * j) for j in range(c)]
    rm = [0.2 * math.sin(0.7 * j) for j in range(c)]
    rv = [1.5 + 0.5 * math.cos(0.3 * j) for j in range(c)]
    return t(x, shape), t(up, shape), t(w, (c,)), t(b, (c,)), t(rm, (c,)), t(rv, (c,))
