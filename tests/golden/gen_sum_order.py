#!/usr/bin/python3
"""Golden sums for bit-exact comparison: PyTorch's CPU summation order over rows and columns.

Run with Debian's python3-torch: /usr/bin/python3 tests/golden/gen_sum_order.py (writes sum_order.txt).
"""
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
lines = []


def put(name, t):
    t = t.detach().contiguous()
    dtype = {torch.float32: "float32", torch.float64: "float64"}[t.dtype]
    lines.append(" ".join([name, dtype, str(t.dim())] + [str(s) for s in t.shape] +
                          [float(v).hex() for v in t.flatten().tolist()]))


g = torch.Generator().manual_seed(2024)
for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
    # Rows of every length around the vector width and the cascade's level steps.
    for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 255, 257, 1000, 1500, 2048]:
        r = 3 if n < 256 else 1
        x = torch.randn(r, n, generator=g, dtype=dtype) * 10 ** torch.randint(-3, 4, (r, 1), generator=g)
        put(f"inner.{tag}.{n}.x", x)
        put(f"inner.{tag}.{n}.sum", x.sum(-1))
        put(f"inner.{tag}.{n}.mean", x.mean(-1, keepdim=True))
    # Columns: reductions over the leading dimension (bias gradients), narrow and wide.
    for rows, cols in [(2, 6), (5, 3), (7, 6), (17, 1), (33, 5), (3, 8), (20, 31), (40, 33), (60, 70)]:
        x = torch.randn(rows, cols, generator=g, dtype=dtype)
        put(f"outer.{tag}.{rows}x{cols}.x", x)
        put(f"outer.{tag}.{rows}x{cols}.sum", x.sum(0))
        put(f"outer.{tag}.{rows}x{cols}.mean", x.mean(0))
    # Everything at once.
    x = torch.randn(5, 120, generator=g, dtype=dtype)
    put(f"all.{tag}.x", x)
    put(f"all.{tag}.sum", x.sum())
    put(f"all.{tag}.mean", x.mean())

# Long sums, whose cascades have many top-level blocks (xgrad splits those between threads): the
# values come from the global generator, which xgrad's manual_seed reproduces, so only the sums are
# stored. PyTorch's own order is its one-thread order; with more threads it splits differently.
torch.set_num_threads(1)
for name, seed, shape, dtype, dim in [("long.f32.all", 7, (3 * (1 << 18) + 5,), torch.float32, None),
                                      ("long.f32.rows", 8, (3, (1 << 20) + 3), torch.float32, -1),
                                      ("long.f32.cols", 9, (4097, 96), torch.float32, 0),
                                      ("long.f64.all", 10, ((1 << 19) + 7,), torch.float64, None)]:
    torch.manual_seed(seed)
    x = torch.randn(shape, dtype=dtype)
    put(f"{name}.sum", x.sum() if dim is None else x.sum(dim))

# Sums over dims in the middle of a contiguous tensor: PyTorch's TensorIterator runs the reduced run and
# the kept inner dims as one 2-D loop per outer index, each block summed down its columns as a leading
# reduction is (groups of four registers, registers, groups of four scalar columns, single columns).
# `.in` holds the input (not `.x`: the test above takes every `.x`); dims are in the name.
gm = torch.Generator().manual_seed(91)
for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
    for shape, dims in [((3, 5, 6), (1,)), ((3, 5, 7), (1,)), ((2, 9, 6), (1,)), ((4, 5, 3), (1,)), ((2, 40, 9), (1,)),
                        ((3, 33, 40), (1,)), ((2, 20, 70), (1,)), ((2, 17, 3, 5), (1, 2)), ((3, 2, 50, 4), (2,)),
                        ((2, 300, 37), (1,)), ((5, 4, 1, 6), (1, 2))]:
        x = torch.randn(shape, generator=gm, dtype=dtype) * 10 ** torch.randint(-2, 3, shape, generator=gm)
        name = "x".join(str(s) for s in shape) + ".dims" + "".join(str(d) for d in dims)
        put(f"middle.{tag}.{name}.in", x)
        put(f"middle.{tag}.{name}.sum", x.sum(dims))
        put(f"middle.{tag}.{name}.mean", x.mean(dims, keepdim=True))

