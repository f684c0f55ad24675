# The PyTorch twin of bench_cuda.cpp: the same GPU workloads, sizes, values, accounting and output
# format (RESULT lines), timed the same way (wall time around batches closed by a synchronisation).
# PyTorch runs eagerly with its defaults (TF32 off for matmuls, as xgrad; Adam's default foreach
# implementation); RMSNorm is F.rms_norm (PyTorch 2.4 and later).
#
# Usage: python3 bench_cuda.py   (the interpreter that has a CUDA build of torch)
#        python3 bench_cuda.py norm mlp   (some groups: norm linear mlp tiny, as bench_cuda)
import argparse
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("bench_cuda.py: torch is not importable with %s; no PyTorch figures" % sys.executable)
    sys.exit(0)

import bench_core  # beside this file: the CPU twin's pattern and output protocol
from bench_core import report_rate, result, stats_of


def measure(fn, warmup, min_reps, min_seconds, batch):
    """Seconds per call of fn, as measure() in bench_cuda.cpp."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    per_call = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - t0) / batch)
        if len(per_call) >= min_reps and (time.perf_counter() - start >= min_seconds or len(per_call) >= 10000):
            return per_call


def pattern_tensor(shape, salt, scale):
    """bench_core.cpp's deterministic values, made on the CPU and copied to the GPU."""
    return bench_core.pattern_tensor(shape, salt, scale).cuda()


FB = bench_core.FB
LN_EPS, RMS_EPS = 1e-5, 1e-6


def bench_norms():
    for rows, cols in ((16384, 768), (4096, 4096), (1024, 1500)):
        size = "%dx%d" % (rows, cols)
        n, c = float(rows * cols), float(cols)
        x = pattern_tensor((rows, cols), 10, 1.0)
        w = pattern_tensor((cols,), 11, 0.5).add(1.0)
        b = pattern_tensor((cols,), 12, 0.1)
        dy = pattern_tensor((rows, cols), 13, 1.0)
        for rms in (False, True):
            kind = "rmsnorm" if rms else "layernorm"

            def norm(x, w, b):
                return F.rms_norm(x, (cols,), w, RMS_EPS) if rms else F.layer_norm(x, (cols,), w, b, LN_EPS)

            with torch.no_grad():
                report_rate(kind + "_fwd_" + size, measure(lambda: norm(x, w, b), 5, 20, 0.5, 20),
                            (2 * n + (1 if rms else 2) * c) * FB, 1e9, "GB/s")
            xg, wg, bg = (t.detach().requires_grad_() for t in (x, w, b))

            def fwd_bwd():
                y = norm(xg, wg, bg)
                y.backward(dy)
                xg.grad = wg.grad = bg.grad = None

            report_rate(kind + "_fwdbwd_" + size, measure(fwd_bwd, 5, 20, 0.5, 10),
                        (5 * n + (3 if rms else 5) * c) * FB, 1e9, "GB/s")


def bench_linear():
    n = k = m = 4096
    torch.manual_seed(0)
    fc = torch.nn.Linear(k, m).cuda()
    x = pattern_tensor((n, k), 14, 1.0).requires_grad_()
    dy = pattern_tensor((n, m), 15, 0.01)

    def fwd_bwd():
        y = fc(x)
        y.backward(dy)
        x.grad = fc.weight.grad = fc.bias.grad = None

    report_rate("linear_fwdbwd_4096", measure(fwd_bwd, 3, 10, 1.0, 5), 3 * 2.0 * n * k * m, 1e9, "GFLOP/s")


def bench_mlp():
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.LayerNorm(512), nn.ReLU(), nn.Linear(512, 512),
                          nn.LayerNorm(512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = pattern_tensor((256, 784), 17, 1.0)
    labels = ((torch.arange(256, dtype=torch.int64) * 7 + 3) % 10).cuda()
    box = [None]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        box[0] = loss

    for _ in range(3):
        step()
    loss3 = box[0].item()
    t = stats_of(measure(step, 5, 20, 2.0, 10))
    print("%-26s %10.2f steps/s (median %.4f ms)" % ("mlp_step_gpu", 1 / t[0], t[0] * 1e3))
    result("mlp_step_gpu", (1 / t[0], 1 / t[2], 1 / t[1]), "steps/s")
    result("mlp_loss_3_gpu", loss3, "loss")


def bench_tiny():
    x = pattern_tensor((2, 5), 1, 1.0)
    y = torch.tensor([[0.5], [-0.25]]).cuda()
    w1 = pattern_tensor((6, 5), 2, 0.4).requires_grad_()
    b1 = pattern_tensor((6,), 3, 0.1).requires_grad_()
    w2 = pattern_tensor((1, 6), 4, 0.4).requires_grad_()
    b2 = pattern_tensor((1,), 5, 0.1).requires_grad_()
    params = [w1, b1, w2, b2]

    def step():
        h = torch.matmul(x, w1.t()).add(b1).relu()
        pred = torch.matmul(h, w2.t()).add(b2)
        loss = (pred - y).pow(2).mean()
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-0.01)
                p.grad = None

    s = stats_of([v * 1e6 for v in measure(step, 200, 20, 2.0, 100)])
    print("%-26s %10.2f us/step (p10 %.2f, p90 %.2f)" % ("tiny_step_gpu", s[0], s[1], s[2]))
    result("tiny_step_gpu", s, "us")


def main():
    parser = argparse.ArgumentParser(description="PyTorch twin of xgrad's bench_cuda")
    parser.add_argument("which", nargs="*", help="norm linear mlp tiny (default: all)")
    only = parser.parse_args().which
    if not torch.cuda.is_available():
        print("bench_cuda.py: torch sees no CUDA GPU; no PyTorch figures")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    print("PyTorch %s GPU bench on %s: float32, timed by wall time around synchronised batches"
          % (torch.__version__, torch.cuda.get_device_name()))
    for name, bench in (("norm", bench_norms), ("linear", bench_linear), ("mlp", bench_mlp), ("tiny", bench_tiny)):
        if not only or name in only:
            bench()


if __name__ == "__main__":
    main()
