# The PyTorch twin of bench_core.cpp: the same workloads, sizes, values, accounting and output format.
#
# Usage: /usr/bin/python3 bench_core.py [--threads N] [tiny] [norm] [linear] [mm] [ew] [layers] [mlp] [mem] [sweep]
# Prints readable lines, `RESULT name median p10 p90 unit` and `SWEEP series size seconds` lines, as
# bench_core.cpp does (which also measures the machine's limits and states the goals). RMSNorm is
# PyTorch 1.13's composite, x * rsqrt(mean(x^2) + eps) * w: 1.13 has no F.rms_norm.
import argparse
import ctypes
import os
import resource
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("bench_core.py: torch is not importable with %s; no PyTorch figures" % sys.executable)
    sys.exit(0)


def stats_of(values):
    v = sorted(values)

    def at(q):
        return v[int(q * (len(v) - 1) + 0.5)]

    return at(0.5), at(0.1), at(0.9)


# The process's CPU time when PyTorch runs on one thread (time spent preempted is not counted, and a
# helper thread that runs anyway is), else wall time, as bench_core.cpp chooses.
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
    if not isinstance(s, tuple):
        s = (s,) * 3
    print("RESULT %s %.6g %.6g %.6g %s" % (name, s[0], s[1], s[2], unit), flush=True)


def report_rate(name, seconds, work, scale, unit):
    t = stats_of(seconds)
    r = (work / t[0] / scale, work / t[2] / scale, work / t[1] / scale)
    print("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; median %.3f ms, %d reps)"
          % (name, r[0], unit, r[1], r[2], t[0] * 1e3, len(seconds)))
    result(name, r, unit)