# Products: PyTorch multiplies a contiguous innermost dim in AVX2 vector lanes (blocks of 4 vectors),
# an outer dim element by element. Values near 1, so that long rows neither overflow nor vanish.
# `.in` (not `.x`: the sum test above takes every `.x`) holds the input.
gp = torch.Generator().manual_seed(77)
for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
    for n in [1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 1000, 1500]:
        x = (1 + (torch.rand(3, n, generator=gp, dtype=torch.float64) - 0.5) * 0.2).to(dtype)
        put(f"prod.inner.{tag}.{n}.in", x)
        put(f"prod.inner.{tag}.{n}.prod", x.prod(-1))
    for shape, dim in [((70, 40), 0), ((4, 50, 3), 1), ((40, 33, 1), 1), ((5, 120), None), ((2, 3, 70), None)]:
        x = (1 + (torch.rand(shape, generator=gp, dtype=torch.float64) - 0.5) * 0.2).to(dtype)
        name = "x".join(str(s) for s in shape) + (f".dim{dim}" if dim is not None else ".all")
        put(f"prod.other.{tag}.{name}.in", x)
        put(f"prod.other.{tag}.{name}.prod", x.prod() if dim is None else x.prod(dim))

def strided_case(prefix, tag, k, x, shape, perm, sliced):
    """x expanded to `shape`, permuted by `perm` (None: not), then every second element from the second
    along dim sliced[0] (empty: not sliced); and the case's name, PREFIX.TAG.K.eSHAPE.pPERM.sDIM."""
    v = x.expand(shape) if perm is None else x.expand(shape).permute(perm)
    if sliced:
        v = v.narrow(sliced[0], 0, v.size(sliced[0]))[(slice(None),) * sliced[0] + (slice(1, None, 2),)]
    name = "%s.%s.%d.e%s.p%s.s%s" % (prefix, tag, k, "x".join(str(n) for n in shape),
                                     "-" if perm is None else "".join(str(d) for d in perm),
                                     str(sliced[0]) if sliced else "-")
    return v, name


# Sums of strided inputs, permuted, sliced or repeating elements (expand()'s stride 0): PyTorch reads them
# in place, in the order its TensorIterator gives those strides, which is not always the order of a
# contiguous copy. Each case is a base (`.in`, dims of size 1 where it is expanded), expanded to `e`, then
# permuted by `p` (or not, "-"), then sliced with step 2 from 1 along dim `s` (or not, "-"), then summed
# over dims `d` ("all": every element). One thread (set above), as for the long sums.
gb = torch.Generator().manual_seed(303)
BCAST = [((1, 512), (300, 512), None, ["0", "1", "all", "01"]),
         ((300, 1), (300, 512), None, ["1", "0", "all"]),
         ((300, 1), (300, 37), None, ["1"]),
         ((5, 1), (5, 40), None, ["1", "0"]),
         ((1, 1, 1), (2, 70, 40), None, ["0", "1", "2", "02", "all"]),
         ((6, 1, 7), (6, 9, 7), None, ["1", "12", "01", "0", "2", "all"]),
         ((6, 1, 7), (6, 9, 7), (2, 0, 1), ["1", "2", "02", "12"]),
         ((1, 96), (5000, 96), None, ["0"]),
         ((4100, 1), (4100, 20), None, ["1"]),
         ((1, 1), (3000, 50), None, ["all"]),
         ((1, 3, 1, 5), (4, 3, 6, 5), None, ["02", "13", "all"]),
         ((1, 3, 1, 5), (4, 3, 6, 5), (3, 1, 0, 2), ["0", "23", "1"]),
         # Not broadcast: a transposed matrix (PyTorch sums x.t() over dim 1 as x over dim 0), permuted
         # and sliced tensors.
         ((8, 40), (8, 40), (1, 0), ["1", "0"]),
         ((40, 33, 17), (40, 33, 17), (2, 0, 1), ["2", "12", "0"]),
         ((30, 70), (30, 70), None, ["1", "0", "all"], 1),
         ((30, 70), (30, 70), (1, 0), ["1", "0"], 0),
         # Dims of size 1 among broadcast ones: their strides decide ties in PyTorch's order.
         ((9, 1, 1), (9, 3, 1), (2, 1, 0), ["all"]),
         ((40, 1, 1), (40, 1, 8), (1, 2, 0), ["all", "2"]),
         ((5, 33, 1, 1), (5, 33, 1, 3), (2, 1, 3, 0), ["023", "1"])]
