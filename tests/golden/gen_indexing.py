# Writes indexing.txt: values and gradients of PyTorch's indexing ops (gather, scatter, index_select,
# index_add, x[idx], one_hot, embedding), the shape ops built on views and copies (split ... pad) and
# eye/linspace, for test_indexing.cpp.
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_indexing.py
#
# Cases are written as in gen_shape_ops.py (`<case>.<dtype>.in<i>`, `.out`, `.w`, `.g<i>` and a
# `# grad_fn` line); the int64 index tensors a case uses are written as `idx.<name>`.
#
# Error messages torch 1.13 gives, which the C++ test expects word for word (after "op: "):
#   x.gather(1, [[0, 5], [1, 2]])      index 5 is out of bounds for dimension 1 with size 4
#   x.gather(1, float index)           gather(): Expected dtype int64 for index
#   x.gather(1, 1-D index)             Index tensor must have the same number of dimensions as input tensor
#   x.gather(1, zeros(4, 2))           Size does not match at dimension 0 expected index [4, 2] to be smaller
#                                      than self [3, 4] apart from dimension 1
#   x.scatter(0, [[3]], ones(1, 1))    index 3 is out of bounds for dimension 0 with size 3
#   x.scatter(0, zeros(2, 2), ones(1, 1))  Expected index [2, 2] to be smaller than self [3, 4] apart from
#                                      dimension 0 and to be smaller size than src [1, 1]
#   x.scatter(0, idx, float64 src)     scatter(): Expected self.dtype to be equal to src.dtype
#   x.scatter_add(0, [[-1]], ...)      index -1 is out of bounds for dimension 0 with size 3
#   x.index_select(0, [3]) or [-1]     index out of range in self
#   x.index_select(0, [[0]])           index_select(): Index is supposed to be a vector
#   x.index_select(0, [0.])            index_select(): Expected dtype int32 or int64 for index
#   x.index_add(0, [1], ones(2, 4))    index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for dim: 0
#   x.index_add(0, [3], ones(1, 4))    index out of range in self
#   x[[3]]                             index 3 is out of bounds for dimension 0 with size 3
#   one_hot([-1])                      Class values must be non-negative.
#   one_hot([3], 3)                    Class values must be smaller than num_classes.
#   one_hot([3.])                      one_hot is only applicable to index tensor.
#   one_hot(empty)                     Can not infer total number of classes from empty tensor.
#   embedding(5, 3)([5]) or ([-1])     index out of range in self
#   Embedding(5, 3, padding_idx=5)     Padding_idx must be within num_embeddings
#   torch.split(x(3, 4), [1, 1])       split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's
#                                      size at dimension 0), but got split_sizes=[1, 1]
#   torch.chunk(x, 0)                  chunk expects `chunks` to be greater than 0, got: 0
#   x(3, 4).repeat(2)                  Number of dimensions of repeat dims can not be smaller than number of
#                                      dimensions of tensor
#   torch.diag(3-D)                    matrix or a vector expected
#   (torch.tril(1-D) says only "Dimension out of range"; xgrad: "input tensor must have at least 2 dimensions")
#   F.pad(x, (1,))                     Padding length must be divisible by 2
#   F.pad(x(1, 2, 3), (3, 3), 'reflect')  Argument #4: Padding size should be less than the corresponding
#                                      input dimension, but got: padding (3, 3) at dimension 2 of input [1, 2, 3]
#   x(3, 4).flip((0, 0))               dim 0 appears multiple times in the list of dims
#   x(2, 6).unflatten(1, (4, 2))       unflatten: Provided sizes [4, 2] don't multiply up to the size of dim 1 (6)
#                                      in the input tensor
import os

import torch
import torch.nn.functional as F
from golden_writer import record_case, tensor_line

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "indexing.txt")
lines = []
both = ("float32", "float64")


def put(name, t):
    lines.append(tensor_line(name, t))


def case(name, fn, shapes, dtypes=("float32",)):
    record_case(lines, name, fn, shapes, dtypes)


def idx(name, values):
    t = torch.tensor(values, dtype=torch.int64)
    put(f"idx.{name}", t)
    return t


