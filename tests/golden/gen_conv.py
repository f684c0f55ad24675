#!/usr/bin/python3
"""Golden values for xgrad's convolution, pooling and batch/group norm: Conv1d/Conv2d initialisation,
conv1d/conv2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d, batch_norm and group_norm forward and
backward, BatchNorm running statistics, Dropout2d masks, and the modules' repr.

Run from anywhere with Debian's python3-torch: /usr/bin/python3 tests/golden/gen_conv.py
Writes conv.txt (tensors, see tests/golden.hpp for the format) and conv_repr.txt (`key<TAB>repr`).

PyTorch's error messages that test_conv.cpp matches (torch 1.13, RuntimeError / ValueError):
  conv2d(x (2,5,8,8), w (4,3,3,3)): Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 5, 8, 8]
      to have 3 channels, but got 5 channels instead
  conv2d(x (8,8)): Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [8, 8]
  conv2d(x (2,3,2,2), w (4,3,3,3)): Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3).
      Kernel size can't be greater than actual input size
  conv2d(groups=3, w (4,3,3,3)): Given groups=3, expected weight to be divisible by 3 at dimension 0, but got
      weight of size [[4, 3, 3, 3]] instead   (xgrad prints the size with single brackets)
  conv2d(w (6,2,3,3), b (5)): Given weight of size [6, 2, 3, 3], expected bias to be 1-dimensional with 6
      elements, but got bias of size [5] instead
  stride=0: non-positive stride is not supported; padding=-1: negative padding is not supported;
  dilation=0: non-positive dilation is not supported; groups=0: non-positive groups is not supported
  conv1d(x (2,3,2), w (4,3,3)): Calculated padded input size per channel: (2). Kernel size: (3). ...
  nn.Conv2d(3, 4, 3, groups=2): in_channels must be divisible by groups (and out_channels likewise)
  conv2d with a 3-D weight: torch says "expected stride to be a single integer value or a list of 1 values to
      match the convolution dimensions, but got stride=[1, 1]"; xgrad says which weight it expected instead.
  max_pool2d(x (1,1,2,2), 3): Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small
  max_pool2d(x (1,1,5,5), 2, padding=2): pad should be at most half of kernel size, but got pad=2 and kernel_size=2
  max_pool2d(x (5,5)): non-empty 3D or 4D (batch mode) tensor expected for input
  adaptive_avg_pool2d(x (5)): adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5]
  BatchNorm2d(3)(x (2,3,4)): expected 4D input (got 3D input); BatchNorm1d: expected 2D or 3D input (got 4D input)
  BatchNorm1d(3)(x (1,3)) training: Expected more than 1 value per channel when training, got input size
      torch.Size([1, 3])
  BatchNorm1d(3)(x (4,5)): running_mean should contain 5 elements not 3
  nn.GroupNorm(4, 6): num_channels must be divisible by num_groups
  group_norm(x (2,6,3), 4): Expected number of channels in input to be divisible by num_groups, but got input of
      shape [2, 6, 3] and num_groups=4
  dropout2d(p=1.5): dropout probability has to be between 0 and 1, but got 1.5
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from golden_writer import record_case, tensor_line

HERE = os.path.dirname(os.path.abspath(__file__))
lines = []


def put(name, t):
    lines.append(tensor_line(name, t))


# Initialisation: each module draws its weight, then its bias, from the default generator.
torch.manual_seed(0)
for k, v in nn.Conv2d(3, 4, 3).state_dict().items():
    put("init.conv2d." + k, v)
for k, v in nn.Conv2d(4, 6, (3, 5), groups=2, bias=False).state_dict().items():
    put("init.conv2d_g2." + k, v)
for k, v in nn.Conv1d(4, 6, 3, groups=2).state_dict().items():
    put("init.conv1d." + k, v)
put("init.after", torch.rand(3))

both = ("float32", "float64")
record_case(lines, "conv2d.basic", lambda x, w, b: F.conv2d(x, w, b), [(2, 3, 7, 6), (4, 3, 3, 3), (4,)], both)
record_case(lines, "conv2d.stride_pad", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 0)),
            [(2, 3, 7, 6), (4, 3, 3, 2), (4,)], both)
record_case(lines, "conv2d.dilation_groups",
            lambda x, w, b: F.conv2d(x, w, b, padding=2, dilation=2, groups=2), [(1, 4, 9, 8), (6, 2, 3, 3), (6,)],
            both)
record_case(lines, "conv2d.depthwise", lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=4),
            [(2, 4, 5, 5), (4, 1, 3, 3)], both)
record_case(lines, "conv2d.unbatched", lambda x, w: F.conv2d(x, w), [(3, 5, 5), (2, 3, 2, 2)], both)
record_case(lines, "conv1d.all", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
            [(2, 4, 10), (6, 2, 3), (6,)], both)
record_case(lines, "conv1d.unbatched", lambda x, w: F.conv1d(x, w), [(3, 8), (5, 3, 3)], both)

record_case(lines, "max_pool2d.k3s2p1", lambda x: F.max_pool2d(x, 3, 2, 1), [(2, 3, 7, 6)], both)
record_case(lines, "max_pool2d.k23", lambda x: F.max_pool2d(x, (2, 3)), [(3, 7, 7)], both)
record_case(lines, "max_pool2d.overlap", lambda x: F.max_pool2d(x, 3, 1), [(1, 2, 5, 6)], both)
record_case(lines, "avg_pool2d.k3s2p1", lambda x: F.avg_pool2d(x, 3, 2, 1), [(2, 3, 7, 6)], both)
record_case(lines, "avg_pool2d.no_pad_count", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
            [(2, 3, 7, 6)], both)
record_case(lines, "avg_pool2d.k2", lambda x: F.avg_pool2d(x, (2, 3), 1), [(3, 5, 6)], both)
record_case(lines, "adaptive.down", lambda x: F.adaptive_avg_pool2d(x, (3, 4)), [(2, 3, 7, 6)], both)
record_case(lines, "adaptive.global", lambda x: F.adaptive_avg_pool2d(x, 1), [(2, 3, 5, 4)], both)
record_case(lines, "adaptive.up", lambda x: F.adaptive_avg_pool2d(x, (5, 7)), [(2, 4, 5)], both)

# Ties in max pooling: the first maximum of the window (row-major) wins and gets the gradient.
x = torch.tensor([[[[1.0, 3.0, 3.0], [3.0, 0.0, 3.0], [2.0, 3.0, 1.0]]]], dtype=torch.float64, requires_grad=True)
put("max_pool2d.ties.x", x)
y = F.max_pool2d(x, 2, 1)
put("max_pool2d.ties.y", y)
y.sum().backward()
put("max_pool2d.ties.dx", x.grad)

# Batch norm as a function: batch statistics (training) and given running statistics (eval).
record_case(lines, "batch_norm.train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
            [(4, 3, 5, 2), (3,), (3,)], both)
record_case(lines, "batch_norm.train1d", lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3), [(6, 4)],
            both)
rm, rv = torch.tensor([0.5, -0.25, 1.0]), torch.tensor([2.0, 0.5, 1.5])
put("batch_norm.rm", rm)
put("batch_norm.rv", rv)
record_case(lines, "batch_norm.eval", lambda x, w, b: F.batch_norm(x, rm.to(x.dtype), rv.to(x.dtype), w, b, False),
            [(4, 3, 5, 2), (3,), (3,)], both)
record_case(lines, "group_norm.affine", lambda x, w, b: F.group_norm(x, 3, w, b), [(2, 6, 4, 3), (6,), (6,)], both)
record_case(lines, "group_norm.plain", lambda x: F.group_norm(x, 2, eps=1e-3), [(3, 4, 5)], both)

# BatchNorm modules: running statistics over training steps (unbiased variance), then eval mode.
g = torch.Generator().manual_seed(11)
bn = nn.BatchNorm2d(3)
for step in range(2):
    x = torch.randn(4, 3, 5, 2, generator=g) * 2 + 1
    put(f"bn2d.x{step}", x)
    put(f"bn2d.y{step}", bn(x))
for k, v in bn.state_dict().items():
    put("bn2d.state." + k, v)
bn.eval()
put("bn2d.eval", bn(x))
bn1 = nn.BatchNorm1d(4, momentum=None)
for step in range(3):
    x = torch.randn(5, 4, 3, generator=g) + step
    put(f"bn1d.x{step}", x)
    put(f"bn1d.y{step}", bn1(x))
for k, v in bn1.state_dict().items():
    put("bn1d.state." + k, v)

# Dropout2d draws one Bernoulli per (sample, channel) from the default generator.
torch.manual_seed(5)
put("dropout2d.p03", F.dropout2d(torch.ones(2, 4, 3, 3), 0.3))
put("dropout2d.module", nn.Dropout2d(0.5)(torch.ones(3, 5, 2, 2, dtype=torch.float64)))
put("dropout2d.after", torch.rand(3))

# Max pooling over wide rows, where xgrad takes the windows side by side in vector lanes: the indices
# only (the values are x at them). x (1, 2, 5, 45) holds few distinct values (many ties) and some
# NaNs, from a formula of the index that the test computes too.
POOLS = {
    "k3s1p1": dict(kernel_size=3, stride=1, padding=1),
    "k2s2": dict(kernel_size=2, stride=2),
    "k3s2p1": dict(kernel_size=3, stride=2, padding=1),
    "k3s1p1d2": dict(kernel_size=3, stride=1, padding=1, dilation=2),
    "k25s13": dict(kernel_size=(2, 5), stride=(1, 3)),
}
for dt in ("float32", "float64"):
    vals = [float("nan") if k % 53 == 7 else float((k * 37) % 5 - 2) for k in range(2 * 5 * 45)]
    xw = torch.tensor(vals, dtype=getattr(torch, dt)).reshape(1, 2, 5, 45)
    for name, args in POOLS.items():
        _, idx = F.max_pool2d(xw, return_indices=True, **args)
        put(f"max_pool2d.wide.{name}.{dt}.idx", idx)

with open(os.path.join(HERE, "conv.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")

reprs = {
    "conv2d": nn.Conv2d(3, 4, 3),
    "conv2d_all": nn.Conv2d(3, 4, (3, 5), stride=2, padding=1, dilation=2, bias=False),
    "conv2d_stride": nn.Conv2d(2, 2, 1, stride=(1, 2)),
    "conv1d": nn.Conv1d(4, 6, 3, padding=1, groups=2),
    "maxpool": nn.MaxPool2d(2),
    "maxpool_tuple": nn.MaxPool2d((2, 3), stride=1, padding=1),
    "avgpool": nn.AvgPool2d(3),
    "avgpool_all": nn.AvgPool2d(2, 1, 1, count_include_pad=False),
    "adaptive": nn.AdaptiveAvgPool2d((5, 7)),
    "adaptive1": nn.AdaptiveAvgPool2d(3),
    "bn2d": nn.BatchNorm2d(3),
    "bn1d": nn.BatchNorm1d(4, momentum=None, affine=False, track_running_stats=False),
    "gn": nn.GroupNorm(2, 6),
    "gn_all": nn.GroupNorm(3, 6, eps=1e-3, affine=False),
    "dropout2d": nn.Dropout2d(0.2),
}
with open(os.path.join(HERE, "conv_repr.txt"), "w") as f:
    for k, m in reprs.items():
        f.write(f"{k}\t{m}\n")
