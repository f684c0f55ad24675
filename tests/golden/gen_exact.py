# Writes exact.txt: PyTorch 1.13's softmax, log_softmax, cross_entropy, nll_loss, logaddexp,
# logaddexp2, vector norms, normalize, pairwise_distance and clip_grad_norm_, forward and backward, for
# the bit-for-bit tests in test_nn_loss.cpp, test_elementwise_more.cpp and test_reduction_more.cpp.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_exact.py
#
# Every line is a golden line (golden_writer.py). Softmax rows are as wide as 5 (less than an AVX2
# register), 37 (four registers and a rest) and 300 (other dims: at the end); the sums of PyTorch's kernels take its AVX2
# registers' order and its compiler's fused multiply-adds, which these widths exercise.
import os

import torch
import torch.nn.functional as F
from golden_writer import tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exact.txt")
lines = []


def put(name, t):
    lines.append(tensor_line(name, t))


g = torch.Generator().manual_seed(5)
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    for rows, width in ((3, 5), (4, 37), (1, 300)):
        key = f"{name}.{rows}x{width}"
        x = (torch.randn(rows, width, generator=g, dtype=torch.float64) * 3).to(dt)
        w = torch.randn(rows, width, generator=g, dtype=torch.float64).to(dt)
        put(f"{key}.x", x)
        put(f"{key}.w", w)
        for fn_name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
            xi = x.clone().requires_grad_(True)
            y = fn(xi, -1)
            y.backward(w)
            put(f"{key}.{fn_name}", y)
            put(f"{key}.{fn_name}.grad", xi.grad)
    # logaddexp and logaddexp2 of two (4, 37) tensors, with gradients of (out * w).sum()
    a = (torch.randn(4, 37, generator=g, dtype=torch.float64) * 3).to(dt)
    b = (torch.randn(4, 37, generator=g, dtype=torch.float64) * 3).to(dt)
    w = torch.randn(4, 37, generator=g, dtype=torch.float64).to(dt)
    put(f"{name}.lae.a", a)
    put(f"{name}.lae.b", b)
    put(f"{name}.lae.w", w)
    for fn_name, fn in (("logaddexp", torch.logaddexp), ("logaddexp2", torch.logaddexp2)):
        ai, bi = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
        y = fn(ai, bi)
        y.backward(w)
        put(f"{name}.{fn_name}", y)
        put(f"{name}.{fn_name}.ga", ai.grad)
        put(f"{name}.{fn_name}.gb", bi.grad)
    # cross_entropy and nll_loss over 40 rows of 37 classes, some targets ignored (-100), and over an
    # (N, C, L) input
    logits = (torch.randn(40, 37, generator=g, dtype=torch.float64) * 2).to(dt)
    target = torch.randint(0, 37, (40,), generator=g)
    target[::9] = -100
    cw = torch.rand(37, generator=g, dtype=torch.float64).to(dt) + 0.5
    logits3 = (torch.randn(4, 37, 7, generator=g, dtype=torch.float64) * 2).to(dt)
    target3 = torch.randint(0, 37, (4, 7), generator=g)
    put(f"{name}.ce.logits", logits)
    put(f"{name}.ce.target", target)
    put(f"{name}.ce.cw", cw)
    put(f"{name}.ce.logits3", logits3)
    put(f"{name}.ce.target3", target3)
    cases = {
        "ce_mean": lambda z: F.cross_entropy(z, target),
        "ce_sum": lambda z: F.cross_entropy(z, target, reduction="sum"),
        "ce_weight": lambda z: F.cross_entropy(z, target, weight=cw),
        "ce_smooth": lambda z: F.cross_entropy(z, target, label_smoothing=0.1),
        "nll_mean": lambda z: F.nll_loss(z.log_softmax(1), target),
        "ce_3d": None,
    }
    for case, fn in cases.items():
        z = (logits3 if case == "ce_3d" else logits).clone().requires_grad_(True)
        loss = F.cross_entropy(z, target3) if case == "ce_3d" else fn(z)
        loss.backward()
        put(f"{name}.{case}", loss)
        put(f"{name}.{case}.grad", z.grad)

    # vector norms (p = 2 along the innermost dims takes PyTorch's float fast path; other dims and
    # orders add along the dim in order), normalize, pairwise_distance, and clip_grad_norm_'s total
    v = (torch.randn(6, 37, generator=g, dtype=torch.float64) * 2).to(dt)
    put(f"{name}.norm.v", v)
    norms = {
        "p2_last": lambda t: torch.linalg.vector_norm(t, 2, -1),
        "p2_all": lambda t: torch.linalg.vector_norm(t, 2),
        "p2_dim0": lambda t: torch.linalg.vector_norm(t, 2, 0),
        "p2_t": lambda t: torch.linalg.vector_norm(t.t(), 2, -1),
        "p1_last": lambda t: torch.linalg.vector_norm(t, 1, -1),
        "p3_last": lambda t: torch.linalg.vector_norm(t, 3, -1),
        "p0.5_dim0": lambda t: torch.linalg.vector_norm(t, 0.5, 0),
        "normalize": lambda t: F.normalize(t, dim=1),
        "pdist": lambda t: F.pairwise_distance(t, t.flip(0)),
    }
    for case, fn in norms.items():
        vi = v.clone().requires_grad_(True)
        out = fn(vi)
        out.backward(torch.ones_like(out))
        put(f"{name}.norm.{case}", out)
        put(f"{name}.norm.{case}.grad", vi.grad)
    # 200 rows of 13: PyTorch's float fast path rounds the squares after its 8 lanes four at a time,
    # then fuses the rest, which only many rows tell apart
    v13 = torch.randn(200, 13, generator=g, dtype=torch.float64).to(dt)
    put(f"{name}.norm.v13", v13)
    put(f"{name}.norm.p2_last13", torch.linalg.vector_norm(v13, 2, -1))
    params = [torch.nn.Parameter(torch.zeros(5, 7, dtype=dt)), torch.nn.Parameter(torch.zeros(300, dtype=dt))]
    for i, q in enumerate(params):
        q.grad = (torch.randn(q.shape, generator=g, dtype=torch.float64)).to(dt)
        put(f"{name}.clip.g{i}", q.grad)
    total = torch.nn.utils.clip_grad_norm_(params, 0.5)
    put(f"{name}.clip.total", total)
    for i, q in enumerate(params):
        put(f"{name}.clip.clipped{i}", q.grad)

