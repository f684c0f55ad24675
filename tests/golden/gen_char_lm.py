# Writes char_lm.txt: the first 50 training losses of examples/char_lm.cpp's model, built in PyTorch
# 1.13 with the same seeds, construction order, batches and optimizer (test char_lm_matches_torch).
#
# Run from the repository root with a Python that has torch (1.13):
#     /usr/bin/python3 tests/golden/gen_char_lm.py [--steps N]
# The training text is read from examples/char_lm.cpp, so the two cannot drift apart. Prints the
# time per step (for docs/models.md); the file holds only the losses, one per line, as %.9g
# (float32 round-trips through 9 significant digits).
import ast
import math
import os
import re
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "char_lm.txt")
STEPS = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 50

src = open(os.path.join(ROOT, "examples", "char_lm.cpp")).read()
body = re.search(r"kText =(.*?);\n", src, re.S).group(1)
text = "".join(ast.literal_eval(lit) for lit in re.findall(r'"(?:[^"\\]|\\.)*"', body))

CONTEXT, BATCH, EMBED, HEADS, BLOCKS, LR = 32, 16, 48, 4, 2, 3e-3


class RMSNorm(nn.Module):  # torch.nn.RMSNorm arrived in 2.4: its definition, eps=None → finfo.eps
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + torch.finfo(x.dtype).eps) * self.weight


def causal_mask(t):
    return torch.full((t, t), -math.inf).triu(1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = RMSNorm(EMBED)
        self.attn = nn.MultiheadAttention(EMBED, HEADS, batch_first=True)
        self.norm2 = RMSNorm(EMBED)
        self.fc1 = nn.Linear(EMBED, 4 * EMBED)
        self.fc2 = nn.Linear(4 * EMBED, EMBED)

    def forward(self, x):
        h = self.norm1(x)
        y = x + self.attn(h, h, h, attn_mask=causal_mask(x.shape[1]), need_weights=False)[0]
        return y + self.fc2(F.gelu(self.fc1(self.norm2(y))))


class CharLM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.tok = nn.Embedding(vocab, EMBED)
        self.pos = nn.Embedding(CONTEXT, EMBED)
        self.blocks = nn.ModuleList([Block() for _ in range(BLOCKS)])
        self.norm = RMSNorm(EMBED)
        self.head = nn.Linear(EMBED, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


vocab = sorted(set(text))
data = [vocab.index(c) for c in text]
torch.manual_seed(0)
model = CharLM(len(vocab))
opt = torch.optim.AdamW(model.parameters(), lr=LR)
gen = torch.Generator().manual_seed(1)
losses = []
start = time.perf_counter()
for step in range(STEPS):
    starts = torch.randint(len(data) - CONTEXT, (BATCH,), generator=gen).tolist()
    x = torch.tensor([data[s:s + CONTEXT] for s in starts])
    y = torch.tensor([data[s + 1:s + CONTEXT + 1] for s in starts])
    loss = F.cross_entropy(model(x).view(BATCH * CONTEXT, len(vocab)), y.view(BATCH * CONTEXT))
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