for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
    for k, (base, shape, perm, dim_lists, *sliced) in enumerate(BCAST):
        x = torch.randn(base, generator=gb, dtype=dtype) * 10 ** torch.randint(-2, 3, base, generator=gb)
        v, name = strided_case("bcast", tag, k, x, shape, perm, sliced)
        put(name + ".in", x)
        for dl in dim_lists:
            dims = None if dl == "all" else tuple(int(c) for c in dl)
            put(f"{name}.d{dl}.sum", v.sum() if dims is None else v.sum(dims))
            put(f"{name}.d{dl}.mean", v.mean() if dims is None else v.mean(dims))
    # A broadcast add's gradients, summed out of the expanded (stride 0) gradient of a scaled sum.
    a = torch.randn(300, 1, generator=gb, dtype=dtype).requires_grad_()
    b = torch.randn(1, 512, generator=gb, dtype=dtype).requires_grad_()
    ((a + b).sum() * 0.1).backward()
    put(f"bcastgrad.{tag}.a.in", a)
    put(f"bcastgrad.{tag}.b.in", b)
    put(f"bcastgrad.{tag}.a.grad", a.grad)
    put(f"bcastgrad.{tag}.b.grad", b.grad)

# Products, variances and sums of strided inputs, with and without keepdim. PyTorch's prod reads the
# input in place in its TensorIterator's order (which picks the kernel: vector lanes along a contiguous
# reduced run, element by element otherwise), so a permuted or expanded input is not multiplied as a
# contiguous copy is. var and std with one result (std_var_all_cpu) take x.mean() (the sum in that order)
# and add the squares in the order of the input alone; with more results, a Welford pass visits the
# reduced dims in the iterator's order. keepdim=True keeps a reduced dim of size 1 out of the iterator's
# reduced dims, which can change that order. Names: `layout.TAG.K.eSHAPE.pPERM.sDIM` as bcast above, then
# `.dDIMS.kKEEPDIM.OP`, OP one of sum, mean, prod, norm (p = 2), var0, var1, std0, std1 (the digit: the
# correction).
gl = torch.Generator().manual_seed(4242)
LAYOUT = [((1,), (300,), None, [("all", 0)], "ps"),
          ((1,), (130,), None, [("0", 0)], "v"),
          ((1, 64, 1, 1), (1, 64, 5, 33), (1, 3, 2, 0), [("023", 0), ("023", 1)], "svms"),
          ((64, 1), (64, 40), None, [("0", 0), ("0", 1), ("all", 0)], "p"),
          ((33, 5), (33, 5), (1, 0), [("all", 0), ("1", 1)], "pvs"),
          ((33, 17), (33, 17), (1, 0), [("0", 0)], "p"),
          ((1, 8, 40), (2, 8, 40), None, [("all", 0)], "pv"),
          ((1, 300, 1), (1, 300, 40), None, [("1", 0), ("1", 1)], "p"),
          ((1, 40, 70), (3, 40, 70), None, [("all", 0), ("1", 0)], "p"),
          ((8, 9, 1), (8, 9, 64), (2, 1, 0), [("all", 0), ("0", 0), ("01", 1)], "pvs"),
          ((1, 33, 2), (64, 33, 2), (0, 2, 1), [("01", 0), ("01", 1)], "vs"),
          ((3, 1, 1), (3, 300, 8), (1, 0, 2), [("all", 0), ("12", 0)], "vs"),
          ((40, 130), (40, 130), None, [("1", 0), ("0", 1)], "pv", 1),
          # The 2-norm of floats: PyTorch's vector path wherever its iterator finds one contiguous
          # reduced dim (not only in a contiguous tensor), element by element elsewhere.
          ((40, 130), (40, 130), None, [("1", 0), ("1", 1), ("0", 0)], "n", 0),
          ((17, 1, 8, 64), (17, 5, 8, 64), (1, 0, 2, 3), [("23", 1), ("3", 0), ("01", 0)], "n"),
          ((1, 300, 1), (1, 300, 1), (1, 0, 2), [("01", 1), ("01", 0)], "n"),
          ((3, 33), (3, 33), (1, 0), [("all", 0), ("01", 1), ("1", 0)], "n")]