# softmax and log_softmax over a dim that is not last (PyTorch's _vec_softmax and _vec_log_softmax: the
# lanes of each row along the dim summed in order, exp vectorised for whole AVX2 registers of a row of
# `inner` and C's exp in its tail) and their gradients: inner 11 (one float register and a tail of 3, two
# double registers and 3), inner 1 (all tail) and a 2-D input over dim 0. Their own generator, so
# that the cases above keep their inputs.
g2 = torch.Generator().manual_seed(7)
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    for shape, dim in (((2, 13, 11), 1), ((6, 9, 1), 1), ((20, 6), 0)):
        key = f"{name}.dim{dim}." + "x".join(str(s) for s in shape)
        x = (torch.randn(shape, generator=g2, dtype=torch.float64) * 3).to(dt)
        w = torch.randn(shape, generator=g2, dtype=torch.float64).to(dt)
        put(f"{key}.x", x)
        put(f"{key}.w", w)
        for fn_name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
            xi = x.clone().requires_grad_(True)
            y = fn(xi, dim)
            y.backward(w)
            put(f"{key}.{fn_name}", y)
            put(f"{key}.{fn_name}.grad", xi.grad)

# The ops PyTorch computes with cpu_kernel_vec whose scalar formula (the C library's exp, tanh, ...)
# differs from its vector one (SLEEF's): along a contiguous run, 16 floats (8 doubles) at a time with
# the vector formula and the rest with the scalar one; along a strided run, all of it with the scalar
# one. Inputs of 60x13 elements (780: 48 float steps and a tail of 12; 97 double steps and 4),
# contiguous, transposed (a dense permutation: one run of 780) and every other column (strided: all
# scalar), and 5 and 1 elements (all tail). Forward, and the gradient of (y * w).sum(). Their own generator.
# (PyTorch hands contiguous float32 tensors to oneDNN's gelu, others to its erf formula, and so does
# xgrad; pow(2.5, x) has a contiguous result, and so a transposed x is a strided run there.)
g3 = torch.Generator().manual_seed(11)
tail_ops = {
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "mish": F.mish,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, 2.0, 3.0),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "atan2": lambda x: torch.atan2(x, x * 0.75 + 0.5),
    "pow": lambda x: torch.pow(x.abs() + 0.25, x * 0.5),
    "pow_scalar": lambda x: (x.abs() + 0.1).pow(2.7),
    "pow_half": lambda x: x.abs().pow(1.5),
    "rpow": lambda x: torch.pow(2.5, x),
    "elu": F.elu,
    "elu05": lambda x: F.elu(x, 0.5),
    "selu": F.selu,
    "celu2": lambda x: F.celu(x, 2.0),
    "gelu": F.gelu,
    "logaddexp": lambda x: torch.logaddexp(x, x * 0.75 + 0.5),
    "logaddexp2": lambda x: torch.logaddexp2(x, x * 0.75 + 0.5),
    "logaddexp_row": lambda x: torch.logaddexp(x, x[:1] * 0.5),
}
skip = set()
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    x = (torch.randn(60, 26, generator=g3, dtype=torch.float64) * 3).to(dt)
    x5 = (torch.randn(5, generator=g3, dtype=torch.float64) * 3).to(dt)
    w = torch.randn(60, 13, generator=g3, dtype=torch.float64).to(dt)
    put(f"{name}.tail.x", x)
    put(f"{name}.tail.x5", x5)
    put(f"{name}.tail.w", w)
    layouts = {
        "contiguous": lambda: x[:, :13].contiguous(),
        "transposed": lambda: x[:, :13].t().contiguous().t(),
        "strided": lambda: x[:, ::2],
        "five": lambda: x5,
        "one": lambda: x5[:1].clone(),
    }
    for op_name, fn in tail_ops.items():
        for layout, make in layouts.items():
            if (name, op_name, layout) in skip:
                continue
            xi = make().detach().requires_grad_(True)
            y = fn(xi)
            y.backward(w.flatten()[: xi.numel()].view(xi.shape))
            put(f"{name}.tail.{op_name}.{layout}", y)
            put(f"{name}.tail.{op_name}.{layout}.grad", xi.grad)

