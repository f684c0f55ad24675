# Writes distributed.txt: torch.utils.data.DistributedSampler's shares, for test_distributed.cpp.
#
# Run from anywhere with the Python that has PyTorch 1.13 (CPU):  /usr/bin/python3 tests/golden/gen_distributed.py
#
# One int64 tensor per line (golden_writer's format), named
# sampler.<size>.<shuffle>.<seed>.<epoch>.<drop_last>.<num_replicas>.<rank>: the indices that rank gets.
# The sampler is given num_replicas and rank, so no process group is needed.
import os

import torch
from golden_writer import tensor_line
from torch.utils.data import DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = [  # size, shuffle, seed, epoch, drop_last, num_replicas
    (10, True, 0, 0, False, 2),
    (10, True, 0, 1, False, 2),
    (1000, True, 0, 0, False, 2),
    (1000, True, 1234, 7, False, 3),
    (7, True, 5, 2, False, 3),      # padded by two
    (2, True, 0, 0, False, 5),      # padding longer than the data: repeated
    (7, False, 0, 0, False, 3),
    (7, True, 3, 1, True, 3),       # the tail dropped
    (1, True, 0, 0, True, 2),       # nothing left
    (5003, True, 42, 3, False, 4),
]


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def main():
    lines = []
    for size, shuffle, seed, epoch, drop_last, replicas in CASES:
        for rank in range(replicas):
            s = DistributedSampler(Sized(size), num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed,
                                   drop_last=drop_last)
            s.set_epoch(epoch)
            name = f"sampler.{size}.{int(shuffle)}.{seed}.{epoch}.{int(drop_last)}.{replicas}.{rank}"
            lines.append(tensor_line(name, torch.tensor(list(iter(s)), dtype=torch.int64)))
    try:
        DistributedSampler(Sized(10), num_replicas=3, rank=3)
    except ValueError as e:
        lines.append(f"# torch: {e}")
    with open(os.path.join(HERE, "distributed.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
