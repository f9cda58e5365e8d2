"""CUDA backend benchmarks against torch CUDA on the same GPU, in one run (ratios > 1: ember is
slower). Needs a machine with an NVIDIA GPU, ember[cuda] and a CUDA build of torch:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_cuda.py [--quick]

Cases: an MLP 784-256-256-10 training step (batch 64 and 4096), a 4096x4096 float32 matmul
(TFLOP/s), a 1M-element chain of 5 elementwise ops, fft of 2**20 points (when ember.fft exists),
and the per-op overhead on a tiny tensor (microseconds per op).
"""
from __future__ import annotations

import sys
import argparse
import statistics
import time


def _timed(fn, sync, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _mlp(lib, batch, device):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x = lib.randn(batch, 784, device=device)
    y = lib.randint(0, 10, (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def cases(lib, device):
    n = 4096
    a, b = lib.randn(n, n, device=device), lib.randn(n, n, device=device)
    v = lib.randn(1 << 20, device=device)
    tiny = lib.randn(8, device=device)
    out = {
        "mlp step batch 64": (_mlp(lib, 64, device), None),
        "mlp step batch 4096": (_mlp(lib, 4096, device), None),
        "matmul 4096^2 f32": (lambda: a @ b, 2 * n ** 3),
        "5-op chain 1M": (lambda: ((v * 2 + 1).exp() - v).abs().sqrt(), None),
        "per-op overhead (add, 8 elems)": (lambda: tiny + tiny, None),
    }
    fft = getattr(lib, "fft", None)
    if fft is not None and hasattr(fft, "fft"):
        z = lib.randn(1 << 20, device=device)
        out["fft 2^20"] = (lambda: fft.fft(z), None)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = p.parse_args(argv)
    import ember
    import torch
    if not ember.cuda.is_available():
        raise SystemExit(f"ember's CUDA backend is unavailable: {ember.cuda.unavailable_reason()}")
    if not torch.cuda.is_available():
        raise SystemExit("torch has no CUDA here; the ratios need torch CUDA on the same GPU")
    repeat = 5 if args.quick else 20
    e_cases, t_cases = cases(ember, "cuda"), cases(torch, "cuda")
    print(f"device: {ember.cuda.get_device_name()}  (torch {torch.__version__})")
    print(f"{'case':34} {'ember':>12} {'torch':>12} {'ember/torch':>12}")
    for name, (fn, flops) in e_cases.items():
        if name not in t_cases:
            continue
        per_op = name.startswith("per-op")
        reps = repeat * (100 if per_op else 1)
        te = _timed(fn, ember.cuda.synchronize, reps)
        tt = _timed(t_cases[name][0], torch.cuda.synchronize, reps)
        if flops:
            print(f"{name:34} {flops / te / 1e12:9.1f} TF {flops / tt / 1e12:9.1f} TF "
                  f"{te / tt:12.2f}")
        elif per_op:
            print(f"{name:34} {te * 1e6:9.1f} us {tt * 1e6:9.1f} us {te / tt:12.2f}")
        else:
            print(f"{name:34} {te * 1e3:9.3f} ms {tt * 1e3:9.3f} ms {te / tt:12.2f}")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