# Results that take their operands' layout (TensorIterator's order), and sums over them in that order:
# maximum, minimum and where of a transposed x (33, 40) and a row (40,), and logaddexp of x and a column
# (33, 1), with the gradients of (y * w).sum() (the row's and the column's are sums over the transposed
# result). Their own generator.
g4 = torch.Generator().manual_seed(12)
layout_ops = {
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "where": lambda a, b: torch.where(a > 0.3, a, b),
    "logaddexp": torch.logaddexp,
}
layout_xt = {}
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    xt = (torch.randn(40, 33, generator=g4, dtype=torch.float64) * 2).to(dt)
    row = (torch.randn(40, generator=g4, dtype=torch.float64) * 2).to(dt)
    col = (torch.randn(33, 1, generator=g4, dtype=torch.float64) * 2).to(dt)
    w = torch.randn(33, 40, generator=g4, dtype=torch.float64).to(dt)
    # ties with the row, so that the gradients' halves are there too
    xt[5, :] = row[5]
    put(f"{name}.layout.xt", xt)
    layout_xt[name] = xt
    put(f"{name}.layout.row", row)
    put(f"{name}.layout.col", col)
    put(f"{name}.layout.w", w)
    for op_name, fn in layout_ops.items():
        for other_name, other in (("row", row), ("col", col)):
            a = xt.clone().requires_grad_(True)
            b = other.clone().requires_grad_(True)
            y = fn(a.t(), b)
            y.backward(w)
            put(f"{name}.layout.{op_name}.{other_name}", y)
            put(f"{name}.layout.{op_name}.{other_name}.ga", a.grad)
            put(f"{name}.layout.{op_name}.{other_name}.gb", b.grad)

