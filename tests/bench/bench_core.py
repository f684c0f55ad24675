# The PyTorch twin of bench_core.cpp: the same benchmarks, values and output format, for the ratio.
#
# Usage: /usr/bin/python3 bench_core.py [--threads N] [tiny] [ew] [mm] [mem]
# Prints readable lines and `RESULT name median p10 p90 unit` lines, as bench_core.cpp does.
import argparse
import sys
import time

try:
    import torch
except ImportError:
    print("bench_core.py: torch is not importable with %s; no PyTorch figures" % sys.executable)
    sys.exit(0)


def stats_of(values):
    v = sorted(values)

    def at(q):
        return v[int(q * (len(v) - 1) + 0.5)]

    return at(0.5), at(0.1), at(0.9)


# Thread CPU time when PyTorch runs on this one thread (time spent preempted is not counted), else
# wall time, as bench_core.cpp chooses.
clock = time.perf_counter


def measure(fn, warmup, min_reps, min_seconds, max_reps, batch=1):
    """Seconds per call of fn, as measure() in bench_core.cpp."""
    for _ in range(warmup):
        fn()
    per_call = []
    start = time.perf_counter()
    while len(per_call) < max_reps:
        t0 = clock()
        for _ in range(batch):
            fn()
        per_call.append((clock() - t0) / batch)
        if len(per_call) >= min_reps and time.perf_counter() - start >= min_seconds:
            break
    return per_call


def result(name, s, unit):
    print("RESULT %s %.6g %.6g %.6g %s" % (name, s[0], s[1], s[2], unit), flush=True)


def report_rate(name, seconds, work, scale, unit):
    t = stats_of(seconds)
    r = (work / t[0] / scale, work / t[2] / scale, work / t[1] / scale)
    print("%-22s %10.2f %-8s (p10 %.2f, p90 %.2f; median %.3f ms, %d reps)"
          % (name, r[0], unit, r[1], r[2], t[0] * 1e3, len(seconds)))
    result(name, r, unit)


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024.0
    return -1.0


def pattern(count, salt, scale):
    """The deterministic values of pattern() in bench_core.cpp, computed in float64 then rounded."""
    k = (torch.arange(count, dtype=torch.int64) * 37 + salt * 11) % 23
    return ((k.double() - 11.0) / 11.0 * scale).float()


# ---- (1) the tiny training step ----------------------------------------------------------------

class TinyNet:
    def __init__(self):
        self.x = pattern(10, 1, 1.0).reshape(2, 5)
        self.y = torch.tensor([[0.5], [-0.25]])
        self.w1 = pattern(30, 2, 0.4).reshape(6, 5).requires_grad_()
        self.b1 = pattern(6, 3, 0.1).requires_grad_()
        self.w2 = pattern(6, 4, 0.4).reshape(1, 6).requires_grad_()
        self.b2 = pattern(1, 5, 0.1).requires_grad_()
        self.params = [self.w1, self.b1, self.w2, self.b2]

    def step(self, lr):
        h = torch.matmul(self.x, self.w1.t()).add(self.b1).relu()
        pred = torch.matmul(h, self.w2.t()).add(self.b2)
        loss = (pred - self.y).pow(2).mean()
        loss.backward()
        with torch.no_grad():
            for p in self.params:
                p.add_(p.grad, alpha=-lr)
                p.grad = None
        return loss


LR = 0.01


def bench_tiny_step():
    net = TinyNet()
    samples = measure(lambda: net.step(LR), warmup=2000, min_reps=100, min_seconds=3.0,
                      max_reps=100000, batch=100)
    s = stats_of([x * 1e6 for x in samples])
    print("%-22s %10.2f %-8s (p10 %.2f, p90 %.2f; %d samples of 100 steps)"
          % ("tiny_step", s[0], "us/step", s[1], s[2], len(samples)))
    result("tiny_step", s, "us")