def status_mib(field="VmRSS"):
    """VmRSS (resident now) or VmHWM (peak resident) of this process in MiB, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return float(line.split()[1]) / 1024.0
    return -1.0


def rss_mib():
    return status_mib("VmRSS")


def pattern(count, salt, scale):
    """The deterministic values of pattern() in bench_core.cpp, computed in float64 then rounded."""
    k = (torch.arange(count, dtype=torch.int64) * 37 + salt * 11) % 23
    return ((k.double() - 11.0) / 11.0 * scale).float()


def pattern_tensor(shape, salt, scale):
    n = 1
    for s in shape:
        n *= s
    return pattern(n, salt, scale).reshape(shape)


FB = 4.0  # bytes per float32


# ---- the tiny training step ----------------------------------------------------------------------

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
    samples = measure(lambda: net.step(LR), warmup=2000, min_reps=100, min_seconds=2.0,
                      max_reps=100000, batch=100)
    s = stats_of([x * 1e6 for x in samples])
    print("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; %d samples of 100 steps)"
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
    print("%-26s %10.2f MiB after 10^3 steps, %.2f MiB after 10^5 (growth %.2f MiB)"
          % ("rss", rss_1k, rss_100k, rss_100k - rss_1k))
    print("%-26s %.8g after 10^3 steps, %.8g after 10^5" % ("tiny_loss", loss_1k, loss.item()))
    result("rss_1e3_steps", rss_1k, "MiB")
    result("rss_1e5_steps", rss_100k, "MiB")
    result("rss_growth", rss_100k - rss_1k, "MiB")
    result("tiny_loss_1e3", loss_1k, "loss")
    result("tiny_loss_1e5", loss.item(), "loss")


# ---- LayerNorm and RMSNorm -------------------------------------------------------------------------

LN_EPS, RMS_EPS = 1e-5, 1e-6


def rms_norm_composite(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w


def norm_case(rms, backward, rows, cols):
    """The call and the bytes of one normalisation workload, as norm_case() in bench_core.cpp."""
    n, c = float(rows * cols), float(cols)
    x = pattern_tensor((rows, cols), 10, 1.0)
    w = pattern_tensor((cols,), 11, 0.5).add(1.0)
    b = pattern_tensor((cols,), 12, 0.1)
    dy = pattern_tensor((rows, cols), 13, 1.0)
    if not backward:
        if rms:
            return (lambda: rms_norm_composite(x, w)), (2 * n + c) * FB
        return (lambda: F.layer_norm(x, (cols,), w, b, LN_EPS)), (2 * n + 2 * c) * FB
    for t in (x, w, b):
        t.requires_grad_()

    def fwd_bwd():
        y = rms_norm_composite(x, w) if rms else F.layer_norm(x, (cols,), w, b, LN_EPS)
        y.backward(dy)
        x.grad = w.grad = b.grad = None

    return fwd_bwd, ((5 * n + 3 * c) if rms else (5 * n + 5 * c)) * FB


def bench_norms():
    for rows, cols in ((1024, 1500), (16384, 768)):
        for rms in (False, True):
            for backward in (False, True):
                name = "%s_%s_%dx%d" % ("rmsnorm" if rms else "layernorm",
                                        "fwdbwd" if backward else "fwd", rows, cols)
                fn, nbytes = norm_case(rms, backward, rows, cols)
                report_rate(name, measure(fn, 3, 7, 0.4, 1000), nbytes, 1e9, "GB/s")


def sweep_norms():
    for rms in (False, True):
        rows = 256
        while rows <= 16384:
            fn, _ = norm_case(rms, True, rows, 768)
            t = stats_of(measure(fn, 2, 5, 0.25, 1000))
            print("SWEEP %s %d %.6g" % ("rmsnorm_fwdbwd" if rms else "layernorm_fwdbwd", rows, t[0]),
                  flush=True)
            rows *= 2


# ---- Linear and matmul ---------------------------------------------------------------------------

def bench_linear():
    n, k, m = 1024, 2048, 1500
    torch.manual_seed(0)
    fc = torch.nn.Linear(k, m)
    x = pattern_tensor((n, k), 14, 1.0)
    dy = pattern_tensor((n, m), 15, 0.01)
    flops = 2.0 * n * k * m
    with torch.no_grad():
        report_rate("linear_fwd", measure(lambda: fc(x), 1, 4, 0.8, 200), flops, 1e9, "GFLOP/s")
    x.requires_grad_()

    def fwd_bwd():
        fc(x).backward(dy)
        x.grad = fc.weight.grad = fc.bias.grad = None

    report_rate("linear_fwdbwd", measure(fwd_bwd, 1, 3, 1.0, 200), 3 * flops, 1e9, "GFLOP/s")


def bench_matmul():
    n = 64
    while n <= 2048:
        a = pattern_tensor((n, n), 8, 1.0)
        b = pattern_tensor((n, n), 9, 1.0)
        seconds = measure(lambda: torch.matmul(a, b), 1 if n >= 1024 else 3, 3, 0.5, 2000)
        report_rate("matmul_%d" % n, seconds, 2.0 * n ** 3, 1e9, "GFLOP/s")
        print("SWEEP matmul %d %.6g" % (n, stats_of(seconds)[0]))
        n *= 2
    a = pattern_tensor((32, 256, 256), 8, 1.0)
    b = pattern_tensor((32, 256, 256), 9, 1.0)
    report_rate("bmm_32x256", measure(lambda: torch.matmul(a, b), 2, 3, 0.5, 2000),
                2.0 * 32 * 256 ** 3, 1e9, "GFLOP/s")


# ---- elementwise and reductions on 4096x4096 (16M) float32 -------------------------------------

def bench_elementwise_and_reductions():
    rows, cols = 4096, 4096
    n = float(rows * cols)
    a = pattern_tensor((rows, cols), 6, 2.0)
    b = pattern_tensor((rows, cols), 7, 2.0)
    row = pattern_tensor((cols,), 16, 1.0)

    def moved(name, nbytes, fn):
        report_rate(name, measure(fn, 2, 5, 0.4, 400), nbytes, 1e9, "GB/s")

    moved("add", 3 * n * FB, lambda: a + b)
    moved("mul", 3 * n * FB, lambda: a * b)
    moved("mul_scalar", 2 * n * FB, lambda: a * 0.5)
    moved("exp", 2 * n * FB, lambda: a.exp())
    moved("tanh", 2 * n * FB, lambda: a.tanh())
    moved("gelu", 2 * n * FB, lambda: F.gelu(a))
    moved("add_row", (2 * n + cols) * FB, lambda: a + row)
    moved("sum_dim", (n + rows) * FB, lambda: a.sum(-1))
    moved("var_dim", (n + rows) * FB, lambda: a.var(-1))
    moved("sum_all", (n + 1) * FB, lambda: a.sum())
    # Not goals: softmax over rows of 32 and log_softmax over a middle dim (bench_core.cpp).
    moved("softmax_rows32", 2 * n * FB, lambda: F.softmax(a.view(-1, 32), -1))
    moved("log_softmax_dim1", 2 * n * FB, lambda: F.log_softmax(a.view(64, 64, 4096), 1))
    # Not goals: an in-place update by a 0-d tensor, a sum over a broadcast dim, smooth_l1_loss
    # forward+backward (bench_core.cpp).
    c, one, col = a.clone(), torch.ones(()), pattern_tensor((rows, 1), 25, 1.0)
    moved("mul_inplace_0d", 2 * n * FB, lambda: c.mul_(one))
    moved("sum_expanded_dim1", n * FB, lambda: col.expand(rows, cols).sum(1))
    al = a.detach().requires_grad_()

    def smooth_l1():
        F.smooth_l1_loss(al, b, beta=0.3).backward()
        al.grad = None

    moved("smooth_l1_fwdbwd", 3 * n * FB, smooth_l1)
    # Not a goal: glu over the last dim, forward and backward (bench_core.cpp).
    glu_grad = b[:, : cols // 2].contiguous()

    def glu():
        F.glu(al, -1).backward(glu_grad)
        al.grad = None

    moved("glu_fwdbwd", 4 * n * FB, glu)
    # Not goals: the transcendental maps on 256x256 floats, in the level-2 cache (bench_core.cpp).
    small = pattern_tensor((256, 256), 17, 2.0)
    small_bytes = 2.0 * 256 * 256 * FB
    report_rate("exp_cached", measure(lambda: small.exp(), 5, 20, 0.2, 2000, batch=10), small_bytes, 1e9, "GB/s")
    report_rate("tanh_cached", measure(lambda: small.tanh(), 5, 20, 0.2, 2000, batch=10), small_bytes, 1e9, "GB/s")
    report_rate("gelu_cached", measure(lambda: F.gelu(small), 5, 20, 0.2, 2000, batch=10), small_bytes, 1e9, "GB/s")


# ---- batch and group norm, cdist -----------------------------------------------------------------

def bench_layers():
    """Not goals: BatchNorm and GroupNorm in training, the direct cdist (bench_core.cpp's bench_layers)."""
    shape = (32, 64, 56, 56)
    n, c = 32.0 * 64 * 56 * 56, 64
    x = pattern_tensor(shape, 18, 1.0)
    dy = pattern_tensor(shape, 19, 1.0)
    w = pattern_tensor((64,), 20, 1.0)
    b = pattern_tensor((64,), 21, 0.1)
    mean, var = torch.zeros(64), torch.ones(64)
    for batch in (True, False):
        name = "batch_norm" if batch else "group_norm"

        def norm(inp, wt, bs):
            if batch:
                return F.batch_norm(inp, mean, var, wt, bs, True)
            return F.group_norm(inp, 32, wt, bs)

        with torch.no_grad():
            report_rate(name + "_fwd", measure(lambda: norm(x, w, b), 2, 5, 0.4, 400), (2 * n + 4 * c) * FB, 1e9,
                        "GB/s")
        xl, wl, bl = (t.detach().requires_grad_() for t in (x, w, b))

        def fwd_bwd():
            norm(xl, wl, bl).backward(dy)
            for t in (xl, wl, bl):
                t.grad = None

        report_rate(name + "_fwdbwd", measure(fwd_bwd, 2, 5, 0.4, 400), (5 * n + 6 * c) * FB, 1e9, "GB/s")
    q, k = pattern_tensor((256, 64), 22, 1.0), pattern_tensor((200, 64), 23, 1.0)
    g = pattern_tensor((256, 200), 24, 1.0)
    for p in (2.0, 1.0):
        name = "cdist_p%d_fwdbwd" % p
        ql, kl = q.detach().requires_grad_(), k.detach().requires_grad_()

        def call():
            torch.cdist(ql, kl, p=p, compute_mode="donot_use_mm_for_euclid_dist").backward(g)
            ql.grad = None
            kl.grad = None

        t = stats_of(measure(call, 2, 10, 0.4, 2000))
        print("%-26s %10.3f ms      (p10 %.3f, p90 %.3f)" % (name, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3))
        result(name, (t[0] * 1e3, t[1] * 1e3, t[2] * 1e3), "ms")


# ---- the MLP training step -----------------------------------------------------------------------

class Mlp:
    """784-512-512-10, LayerNorm after each hidden Linear, batch 256, cross-entropy, Adam (lr 1e-3)."""

    def __init__(self):
        torch.manual_seed(0)
        nn = torch.nn
        self.model = nn.Sequential(nn.Linear(784, 512), nn.LayerNorm(512), nn.ReLU(), nn.Linear(512, 512),
                                   nn.LayerNorm(512), nn.ReLU(), nn.Linear(512, 10))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.x = pattern_tensor((256, 784), 17, 1.0)
        self.labels = (torch.arange(256, dtype=torch.int64) * 7 + 3) % 10

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(self.x), self.labels)
        loss.backward()
        self.opt.step()
        return loss