# clone(), .to(dtype), flip() and sort() keep a tensor's layout (memory_format=torch.preserve_format,
# sort's meta function): the strides of their results for a transposed, a sliced-transposed and an
# expanded view, and the bits of a sum over dim 0 of each (a sum in the result's order). Inputs from
# layout.xt above.
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    other = torch.float64 if dt == torch.float32 else torch.float32
    xt = layout_xt[name]
    views = {
        "transposed": xt.t(),
        "sliced": xt.t()[:, ::2],
        "expanded": xt.t()[:, :1].expand(33, 40),
    }
    for view_name, v in views.items():
        copies = (("clone", v.clone()), ("to", v.to(other)), ("flip", v.flip(1)), ("sort", v.sort(1).values))
        for copy_name, c in copies:
            put(f"{name}.preserve.{view_name}.{copy_name}.strides", torch.tensor(c.stride(), dtype=torch.int64))
            put(f"{name}.preserve.{view_name}.{copy_name}.sum0", c.sum(0))


# Gradients of expanded and permuted inputs, which the expand's backward sums over the broadcast dims in
# the order of the gradient's layout: PyTorch's loss kernels write contiguous gradients, and a tensor
# filled in place keeps its layout; clamp's, relu's and leaky_relu's gradients take their input's (or
# result's) layout before the gradient's, as their iterators list them. smooth_l1_loss and huber_loss of v = b.expand(40, 17).t() also take
# the vector formula along its runs of 40 (its iterator vectorises them: the input and target contiguous
# along them, the gradient one number), then the scalar one for their last 8 floats. Each case: b's
# shape, the shape b is expanded to, the permutation, the op. Their own generator.
g5 = torch.Generator().manual_seed(13)
expanded_cases = {
    "smooth_l1": ((40, 1), (40, 17), (1, 0), lambda v: F.smooth_l1_loss(v, v.detach() * 0.5 + 0.1, beta=0.3)),
    "huber": ((40, 1), (40, 17), (1, 0), lambda v: F.huber_loss(v, v.detach() * 0.5 + 0.1, delta=0.4)),
    "mse": ((1, 3, 5), (16, 3, 5), (0, 2, 1), lambda v: F.mse_loss(v, v.detach() * 0.5 + 0.1)),
    "norm": ((1, 33, 1, 16), (64, 33, 1, 16), (3, 2, 0, 1), lambda v: v.norm(2, 0)),
    "amax": ((40, 16, 1), (40, 16, 40), (1, 2, 0), lambda v: v.amax(1)),
}
# the activations' cases, with a generator of their own
g7 = torch.Generator().manual_seed(15)
expanded_activations = {
    "clamp": ((8, 5, 1), (8, 5, 64), (1, 2, 0), lambda v: v.clamp(-0.5, 0.7)),
    "relu": ((1, 64, 2), (40, 64, 2), (0, 2, 1), torch.relu),
    "leaky_relu": ((1, 64, 2), (40, 64, 2), (0, 2, 1), lambda v: F.leaky_relu(v, 0.1)),
}
# var's and std's (PyTorch's var_backward, (2 / dof) * grad * (x - mean): the result takes the scaled
# gradient's layout where it has one), with a generator of their own
g9 = torch.Generator().manual_seed(17)
expanded_reductions = {
    "var": ((1, 100, 17, 1), (33, 100, 17, 1), (2, 3, 0, 1), lambda v: v.var(0)),
    "std": ((40, 8, 1), (40, 8, 17), (1, 2, 0), lambda v: v.std(0)),
    "std_dim2": ((3, 100, 1, 2), (3, 100, 8, 2), (2, 3, 1, 0), lambda v: v.std(2)),
}
for cases, gen in ((expanded_cases, g5), (expanded_activations, g7), (expanded_reductions, g9)):
    for dt in (torch.float32, torch.float64):
        name = str(dt).replace("torch.", "")
        for op_name, (base, size, perm, fn) in cases.items():
            b = (torch.randn(base, generator=gen, dtype=torch.float64) * 2).to(dt)
            bi = b.clone().requires_grad_(True)
            y = fn(bi.expand(size).permute(perm))
            w = torch.randn(y.shape, generator=gen, dtype=torch.float64).to(dt)
            y.backward(w)
            put(f"{name}.expanded.{op_name}.b", b)
            put(f"{name}.expanded.{op_name}.w", w)
            put(f"{name}.expanded.{op_name}", y)
            put(f"{name}.expanded.{op_name}.grad", bi.grad)