for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
    for k, (base, shape, perm, dim_lists, ops, *sliced) in enumerate(LAYOUT):
        x = torch.randn(base, generator=gl, dtype=torch.float64)
        if "p" in ops:  # near 1, so that long products neither overflow nor vanish
            x = 1 + x * 0.1
        x = x.to(dtype)
        v, name = strided_case("layout", tag, k, x, shape, perm, sliced)
        put(name + ".in", x)
        for dl, kd in dim_lists:
            dims = None if dl == "all" else tuple(int(c) for c in dl)
            pre = f"{name}.d{dl}.k{kd}"
            if "s" in ops:
                put(f"{pre}.sum", v.sum() if dims is None else v.sum(dims, keepdim=bool(kd)))
                put(f"{pre}.mean", v.mean() if dims is None else v.mean(dims, keepdim=bool(kd)))
            if "p" in ops and (dims is None or len(dims) == 1):
                put(f"{pre}.prod", v.prod() if dims is None else v.prod(dims[0], keepdim=bool(kd)))
            if "n" in ops:
                put(f"{pre}.norm", v.norm() if dims is None else v.norm(2, dims, keepdim=bool(kd)))
            if "v" in ops:
                for c in (0, 1):
                    put(f"{pre}.var{c}", v.var(unbiased=bool(c)) if dims is None else
                        v.var(dims, unbiased=bool(c), keepdim=bool(kd)))
                    put(f"{pre}.std{c}", v.std(unbiased=bool(c)) if dims is None else
                        v.std(dims, unbiased=bool(c), keepdim=bool(kd)))

# Variances whose exact value lies on (or next to) a midpoint between two floats, where a double result
# rounds either way on its last bits: constant float rows (PyTorch's float mean is off by an ulp, so the
# variance is 1e-16-ish, not 0) and rows of two values, each repeated (the population std is half their
# distance, which can need one bit more than a float has). `ties.TAG.NAME.in`, then `.var0`/`.std0` over
# the last dim and `.all.var0`/`.all.std0` of each row on its own (one result: PyTorch's std_var_all_cpu).
gt = torch.Generator().manual_seed(515)
for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
    const = torch.full((3, 300), 0.1, dtype=dtype)
    const[1] = 1e3 / 3
    const[2] = -7.25
    two = torch.empty(64, 128, dtype=dtype)
    ab = torch.randn(64, 2, generator=gt, dtype=torch.float64).to(dtype)
    two[:, 0::2] = ab[:, :1]
    two[:, 1::2] = ab[:, 1:]
    for nm, x in (("const", const), ("two", two)):
        put(f"ties.{tag}.{nm}.in", x)
        put(f"ties.{tag}.{nm}.var0", x.var(-1, unbiased=False))
        put(f"ties.{tag}.{nm}.std0", x.std(-1, unbiased=False))
        put(f"ties.{tag}.{nm}.all.var0", torch.stack([r.var(unbiased=False) for r in x]))
        put(f"ties.{tag}.{nm}.all.std0", torch.stack([r.std(unbiased=False) for r in x]))

with open(os.path.join(HERE, "sum_order.txt"), "w") as f:
    f.write("# generated by gen_sum_order.py with torch %s\n" % torch.__version__)
    f.write("\n".join(lines) + "\n")