def cpu_seconds_of_process():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def mlp_rss_child():
    start = rss_mib()
    mlp = Mlp()
    for _ in range(20):
        mlp.step()
    peak = status_mib("VmHWM")  # not ru_maxrss, which Linux carries over an exec (see bench_core.cpp)
    print("%-26s %10.2f MiB (%.2f MiB above the %.2f MiB at the process's start)"
          % ("mlp_peak_rss", peak, peak - start, start))
    result("mlp_peak_rss", peak, "MiB")
    result("mlp_rss_growth", peak - start, "MiB")


def bench_mlp(threads):
    mlp = Mlp()
    wall0, cpu0 = time.perf_counter(), cpu_seconds_of_process()
    for _ in range(3):
        loss = mlp.step()
    loss3 = loss.item()
    t = stats_of(measure(mlp.step, 0, 10, 2.0, 1000))
    wall, cpu = time.perf_counter() - wall0, cpu_seconds_of_process() - cpu0
    rate = (1 / t[0], 1 / t[2], 1 / t[1])
    print("%-26s %10.2f steps/s (p10 %.2f, p90 %.2f; median %.3f ms)"
          % ("mlp_step", rate[0], rate[1], rate[2], t[0] * 1e3))
    result("mlp_step", rate, "steps/s")
    print("%-26s %10.2f (process CPU %.2f s over %.2f s of wall time)" % ("mlp_cpu_per_wall", cpu / wall, cpu, wall))
    result("mlp_cpu_per_wall", cpu / wall, "cpu/wall")
    result("mlp_loss_3", loss3, "loss")
    # Peak RSS in a fresh process (this one has run other benchmarks): the interpreter and torch included.
    sys.stdout.flush()
    subprocess.run([sys.executable, os.path.abspath(__file__), "--threads", str(threads), "mlp-rss-child"],
                   check=False)