def bench_memory():
    net = TinyNet()
    rss_1k = loss_1k = 0.0
    loss = None
    for i in range(1, 100001):
        loss = net.step(LR)
        if i == 1000:
            rss_1k = rss_mib()
            loss_1k = loss.item()
    rss_100k = rss_mib()
    print("%-22s %10.2f MiB after 10^3 steps, %.2f MiB after 10^5 (growth %.2f MiB)"
          % ("rss", rss_1k, rss_100k, rss_100k - rss_1k))
    print("%-22s %.8g after 10^3 steps, %.8g after 10^5" % ("tiny_loss", loss_1k, loss.item()))
    result("rss_1e3_steps", (rss_1k,) * 3, "MiB")
    result("rss_1e5_steps", (rss_100k,) * 3, "MiB")
    result("rss_growth", (rss_100k - rss_1k,) * 3, "MiB")
    result("tiny_loss_1e3", (loss_1k,) * 3, "loss")
    result("tiny_loss_1e5", (loss.item(),) * 3, "loss")


# ---- (2) elementwise and (3) reductions on 1024x1500 float32 -----------------------------------

ROWS, COLS = 1024, 1500
N = ROWS * COLS
F = 4.0


def bench_bytes(name, nbytes, fn):
    report_rate(name, measure(fn, warmup=5, min_reps=30, min_seconds=0.5, max_reps=400), nbytes, 1e9, "GB/s")


def bench_elementwise_and_reductions():
    a = pattern(N, 6, 2.0).reshape(ROWS, COLS)
    b = pattern(N, 7, 2.0).reshape(ROWS, COLS)
    bench_bytes("add", 3 * N * F, lambda: a + b)
    bench_bytes("mul", 3 * N * F, lambda: a * b)
    bench_bytes("exp", 2 * N * F, lambda: a.exp())
    bench_bytes("relu", 2 * N * F, lambda: a.relu())
    bench_bytes("mul2_add1", 2 * N * F, lambda: a * 2.0 + 1.0)
    bench_bytes("sum_dim", (N + ROWS) * F, lambda: a.sum(-1))
    bench_bytes("mean_dim", (N + ROWS) * F, lambda: a.mean(-1))
    bench_bytes("var_dim", (N + ROWS) * F, lambda: a.var(-1))
    bench_bytes("sum_all", (N + 1) * F, lambda: a.sum())


# ---- (4) matmul 1024x2048 . 2048x1500 ------------------------------------------------------------

def bench_matmul():
    n, k, m = 1024, 2048, 1500
    a = pattern(n * k, 8, 1.0).reshape(n, k)
    b = pattern(k * m, 9, 1.0).reshape(k, m)
    seconds = measure(lambda: torch.matmul(a, b), warmup=1, min_reps=5, min_seconds=4.0, max_reps=30)
    report_rate("matmul", seconds, 2.0 * n * k * m, 1e9, "GFLOP/s")


def main():
    parser = argparse.ArgumentParser(description="PyTorch twin of xgrad's bench_core")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: PyTorch's own choice)")
    parser.add_argument("which", nargs="*", help="tiny, ew, mm, mem (default: all)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    global clock
    threads = torch.get_num_threads()
    clock = time.thread_time if threads == 1 else time.perf_counter
    print("PyTorch %s bench: float32, %d intra-op thread(s), timed by %s"
          % (torch.__version__, threads, "thread CPU time" if threads == 1 else "wall time"))
    result("threads", (threads,) * 3, "count")
    wanted = lambda what: not args.which or what in args.which  # noqa: E731
    # Inputs of (2)-(4) do not require grad, so no graph is recorded there, as in bench_core.cpp.
    if wanted("tiny"):
        bench_tiny_step()
    if wanted("ew"):
        bench_elementwise_and_reductions()
    if wanted("mm"):
        bench_matmul()
    if wanted("mem"):
        bench_memory()


if __name__ == "__main__":
    main()
