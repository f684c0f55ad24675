#!/usr/bin/python3
"""Golden values for the smaller nn gaps (issue 11): Conv1d/Conv2d with padding "same"/"valid" and
padding_mode reflect/replicate/circular, F.pad's circular mode, max_pool2d with dilation, ceil_mode and
indices, avg_pool2d with ceil_mode and divisor_override, max_pool1d/avg_pool1d and their modules,
F.normalize for p < 1 and p = ±inf, and MultiheadAttention with kdim/vdim, add_bias_kv and add_zero_attn.

Run from anywhere with Debian's python3-torch: /usr/bin/python3 tests/golden/gen_nn_gaps.py
Writes nn_gaps.txt (tensors, see tests/golden.hpp for the format) and nn_gaps_repr.txt (`=== key` lines,
each followed by the module's repr).

PyTorch's error messages that test_nn_gaps.cpp matches (torch 1.13, RuntimeError / ValueError /
NotImplementedError):
  F.conv2d(x, w, padding="same", stride=2): padding='same' is not supported for strided convolutions
  F.conv2d(x, w, padding="foo"): Invalid padding string: 'foo'
  nn.Conv2d(2, 3, 3, stride=2, padding="same"): padding='same' is not supported for strided convolutions
  nn.Conv2d(2, 3, 3, padding="foo"): Invalid padding string 'foo', should be one of {'valid', 'same'}
  nn.Conv2d(2, 3, 3, padding_mode="foo"): padding_mode must be one of {'zeros', 'circular', 'reflect',
      'replicate'}, but got padding_mode='foo'   (Python's set order varies with the string hash seed;
      xgrad lists them in the order of PyTorch's source: {'same', 'valid'}, {'zeros', 'reflect',
      'replicate', 'circular'})
  F.pad(x (1,2,6,6), (7,0,0,0), "circular"): Padding value causes wrapping around more than once.
  F.pad(x (1,2,6,6), (-7,0,0,0), "circular"): Negative padding value is resulting in an empty dimension
  F.pad(x (4,5), (1,1), "circular"): Invalid padding size, expected 0 but got 2
  F.pad(x (1,2,6,6), (1,1,0,0), "circular", value=1.0): Padding mode "circular" doesn't take in value argument
  F.pad(x, (1,1), "foo"): Unrecognised padding mode foo
  F.pad(x (2,3,5), (1,1,1,1,1,1,1,1), "circular"): Only 2D, 3D, 4D, 5D padding with non-constant padding are
      supported for now   (xgrad: "Padding length too large" comes first, as torch's own check order)
  F.max_pool2d(x, 3, dilation=0): dilation should be greater than zero, but got dilationH: 0 dilationW: 0
  F.avg_pool2d(x, 3, divisor_override=0): divisor must be not zero
  F.max_pool1d(x (2,3,4,5), 2): max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for
      input, but got:[2, 3, 4, 5]
  F.avg_pool1d(x (2,3,4,5), 2): Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self'
      (while checking arguments for avg_pool1d)
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from golden_writer import record_case, tensor_line

HERE = os.path.dirname(os.path.abspath(__file__))
lines = []
both = ("float32", "float64")


def put(name, t):
    lines.append(tensor_line(name, t))


# ---- convolution padding strings and F.pad's circular mode -------------------------------------------
record_case(lines, "conv2d.same", lambda x, w, b: F.conv2d(x, w, b, padding="same"),
            [(2, 3, 6, 5), (4, 3, 3, 3), (4,)], both)
record_case(lines, "conv2d.same_even_dil", lambda x, w: F.conv2d(x, w, padding="same", dilation=(1, 2)),
            [(1, 2, 6, 7), (3, 2, 4, 3)], both)
record_case(lines, "conv2d.same_unbatched", lambda x, w: F.conv2d(x, w, padding="same"), [(2, 5, 4), (3, 2, 2, 2)],
            both)
record_case(lines, "conv2d.valid", lambda x, w, b: F.conv2d(x, w, b, padding="valid", groups=2),
            [(2, 4, 6, 5), (4, 2, 3, 2), (4,)], both)
record_case(lines, "conv1d.same_even", lambda x, w, b: F.conv1d(x, w, b, padding="same"), [(2, 2, 7), (4, 2, 4), (4,)],
            both)
record_case(lines, "conv1d.valid", lambda x, w: F.conv1d(x, w, padding="valid", stride=2), [(2, 3, 9), (2, 3, 3)],
            both)
record_case(lines, "pad.circular2d", lambda x: F.pad(x, (2, 1, 1, 3), mode="circular"), [(1, 2, 4, 5)], both)
record_case(lines, "pad.circular1d", lambda x: F.pad(x, (1, 2), mode="circular"), [(2, 3, 5)], both)
record_case(lines, "pad.circular_crop", lambda x: F.pad(x, (-1, 2, 0, -2), mode="circular"), [(1, 2, 4, 5)], both)
record_case(lines, "pad.circular3d", lambda x: F.pad(x, (1, 0, 0, 2, 1, 1), mode="circular"), [(1, 1, 3, 3, 4)],
            both)


def module_case(name, seed, make, shape):
    """A module made after manual_seed(seed) (so its draws are PyTorch's), applied to a random input:
    the input, the output and its grad_fn, a weight w and the gradients of (out * w).sum()."""
    torch.manual_seed(seed)
    m = make()
    g = torch.Generator().manual_seed(seed + 100)
    x = torch.randn(shape, generator=g).requires_grad_(True)
    put(f"{name}.x", x)
    out = m(x)
    put(f"{name}.out", out)
    lines.append(f"# grad_fn {name} {out.grad_fn.name()}")
    w = torch.randn(out.shape, generator=g)
    put(f"{name}.w", w)
    (out * w).sum().backward()
    put(f"{name}.gx", x.grad)
    for k, p in m.named_parameters():
        put(f"{name}.g.{k}", p.grad)


module_case("m2_reflect", 1, lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (2, 2, 5, 6))
module_case("m2_replicate_same", 2, lambda: nn.Conv2d(2, 3, (2, 3), padding="same", padding_mode="replicate"),
            (1, 2, 5, 5))
module_case("m2_circular", 3,
            lambda: nn.Conv2d(2, 4, 3, stride=2, padding=(1, 2), padding_mode="circular", bias=False), (2, 2, 6, 7))
module_case("m2_zeros_same", 4, lambda: nn.Conv2d(2, 3, 4, padding="same"), (1, 2, 5, 5))
module_case("m2_reflect_valid", 5, lambda: nn.Conv2d(2, 2, 3, padding="valid", padding_mode="reflect"), (1, 2, 4, 4))
module_case("m1_circular_same", 6, lambda: nn.Conv1d(3, 2, 4, padding="same", padding_mode="circular"), (2, 3, 7))
module_case("m1_reflect", 7, lambda: nn.Conv1d(3, 2, 3, padding=2, padding_mode="reflect"), (2, 3, 6))
module_case("m1_replicate_unbatched", 8, lambda: nn.Conv1d(3, 2, 3, padding=1, padding_mode="replicate"), (3, 6))

# ---- pooling: dilation, ceil_mode, indices, divisor_override -----------------------------------------
record_case(lines, "max_pool2d.dil", lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2), [(2, 3, 9, 8)], both)
record_case(lines, "max_pool2d.ceil", lambda x: F.max_pool2d(x, 3, 2, 0, ceil_mode=True), [(1, 2, 8, 7)], both)
record_case(lines, "max_pool2d.ceil_pad_dil",
            lambda x: F.max_pool2d(x, (2, 3), (2, 2), (1, 1), dilation=(2, 1), ceil_mode=True), [(2, 2, 7, 8)], both)
record_case(lines, "max_pool2d.unbatched_ceil", lambda x: F.max_pool2d(x, 2, ceil_mode=True), [(2, 5, 5)], both)
record_case(lines, "avg_pool2d.ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [(2, 2, 8, 7)], both)
record_case(lines, "avg_pool2d.ceil_nocount",
            lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [(2, 2, 8, 7)], both)
record_case(lines, "avg_pool2d.divisor", lambda x: F.avg_pool2d(x, (2, 3), 1, (1, 1), divisor_override=4),
            [(1, 2, 4, 5)], both)
record_case(lines, "avg_pool2d.ceil_divisor", lambda x: F.avg_pool2d(x, 2, 2, 0, ceil_mode=True, divisor_override=3),
            [(1, 1, 5, 5)], both)

record_case(lines, "max_pool1d.all", lambda x: F.max_pool1d(x, 3, 2, 1, dilation=2, ceil_mode=True), [(2, 3, 10)],
            both)
record_case(lines, "max_pool1d.unbatched", lambda x: F.max_pool1d(x, 2), [(3, 7)], both)
record_case(lines, "avg_pool1d.ceil_nocount",
            lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [(2, 3, 10)], both)
record_case(lines, "avg_pool1d.unbatched", lambda x: F.avg_pool1d(x, 2, 1, 1), [(3, 6)], both)

g = torch.Generator().manual_seed(21)
x = torch.randn(2, 2, 7, 6, generator=g, dtype=torch.float64)
put("indices.x", x)
y, idx = F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True)
put("indices.y", y)
put("indices.idx", idx)
y, idx = F.max_pool2d(x[0], (2, 3), return_indices=True)
put("indices.unbatched_y", y)
put("indices.unbatched_idx", idx)
x1 = torch.randn(2, 3, 9, generator=g, dtype=torch.float64)
put("indices1d.x", x1)
y, idx = F.max_pool1d(x1, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True)
put("indices1d.y", y)
put("indices1d.idx", idx)

# ---- F.normalize for any p ---------------------------------------------------------------------------
record_case(lines, "normalize.p05", lambda x: F.normalize(x, p=0.5, dim=1), [(3, 5)], both)
record_case(lines, "normalize.inf", lambda x: F.normalize(x, p=math.inf, dim=-1), [(2, 3, 4)], both)
record_case(lines, "normalize.ninf", lambda x: F.normalize(x, p=-math.inf, dim=0), [(3, 4)], both)
record_case(lines, "normalize.p0", lambda x: F.normalize(x, p=0, dim=1), [(3, 4)], both)
record_case(lines, "normalize.pneg", lambda x: F.normalize(x, p=-1.5, dim=1), [(2, 4)], both)
# Ties and zeros: ±inf share the gradient among the tied elements; p < 1 gives 0 where x is 0.
for p, key in ((math.inf, "inf"), (-math.inf, "ninf"), (0.5, "p05")):
    x = torch.tensor([[1.0, -3.0, 3.0, 2.0], [0.0, 0.0, 0.0, 0.0], [0.0, 2.0, -0.5, 2.0]], dtype=torch.float64,
                     requires_grad=True)
    y = F.normalize(x, p=p, dim=1)
    put(f"normalize.ties_{key}.y", y)
    w = torch.arange(12, dtype=torch.float64).reshape(3, 4) / 7 - 0.5
    (y * w).sum().backward()
    put(f"normalize.ties_{key}.dx", x.grad)

# ---- F.cosine_similarity and F.pairwise_distance ---------------------------------------------------
# Rows scaled by 0 and 1e-9: a norm of zero and one below eps (clamped, its gradient still passed on).
SCALE = torch.tensor([[0.0], [1.0], [1e-9], [1.0]], dtype=torch.float64)
record_case(lines, "cosine.dim1", lambda x, y: F.cosine_similarity(x, y), [(4, 5), (4, 5)], both)
record_case(lines, "cosine.small_norms", lambda x, y: F.cosine_similarity(x * SCALE.to(x.dtype), y),
            [(4, 5), (4, 5)], both)
record_case(lines, "cosine.broadcast_dim0", lambda x, y: F.cosine_similarity(x, y, dim=0, eps=1e-3),
            [(3, 1), (3, 4)], both)
record_case(lines, "cosine.table", lambda x, y: F.cosine_similarity(x.unsqueeze(1), y.unsqueeze(0), dim=-1),
            [(3, 6), (5, 6)], both)
record_case(lines, "cosine.vectors", lambda x, y: F.cosine_similarity(x, y, dim=0), [(7,), (7,)], both)
record_case(lines, "pdist.p2", lambda x, y: F.pairwise_distance(x, y), [(4, 5), (4, 5)], both)
record_case(lines, "pdist.p1_keepdim", lambda x, y: F.pairwise_distance(x, y, p=1, keepdim=True),
            [(3, 2, 4), (3, 2, 4)], both)
record_case(lines, "pdist.p3_broadcast", lambda x, y: F.pairwise_distance(x, y, p=3, eps=1e-3), [(4, 5), (5,)],
            both)
record_case(lines, "pdist.inf_vectors", lambda x, y: F.pairwise_distance(x, y, p=math.inf), [(6,), (6,)], both)

# ---- torch.cdist: the direct kernel (CdistBackward0) and, for p = 2 past 25 rows or when asked, the
# matrix-product form (ViewBackward0 over EuclideanDistBackward0); rows repeated for zero distances.
record_case(lines, "cdist.p2_direct", lambda x, y: torch.cdist(x, y), [(4, 5), (3, 5)], both)
record_case(lines, "cdist.p2_mm", lambda x, y: torch.cdist(x, y), [(30, 4), (6, 4)], both)
record_case(lines, "cdist.p2_mm_forced", lambda x, y: torch.cdist(x, y, compute_mode="use_mm_for_euclid_dist"),
            [(3, 4), (5, 4)], both)
record_case(lines, "cdist.p2_donot_mm", lambda x, y: torch.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist"),
            [(30, 4), (6, 4)], both)
record_case(lines, "cdist.p2_zero_direct", lambda x, y: torch.cdist(torch.cat([x, y[:1]]), y), [(3, 4), (5, 4)], both)
record_case(lines, "cdist.p2_zero_mm", lambda x, y: torch.cdist(torch.cat([x, y[:2]]), y), [(28, 3), (4, 3)], both)
record_case(lines, "cdist.p1_batch", lambda x, y: torch.cdist(x, y, p=1), [(2, 3, 4), (2, 5, 4)], both)
record_case(lines, "cdist.p3_broadcast", lambda x, y: torch.cdist(x, y, p=3), [(2, 1, 3, 4), (5, 4)], both)
record_case(lines, "cdist.p05", lambda x, y: torch.cdist(x, y, p=0.5), [(4, 3), (3, 3)], both)
record_case(lines, "cdist.p15_zero", lambda x, y: torch.cdist(torch.cat([x, y[1:2]]), y, p=1.5), [(2, 3), (3, 3)],
            both)
record_case(lines, "cdist.inf", lambda x, y: torch.cdist(x, y, p=math.inf), [(4, 3), (5, 3)], both)
record_case(lines, "cdist.p0", lambda x, y: torch.cdist(x, y, p=0), [(3, 4), (2, 4)], both)

# ---- F.prelu and F.glu --------------------------------------------------------------------------------
record_case(lines, "prelu.single", lambda x, w: F.prelu(x, w), [(2, 3, 4), (1,)], both)
record_case(lines, "prelu.channels", lambda x, w: F.prelu(x, w), [(2, 3, 4), (3,)], both)
record_case(lines, "prelu.vector", lambda x, w: F.prelu(x, w), [(5,), (1,)], both)
record_case(lines, "glu.last", lambda x: F.glu(x), [(4, 6)], both)
record_case(lines, "glu.dim1", lambda x: F.glu(x, 1), [(2, 4, 3)], both)
# Halves long enough for PyTorch's vector formula and its scalar tail (exp from SLEEF there, from the C
# library here): rows of 37 along the last dim, runs of 700 across the last two.
record_case(lines, "glu.long", lambda x: F.glu(x * 4), [(8, 74)], both)
record_case(lines, "glu.mid", lambda x: F.glu(x * 4, 1), [(3, 200, 7)], both)

with open(os.path.join(HERE, "nn_gaps.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")

reprs = {
    "conv2d_same_reflect": nn.Conv2d(2, 3, (3, 4), padding="same", padding_mode="reflect", dilation=2),
    "conv2d_valid": nn.Conv2d(2, 3, 3, padding="valid"),
    "conv2d_circular": nn.Conv2d(2, 4, 3, stride=2, padding=(1, 2), padding_mode="circular", bias=False),
    "conv1d_valid_circular": nn.Conv1d(2, 3, 4, padding="valid", padding_mode="circular"),
    "conv1d_replicate": nn.Conv1d(2, 3, 4, padding=2, padding_mode="replicate", bias=False),
    "maxpool_all": nn.MaxPool2d(3, 2, 1, dilation=2, return_indices=True, ceil_mode=True),
    "maxpool_dil": nn.MaxPool2d((2, 3), dilation=(1, 2)),
    "avgpool_ceil": nn.AvgPool2d(2, ceil_mode=True, divisor_override=3),
    "maxpool1d": nn.MaxPool1d(3, 2, 1, dilation=2, ceil_mode=True),
    "maxpool1d_default": nn.MaxPool1d(2),
    "avgpool1d": nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False),
    "cosine_similarity": nn.CosineSimilarity(dim=0, eps=1e-3),
    "pairwise_distance": nn.PairwiseDistance(p=1, keepdim=True),
    "prelu": nn.PReLU(3, init=0.1),
    "glu": nn.GLU(dim=0),
}
with open(os.path.join(HERE, "nn_gaps_repr.txt"), "w") as f:
    for k, m in reprs.items():
        f.write(f"=== {k}\n{m}\n")

# ---- MultiheadAttention: kdim/vdim, add_bias_kv, add_zero_attn (appended to nn_gaps.txt) -------------
mha_lines = []


def mha_case(name, seed, kwargs, n, l, s, masked, batched=True):
    """A MultiheadAttention made after manual_seed(seed): its float32 initial parameters, then in
    float64 its output, averaged weights and the gradients of (out * w).sum() + (weights * w2).sum()."""
    torch.manual_seed(seed)
    m = nn.MultiheadAttention(**kwargs)
    for k, p in m.named_parameters():
        mha_lines.append(tensor_line(f"{name}.init.{k}", p))
    m = m.double()
    e, kd, vd = kwargs["embed_dim"], kwargs.get("kdim") or kwargs["embed_dim"], kwargs.get("vdim") or kwargs["embed_dim"]
    bf = kwargs.get("batch_first", False)
    g = torch.Generator().manual_seed(seed + 100)

    def shape(length, feat):
        if not batched:
            return (length, feat)
        return (n, length, feat) if bf else (length, n, feat)

    q = torch.randn(shape(l, e), generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(shape(s, kd), generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(shape(s, vd), generator=g, dtype=torch.float64, requires_grad=True)
    mask = None
    if masked == 2:
        mask = torch.randn(l, s, generator=g, dtype=torch.float64)
    elif masked == 3:
        mask = torch.randn(n * kwargs["num_heads"], l, s, generator=g, dtype=torch.float64)
    out, w = m(q, k, v, attn_mask=mask)
    wo = torch.randn(out.shape, generator=g, dtype=torch.float64)
    ww = torch.randn(w.shape, generator=g, dtype=torch.float64)
    ((out * wo).sum() + (w * ww).sum()).backward()
    for key, t in (("q", q), ("k", k), ("v", v), ("out", out), ("weights", w), ("wo", wo), ("ww", ww),
                   ("gq", q.grad), ("gk", k.grad), ("gv", v.grad)):
        mha_lines.append(tensor_line(f"{name}.{key}", t))
    if mask is not None:
        mha_lines.append(tensor_line(f"{name}.mask", mask))
    for k_, p in m.named_parameters():
        mha_lines.append(tensor_line(f"{name}.g.{k_}", p.grad))


mha_case("mha.kvdim", 31, dict(embed_dim=8, num_heads=2, kdim=5, vdim=3), 2, 3, 4, 2)
mha_case("mha.bias_kv_zero", 32, dict(embed_dim=6, num_heads=3, add_bias_kv=True, add_zero_attn=True,
                                      batch_first=True), 2, 3, 5, 3)
mha_case("mha.bias_kv_unbatched", 33, dict(embed_dim=4, num_heads=2, add_bias_kv=True, kdim=3), 1, 2, 3, 2,
         batched=False)
mha_case("mha.zero_attn_nobias", 34, dict(embed_dim=6, num_heads=2, add_zero_attn=True, bias=False, vdim=2), 3, 2, 4,
         0)

with open(os.path.join(HERE, "nn_gaps.txt"), "a") as f:
    f.write("\n".join(mha_lines) + "\n")
with open(os.path.join(HERE, "nn_gaps_repr.txt"), "a") as f:
    f.write("=== mha_kvdim\n" + ", ".join(k for k, _ in nn.MultiheadAttention(8, 2, kdim=5, vdim=3,
                                                                          add_bias_kv=True).named_parameters()) + "\n")