# ---- indexing -----------------------------------------------------------------------------------------
g_rows = idx("gather_rows", [[0, 2, 1, 2], [1, 1, 0, 0]])  # (2, 4) into dim 0 of (3, 4)
g_cols = idx("gather_cols", [[3, 0], [1, 1], [2, 3]])  # (3, 2) into dim 1 of (3, 4)
case("gather_dim0", lambda x: x.gather(0, g_rows), [(3, 4)], both)
case("gather_dim1", lambda x: x.gather(1, g_cols), [(3, 4)], both)
case("gather_neg_dim_noncontig", lambda x: x.t().gather(-1, g_cols), [(4, 3)])
case("gather_3d", lambda x: x.gather(1, idx("gather_3d", [[[1, 0]], [[2, 2]]])), [(2, 3, 2)])
s_rows = idx("scatter_rows", [[2, 0, 1, 1], [0, 2, 2, 0]])  # unique within each column
case("scatter_src", lambda x, s: x.scatter(0, s_rows, s), [(3, 4), (2, 4)], both)
case("scatter_value", lambda x: x.scatter(1, g_cols[:, :1], 2.5), [(3, 4)])
a_rows = idx("add_rows", [[2, 0, 2, 2], [2, 0, 1, 2], [2, 1, 1, 0]])  # repeats: sums in order
case("scatter_add", lambda x, s: x.scatter_add(0, a_rows, s), [(3, 4), (3, 4)], both)
case("scatter_add_dim1", lambda x, s: x.scatter_add(1, g_cols, s), [(3, 4), (3, 2)])
sel = idx("select", [2, 0, 2, 1, 2])
case("index_select_dim0", lambda x: x.index_select(0, sel), [(3, 4)], both)
case("index_select_dim1", lambda x: x.index_select(1, sel), [(2, 3)])
case("index_select_noncontig", lambda x: x.t().index_select(0, sel), [(4, 3)])
case("index_add", lambda x, s: x.index_add(0, sel, s), [(3, 4), (5, 4)], both)
case("index_add_alpha_dim1", lambda x, s: x.index_add(1, sel, s, alpha=2.0), [(2, 3), (2, 5)])
# alpha 0.7: PyTorch adds each slice with its add kernel (one rounding where the CPU has FMA) for a self
# of more than one dim, and rounds source * alpha first for a 1-D one
case("index_add_alpha_slices", lambda x, s: x.index_add(0, sel, s, alpha=0.7), [(3, 37), (5, 37)], both)
case("index_add_alpha_1d", lambda x, s: x.index_add(0, sel, s, alpha=0.7), [(3,), (5,)], both)
rows = idx("rows", [[0, -1], [2, 0], [1, 1]])
case("index_tensor", lambda x: x[rows], [(3, 4)], both)
case("index_tensor_3d", lambda x: x[rows[0]], [(3, 2, 2)])
# Several index tensors (x[i, j]): broadcast together; repeated places sum their gradients.
pi, pj = idx("pair_i", [0, 2, 2, 1]), idx("pair_j", [3, -1, 3, 0])
case("index_pair", lambda x: x[pi, pj], [(3, 4)], both)
case("index_pair_bcast", lambda x: x[idx("bcast_i", [[0], [2]]), idx("bcast_j", [1, 3, 0])], [(3, 4, 2)])
case("index_triple", lambda x: x[idx("tri_a", [1, 0]), idx("tri_b", [2, -1]), idx("tri_c", [3, 0])], [(2, 3, 4)])
case("index_pair_noncontig", lambda x: x.t()[pi, pj], [(4, 3)])
put("one_hot.in", idx("one_hot", [[0, 3], [1, 0]]))
put("one_hot.out", F.one_hot(idx("one_hot2", [[0, 3], [1, 0]])))
put("one_hot5.out", F.one_hot(idx("one_hot3", [[0, 3], [1, 0]]), 5))

# nn.Embedding: initial weight after manual_seed(0), output and weight gradient (padding row 0).
torch.manual_seed(0)
emb = torch.nn.Embedding(10, 3, padding_idx=0)
put("embedding.weight", emb.weight)
e_in = idx("embedding_in", [[1, 0, 4], [4, 9, 0]])
e_out = emb(e_in)
put("embedding.out", e_out)
w = torch.randn(e_out.shape, generator=torch.Generator().manual_seed(7))
put("embedding.w", w)
(e_out * w).sum().backward()
put("embedding.grad", emb.weight.grad)
lines.append(f"# grad_fn embedding {e_out.grad_fn.name()}")
torch.manual_seed(3)
put("embedding_neg_pad.weight", torch.nn.Embedding(4, 5, padding_idx=-1).weight)
lines.append("# repr " + repr(emb) + " | " + repr(torch.nn.Embedding(4, 5, padding_idx=-1)) + " | " +
             repr(torch.nn.Embedding(5, 3)))

