"""Training-step benchmark: ember (cpu, opencl, ...) vs torch (when installed), in one run.

    python bench/bench_train.py [--devices cpu,opencl] [--quick]

Cases (issue #6):
  * MLP 784-256-256-10, batch 64, cross-entropy, SGD(momentum=0.9): ms per step
    (forward, backward, optimizer step; the loss read back with .item() as a logging loop does)
  * small CNN: batch 32, 1×28×28 → conv 1→8 3×3 → relu → maxpool 2 → conv 8→16 3×3 → relu →
    maxpool 2 → linear 400→10, cross-entropy, SGD: ms per step
Ratios are ember / torch (CPU): below 1 means ember is faster.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ember

try:
    import torch
except ImportError:  # torch is optional: the comparison column is left empty
    torch = None


def timeit(fn, *, rounds=5, min_time=0.3):
    """Median seconds per call over ``rounds`` rounds of at least ``min_time`` each."""
    fn()
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-6)
    n = max(1, int(min_time / once))
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 256),
                             lib.nn.ReLU(), lib.nn.Linear(256, 10))


def cnn(lib):
    n = lib.nn
    return n.Sequential(n.Conv2d(1, 8, 3), n.ReLU(), n.MaxPool2d(2), n.Conv2d(8, 16, 3), n.ReLU(),
                        n.MaxPool2d(2), n.Flatten(), n.Linear(16 * 5 * 5, 10))


CASES = {
    "mlp 784-256-256-10 b64": (mlp, (64, 784)),
    "cnn 1x28x28 b32": (cnn, (32, 1, 28, 28)),
}
CASE_NAMES = {"mlp": "mlp 784-256-256-10 b64", "cnn": "cnn 1x28x28 b32"}


def step_fn(lib, model, x, y):
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", default=None,
                        help="comma-separated ember devices (default: cpu and every available "
                             "backend's device 0 that holds data)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    args = parser.parse_args()
    if args.devices:
        devices = [d.strip() for d in args.devices.split(",")]
    else:
        from ember.demo import demo_devices
        devices = demo_devices()[0]
    rounds, min_time = (3, 0.1) if args.quick else (5, 0.3)
    rng = np.random.default_rng(0)
    header = f"{'case':<26}{'device':<12}{'ember ms':>10}{'torch ms':>10}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for case, (build, shape) in CASES.items():
        x_np = rng.standard_normal(shape).astype(np.float32)
        y_np = rng.integers(0, 10, shape[0])
        torch_ms = None
        if torch is not None:
            torch.manual_seed(0)
            tstep = step_fn(torch, build(torch), torch.from_numpy(x_np), torch.from_numpy(y_np))
            torch_ms = 1e3 * timeit(tstep, rounds=rounds, min_time=min_time)
        for device in devices:
            ember.manual_seed(0)
            model = build(ember).to(device)
            estep = step_fn(ember, model, ember.tensor(x_np, device=device),
                            ember.tensor(y_np, device=device))
            ms = 1e3 * timeit(estep, rounds=rounds, min_time=min_time)
            t = f"{torch_ms:10.2f}" if torch_ms is not None else f"{'-':>10}"
            r = f"{ms / torch_ms:8.2f}" if torch_ms is not None else f"{'-':>8}"
            print(f"{case:<26}{device:<12}{ms:10.2f}{t}{r}")


if __name__ == "__main__":
    main()
