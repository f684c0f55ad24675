# Writes masking.txt and masking_repr.txt for test_masking.cpp: where, masked_fill, nonzero/argwhere,
# masked_select and x[mask] / index_put_ with bool masks (values printed by PyTorch 1.13, errors,
# gradients), and the bool masks of scaled_dot_product_attention and MultiheadAttention.
#
# Run from the repository root with Debian's PyTorch:
#     /usr/bin/python3 tests/golden/gen_masking.py
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from golden_writer import record_case, repr_lines, tensor_line

HERE = os.path.dirname(os.path.abspath(__file__))
T = torch.tensor
b, u8, i32, i64, f32, f64 = torch.bool, torch.uint8, torch.int32, torch.int64, torch.float32, torch.float64
M = T([True, False, True])
M23 = T([[True, False, True], [False, False, True]])
X = T([1.0, 2.0, 3.0])
X23 = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def put(t, idx, v):
    t = t.clone()
    t[idx] = v
    return t


def fill_(t, m, v):
    t = t.clone()
    t.masked_fill_(m, v)
    return t


# ---- printed values and errors (masking_repr.txt) ------------------------------------------------------
CASES = {
    "where_f32": lambda: torch.where(M, X, T([10.0, 20.0, 30.0])),
    "where_broadcast": lambda: torch.where(T([[True], [False]]), X, T(-1.0)),
    "where_promote_f32_f64": lambda: torch.where(M, X, T([1.0, 2.0, 3.0], dtype=f64)),
    "where_promote_int_0d_f64": lambda: torch.where(M, T([1, 2, 3]), T(0.5, dtype=f64)),
    "where_int32_uint8": lambda: torch.where(M, T([1, 2, 3], dtype=i32), T([7, 8, 9], dtype=u8)),
    "where_bool": lambda: torch.where(M, T([False, False, False]), T([True, True, True])),
    "where_scalar_x": lambda: torch.where(M, 1.5, T([1, 2, 3])),
    "where_scalar_y_int": lambda: torch.where(M, T([1, 2, 3]), 7),
    "where_scalar_y_int32": lambda: torch.where(M, T([1, 2, 3], dtype=i32), 2),
    "where_scalar_bool_y": lambda: torch.where(M, 4, T([True, False, True])),
    "where_scalar_f64": lambda: torch.where(M, T([1.0, 2.0, 3.0], dtype=f64), -0.25),
    "where_uint8_cond": lambda: torch.where(T([1, 0, 1], dtype=u8), X, 0.0),
    "where_1arg_0": lambda: torch.where(M23)[0],
    "where_1arg_1": lambda: torch.where(M23)[1],
    "masked_fill_scalar": lambda: X.masked_fill(M, -1.0),
    "masked_fill_broadcast": lambda: X.masked_fill(T([[True], [False]]), 7.0),
    "masked_fill_int": lambda: T([1, 2, 3]).masked_fill(M, 2.5),
    "masked_fill_0d_tensor": lambda: T([1, 2, 3]).masked_fill(M, T(9.75)),
    "masked_fill_uint8_self": lambda: T([1, 2, 3], dtype=u8).masked_fill(M, 200),
    "masked_fill_inf": lambda: X23.masked_fill(M23, float("-inf")),
    "masked_fill_inplace": lambda: fill_(X23, T([True, False, False]), 0.0),
    "nonzero_2d": lambda: T([[0.0, 1.0, 0.0], [2.0, 0.0, float("nan")]]).nonzero(),
    "nonzero_bool": lambda: M23.nonzero(),
    "nonzero_1d": lambda: T([0, 3, 0, 4]).nonzero(),
    "nonzero_0d": lambda: T(5.0).nonzero(),
    "nonzero_0d_zero": lambda: T(0.0).nonzero(),
    "nonzero_empty": lambda: torch.zeros(0, 3).nonzero(),
    "nonzero_none": lambda: torch.zeros(2, 2).nonzero(),
    "argwhere_3d": lambda: (torch.arange(12).view(2, 3, 2) % 5 == 0).argwhere(),
    "masked_select": lambda: X23.masked_select(M23),
    "masked_select_broadcast": lambda: X.masked_select(T([[True], [False]])),
    "masked_select_uint8": lambda: X.masked_select(T([0, 1, 1], dtype=u8)),
    "masked_select_int": lambda: T([5, 6, 7]).masked_select(M),
    "index_mask_rows": lambda: X23[T([False, True])],
    "index_mask_full": lambda: X23[M23],
    "index_mask_3d": lambda: torch.arange(24.0).view(2, 3, 4)[M23],
    "index_mask_none": lambda: X23[T([False, False])],
    "index_mask_0d": lambda: T(5.0)[T(True)],
    "index_mask_int": lambda: T([[1, 2], [3, 4]])[T([True, False])],
    "put_mask_scalar": lambda: put(X23, M23, 0.5),
    "put_mask_rows": lambda: put(X23, T([True, False]), T([7.0, 8.0, 9.0])),
    "put_mask_values": lambda: put(X23, M23, T([-1.0, -2.0, -3.0])),
    "put_index": lambda: put(X23, T([-1]), 0.0),
    "put_int_tensor": lambda: put(T([1, 2, 3]), M, T(2.7)),
    # several index tensors (x[i, j] = v): broadcast together, one element (or slice) each
    "put_pair": lambda: put(X23, (T([0, 1]), T([2, -3])), 9.0),
    "put_pair_bcast": lambda: put(torch.zeros(3, 4), (T([[1], [2]]), T([0, 3])), T([7.0, 8.0])),
    "put_pair_slices": lambda: put(torch.zeros(2, 3, 2), (T([1, 0]), T([2, 2])), T([5.0, 6.0])),
    "put_index_2d": lambda: put(torch.zeros(3, 2), T([[0], [2]]), T([[1.0, 2.0]])),
    # errors
    "err_where_cond": lambda: torch.where(T([1, 0, 1]), X, X),
    "err_where_shapes": lambda: torch.where(M, T([1.0, 2.0]), T([1.0])),
    "err_masked_fill_value_dim": lambda: X.masked_fill(M, T([1.0, 2.0])),
    "err_masked_fill_shapes": lambda: T([1.0, 2.0]).masked_fill(M, 0.0),
    "err_masked_fill_inplace_shape": lambda: fill_(X, T([[True], [False]]), 1.0),
    "err_masked_select_mask": lambda: X.masked_select(T([1, 0, 1])),
    "err_index_mask_shape": lambda: X23[M],
    "err_put_values": lambda: put(torch.zeros(2, 3), M23, T([1.0, 2.0])),
    "err_put_pair_shapes": lambda: put(X23, (T([0, 1]), T([0, 1, 2])), 1.0),
    "err_put_pair_bounds": lambda: put(X23, (T([0]), T([3])), 1.0),
    "err_put_pair_values": lambda: put(X23, (T([0, 1]), T([0, 1])), T([1.0, 2.0, 3.0])),
}