lines.append("# repr_flatten " + repr(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Flatten(0, 2),
                                                          torch.nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(-1, (4,))))
             .replace("\n", "\\n"))
fx = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(5))
put("flatten_modules.in", fx)
put("flatten_modules.out", torch.nn.Unflatten(1, (4, -1))(torch.nn.Flatten()(fx)))

# ---- shape ops ---------------------------------------------------------------------------------------
case("split_1", lambda x: torch.split(x, 2, 1)[1], [(3, 5)], both)
case("split_last", lambda x: torch.split(x, 2, 1)[2], [(3, 5)])
case("split_sizes", lambda x: torch.split(x, [1, 3, 1], 1)[1], [(3, 5)])
case("chunk", lambda x: torch.chunk(x, 3, 0)[1], [(5, 2)])
case("repeat", lambda x: x.repeat(2, 1, 3), [(2, 3)], both)
case("repeat_noncontig", lambda x: x.t().repeat(2, 2), [(2, 3)])
case("repeat_interleave", lambda x: x.repeat_interleave(2), [(2, 3)])
case("repeat_interleave_dim", lambda x: x.repeat_interleave(3, dim=1), [(2, 3)], both)
case("flip", lambda x: x.flip(0, 2), [(2, 3, 4)], both)
case("flip_noncontig", lambda x: x.transpose(0, 1).flip(-1), [(2, 3, 4)])
case("roll_flat", lambda x: x.roll(3), [(2, 3)])
case("roll_dims", lambda x: x.roll((1, -2), (0, 1)), [(3, 4)], both)
case("tril", lambda x: x.tril(), [(3, 4)], both)
case("tril_k", lambda x: x.tril(1), [(2, 3, 4)])
case("triu", lambda x: x.triu(), [(4, 3)], both)
case("triu_k", lambda x: x.triu(-1), [(2, 4, 3)])
case("pad_constant", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [(2, 3)], both)
case("pad_constant_crop", lambda x: F.pad(x, (-1, 2)), [(2, 3)])
case("pad_reflect_1d", lambda x: F.pad(x, (2, 1), mode="reflect"), [(2, 3, 4)], both)
case("pad_reflect_2d", lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), [(1, 2, 3, 4)])
case("pad_replicate_1d", lambda x: F.pad(x, (3, 1), mode="replicate"), [(2, 3)])
case("pad_replicate_2d", lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate"), [(1, 2, 3, 4)], both)
case("unflatten", lambda x: x.unflatten(1, (2, -1)), [(3, 6)])
case("diag_1d", lambda x: x.diag(1), [(3,)], both)
case("diag_1d_neg", lambda x: x.diag(-2), [(3,)])
case("diag_2d", lambda x: x.diag(), [(3, 4)], both)
case("diag_2d_k", lambda x: x.diag(-1), [(3, 4)])
case("diag_2d_noncontig", lambda x: x.t().diag(2), [(3, 4)])

put("eye3", torch.eye(3))
put("eye24", torch.eye(2, 4, dtype=torch.float64))
put("eye32_int", torch.eye(3, 2, dtype=torch.int64))
put("linspace_f32", torch.linspace(0, 1, 7))
put("linspace_f32_long", torch.linspace(-3.3, 7.1, 41))
put("linspace_f64", torch.linspace(-2, 3, 10, dtype=torch.float64))
put("linspace_i64", torch.linspace(0, 10, 4, dtype=torch.int64))
put("linspace_one", torch.linspace(2.5, 9, 1))
put("linspace_f32_1001", torch.linspace(5, -7.7, 1001))
put("linspace_f64_100", torch.linspace(0.1, 123.7, 100, dtype=torch.float64))
put("linspace_i64_long", torch.linspace(-7, 100, 23, dtype=torch.int64))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
