# Writes conv_classifier.txt: the first 30 training losses of examples/conv_classifier.cpp's network,
# built in PyTorch 1.13 with the same seeds, images and optimizer (test conv_classifier_matches_torch).
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_conv_classifier.py [--steps N]
# Prints the time per step (for docs/models.md); the file holds only the losses, one per line, as
# %.9g (float32 round-trips through 9 significant digits).
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv_classifier.txt")
# 30 losses, not 50: this network's curve amplifies tiny differences. PyTorch's own run, with its
# gradients multiplied by 1 + u (u uniform in ±1e-6, the size of the convolutions' summation-order
# differences from xgrad's), moved by more than 1e-4 at step 40 or 48 in 9 of 24 trials; over the
# first 35 steps by at most 4e-5, over the first 30 by at most 4.5e-6 (20 trials).
STEPS = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 30
SIZE, CLASSES, BATCH, NOISE, LR = 16, 3, 32, 0.5, 1e-2


def images(n, gen):
    labels = torch.randint(CLASSES, (n,), generator=gen)
    at = torch.randint(SIZE - 4, (n, 2), generator=gen).tolist()
    noise = torch.randn(n, 1, SIZE, SIZE, generator=gen)
    base = torch.zeros(n, 1, SIZE, SIZE)
    for i, (c, (a, b)) in enumerate(zip(labels.tolist(), at)):
        if c == 0:
            base[i, 0, a:a + 2, :] = 1
        elif c == 1:
            base[i, 0, :, a:a + 2] = 1
        else:
            base[i, 0, a:a + 5, b:b + 5] = 1
    return base + noise * NOISE, labels


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, 1, 1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, CLASSES))
opt = torch.optim.Adam(model.parameters(), lr=LR)
eval_gen, data_gen = torch.Generator().manual_seed(2), torch.Generator().manual_seed(1)
images(300, eval_gen)  # the held-out set, drawn as the example draws it (from its own generator)
losses = []
start = time.perf_counter()
for step in range(STEPS):
    x, y = images(BATCH, data_gen)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
seconds = time.perf_counter() - start
print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: {1e3 * seconds / STEPS:.2f} ms per step "
      f"over {STEPS} steps; loss {losses[0]:.4f} -> {losses[-1]:.4f}")
if "--steps" not in sys.argv:
    with open(OUT, "w") as f:
        f.write("".join(f"{l:.9g}\n" for l in losses))