lines = repr_lines(CASES)
# PyTorch 1.13 fills with an int64 mask without a word (it reads the mask's bytes as bools); xgrad
# throws the message PyTorch 2.x gives for a non-bool mask:
#     masked_fill_ only supports boolean masks, but got mask with dtype Long
lines.append("=== err_masked_fill_mask")
lines.append("!! masked_fill_ only supports boolean masks, but got mask with dtype Long")
with open(os.path.join(HERE, "masking_repr.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")

# ---- gradients (masking.txt) ------------------------------------------------------------------------------
g = []
M34 = T([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
record_case(g, "where", lambda x, y: torch.where(M34, x, y), [(3, 4), (3, 4)], ("float32", "float64"))
record_case(g, "where_bcast", lambda x, y: torch.where(M34, x, y), [(3, 1), (4,)], ("float64",))
record_case(g, "where_scalar", lambda y: torch.where(M34, 0.5, y), [(3, 4)], ("float64",))
record_case(g, "masked_fill", lambda x: x.masked_fill(M34, -2.0), [(3, 4)], ("float32", "float64"))
record_case(g, "masked_fill_bcast", lambda x: x.masked_fill(M34, 3.0), [(1, 4)], ("float64",))
record_case(g, "masked_fill_tensor", lambda x, v: x.masked_fill(M34, v), [(3, 4), ()], ("float64",))
record_case(g, "masked_select", lambda x: x.masked_select(M34), [(3, 4)], ("float64",))
record_case(g, "masked_select_bcast", lambda x: x.masked_select(M34), [(4,)], ("float64",))
record_case(g, "index_mask", lambda x: x[M34], [(3, 4, 2)], ("float64",))
record_case(g, "index_mask_rows", lambda x: x[T([True, False, True])], [(3, 4)], ("float64",))


# ---- attention masks ----------------------------------------------------------------------------------------
def sdpa_case(name, mask):
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(2, 3, 4, generator=gen, dtype=f64, requires_grad=True)
    k = torch.randn(2, 5, 4, generator=gen, dtype=f64, requires_grad=True)
    v = torch.randn(2, 5, 3, generator=gen, dtype=f64, requires_grad=True)
    # PyTorch 2.x's SDPA: a bool mask lets a query attend where True (False becomes -inf).
    add = torch.zeros(mask.shape, dtype=f64).masked_fill(mask.logical_not(), float("-inf"))
    w = torch.softmax((q / math.sqrt(4)) @ k.transpose(-2, -1) + add, -1)
    out = w @ v
    wo = torch.randn(out.shape, generator=gen, dtype=f64)
    (out * wo).sum().backward()
    for key, t in (("q", q), ("k", k), ("v", v), ("mask", mask), ("out", out), ("wo", wo), ("gq", q.grad),
                   ("gk", k.grad), ("gv", v.grad)):
        g.append(tensor_line(f"{name}.{key}", t))


sdpa_case("sdpa_bool", T([[True, True, False, True, False], [False, True, True, True, True],
                          [True, False, False, False, False]]))
sdpa_case("sdpa_bool_batched", torch.rand(2, 3, 5, generator=torch.Generator().manual_seed(3)) > 0.4)


def mha_case(name, seed, kwargs, n, l, s, attn_mask, kpm, grads=True):
    """A MultiheadAttention after manual_seed(seed) in float64 with the given masks: its output,
    averaged weights and the gradients of (out * wo).sum() + (weights * ww).sum()."""
    torch.manual_seed(seed)
    m = nn.MultiheadAttention(**kwargs).double()
    e = kwargs["embed_dim"]
    gen = torch.Generator().manual_seed(seed + 100)
    batched = n > 0
    sh = (lambda ln: (ln, n, e)) if batched else (lambda ln: (ln, e))
    q = torch.randn(sh(l), generator=gen, dtype=f64, requires_grad=True)
    k = torch.randn(sh(s), generator=gen, dtype=f64, requires_grad=True)
    v = torch.randn(sh(s), generator=gen, dtype=f64, requires_grad=True)
    out, w = m(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask)
    wo = torch.randn(out.shape, generator=gen, dtype=f64)
    ww = torch.randn(w.shape, generator=gen, dtype=f64)
    for key, t in (("q", q), ("k", k), ("v", v), ("out", out), ("weights", w)):
        g.append(tensor_line(f"{name}.{key}", t))
    if attn_mask is not None:
        g.append(tensor_line(f"{name}.attn_mask", attn_mask))
    if kpm is not None:
        g.append(tensor_line(f"{name}.kpm", kpm))
    if not grads:
        return
    ((out * wo).sum() + (w * ww).sum()).backward()
    for key, t in (("wo", wo), ("ww", ww), ("gq", q.grad), ("gk", k.grad), ("gv", v.grad)):
        g.append(tensor_line(f"{name}.{key}", t))
    for k_, p in m.named_parameters():
        g.append(tensor_line(f"{name}.g.{k_}", p.grad))


causal = torch.ones(3, 4, dtype=b).triu(1)  # True = not allowed (1.13)
kpm = T([[False, False, True, False], [False, True, False, True]])
mha_case("mha_bool_attn", 41, dict(embed_dim=6, num_heads=2), 2, 3, 4, causal, None)
mha_case("mha_kpm", 42, dict(embed_dim=6, num_heads=3), 2, 3, 4, None, kpm)
mha_case("mha_both", 43, dict(embed_dim=4, num_heads=2), 2, 3, 4, causal, kpm)
mha_case("mha_float_attn_kpm", 44, dict(embed_dim=4, num_heads=2), 2, 3, 4,
         torch.randn(3, 4, generator=torch.Generator().manual_seed(9), dtype=f64), kpm)
mha_case("mha_float_kpm", 45, dict(embed_dim=4, num_heads=2), 2, 3, 4, None,
         torch.randn(2, 4, generator=torch.Generator().manual_seed(10), dtype=f64))
mha_case("mha_kpm_bias_kv", 46, dict(embed_dim=4, num_heads=2, add_bias_kv=True, add_zero_attn=True), 2, 3, 4,
         causal, kpm)
mha_case("mha_kpm_unbatched", 47, dict(embed_dim=4, num_heads=2), 0, 3, 4, None, T([True, False, False, True]))
# Batch element 1 hides every key: its rows are NaN, as PyTorch's.
mha_case("mha_all_hidden", 48, dict(embed_dim=4, num_heads=2), 2, 2, 3, None,
         T([[False, True, False], [True, True, True]]), grads=False)

with open(os.path.join(HERE, "masking.txt"), "w") as f:
    f.write("\n".join(g) + "\n")
print(f"wrote {len(CASES) + 1} cases to masking_repr.txt and {len(g)} lines to masking.txt")