# add_(other, alpha=0.3) with an operand that is one value along the iterator's run (a 0-d tensor over a
# row, a column over rows, a row over a transposed self whose runs go down its columns): the run's last
# n % 16 floats (8 doubles) take PyTorch's compiled scalar loop, which rounds alpha * other apart in some
# of them. Runs of n = 5 ... 37. Their own generator.
g6 = torch.Generator().manual_seed(14)
for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    for n in (5, 9, 13, 21, 29, 37):
        base = (torch.randn(3, n, generator=g6, dtype=torch.float64)).to(dt)
        zero_d = torch.randn((), generator=g6, dtype=torch.float64).to(dt)
        column = torch.randn(3, 1, generator=g6, dtype=torch.float64).to(dt)
        row = torch.randn(3, generator=g6, dtype=torch.float64).to(dt)
        put(f"{name}.add_alpha.{n}.base", base)
        put(f"{name}.add_alpha.{n}.zero_d", zero_d)
        put(f"{name}.add_alpha.{n}.column", column)
        put(f"{name}.add_alpha.{n}.row", row)
        put(f"{name}.add_alpha.{n}.zero_d.out", base[0].clone().add_(zero_d, alpha=0.3))
        put(f"{name}.add_alpha.{n}.column.out", base.clone().add_(column, alpha=0.3))
        t = base.clone().t()  # (n, 3), its runs of n down the columns
        t.add_(row, alpha=0.3)
        put(f"{name}.add_alpha.{n}.transposed_row.out", t)


# A transposed operand of 40960 elements (at least the CPU kernels' grain) whose result is contiguous
# (pow of a number) or whose other operand is contiguous (atan2): PyTorch computes the strided run with its
# scalar formula. Exact inputs ((i * 7919) % 1001 - 500) / 128, so only checksums are stored: the sums of
# the results' 32-bit words as int64 (forward, and the gradient of (y * w).sum(), w of the same kind).
def words(t):
    return t.detach().contiguous().view(torch.int32).to(torch.int64).sum().reshape(1)


for dt in (torch.float32, torch.float64):
    name = str(dt).replace("torch.", "")
    i = torch.arange(40960, dtype=torch.float64)
    x = ((((i * 7919) % 1001) - 500) / 128).to(dt).reshape(160, 256)
    w = ((((i * 104729) % 1003) - 501) / 256).to(dt).reshape(256, 160)
    for op_name, fn in (("rpow", lambda a: torch.pow(2.5, a)), ("atan2", lambda a: torch.atan2(a, a.contiguous() * 0.75 + 0.5))):
        xi = x.clone().requires_grad_(True)
        y = fn(xi.t())
        y.backward(w)
        put(f"{name}.big_transposed.{op_name}", words(y))
        put(f"{name}.big_transposed.{op_name}.grad", words(xi.grad))
    # sigmoid of a (17, 3, 1, 100) tensor expanded to (17, 3, 17, 100): runs of 100 with a tail of 4 floats
    # or doubles each; a thread's share of the 86700 elements may start inside a run. The runs end in a
    # value whose sigmoid differs between PyTorch's vector and scalar formulas (-7.984375 in float32,
    # -7.875 in float64), so that a tail out of place shows.
    b = ((((torch.arange(5100, dtype=torch.float64) * 7919) % 1001) - 500) / 128).to(dt).reshape(17, 3, 1, 100)
    b[..., 92:] = -7.984375 if dt == torch.float32 else -7.875
    put(f"{name}.big_expanded.sigmoid", words(b.expand(17, 3, 17, 100).sigmoid()))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