def print_blas():
    """Which kernels PyTorch's BLAS runs, as bench_core.cpp's `blas:` line: Debian's PyTorch links OpenBLAS,
    whose openblas_get_corename() the library already loaded in this process answers (torch.__config__
    only says BLAS_INFO=generic). Where no OpenBLAS is loaded, the OPENBLAS_CORETYPE value alone."""
    forced = os.environ.get("OPENBLAS_CORETYPE") or "unset"
    with open("/proc/self/maps") as maps:
        libs = sorted({line.split()[-1] for line in maps if "/libopenblas" in line})
    try:
        lib = ctypes.CDLL(libs[0])
        lib.openblas_get_corename.restype = ctypes.c_char_p
        lib.openblas_get_config.restype = ctypes.c_char_p
        print("blas: OpenBLAS's %s kernels (OPENBLAS_CORETYPE=%s; %s)"
              % (lib.openblas_get_corename().decode(), forced, lib.openblas_get_config().decode()))
    except (IndexError, OSError, AttributeError):
        print("blas: not OpenBLAS, or not found in the process (OPENBLAS_CORETYPE=%s)" % forced)


def main():
    parser = argparse.ArgumentParser(description="PyTorch twin of xgrad's bench_core")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: PyTorch's own choice)")
    parser.add_argument("which", nargs="*", help="tiny norm linear mm ew layers mlp mem sweep (default: all but sweep)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    global clock
    threads = torch.get_num_threads()
    clock = time.process_time if threads == 1 else time.perf_counter
    if args.which == ["mlp-rss-child"]:
        mlp_rss_child()
        return
    print("PyTorch %s bench: float32, %d intra-op thread(s), timed by %s"
          % (torch.__version__, threads, "process CPU time" if threads == 1 else "wall time"))
    print_blas()
    result("threads", threads, "count")
    wanted = lambda what: what in args.which if args.which else what != "sweep"  # noqa: E731
    # The inputs of the forward-only rows do not require grad, so no graph is recorded, as in bench_core.cpp.
    if wanted("tiny"):
        bench_tiny_step()
    if wanted("norm"):
        bench_norms()
    if wanted("linear"):
        bench_linear()
    if wanted("mm"):
        bench_matmul()
    if wanted("ew"):
        bench_elementwise_and_reductions()
    if wanted("layers"):
        bench_layers()
    if wanted("mlp"):
        bench_mlp(threads)
    if wanted("mem"):
        bench_memory()
    if wanted("sweep"):
        sweep_norms()


if __name__ == "__main__":
    main()
