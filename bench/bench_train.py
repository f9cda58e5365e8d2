"""Training-step benchmark: ember (cpu, opencl, ...) vs torch (when installed), in one run.

    python bench/bench_train.py [--devices cpu,opencl] [--cases mlp,cnn,resnet18]
                                [--quick]

Cases (issues #6, #20):
  * MLP 784-256-256-10, batch 64, cross-entropy, SGD(momentum=0.9): ms per step
    (forward, backward, optimizer step; the loss read back with .item() as a logging loop does)
  * small CNN: batch 32, 1×28×28 → conv 1→8 3×3 → relu → maxpool 2 → conv 8→16 3×3 → relu →
    maxpool 2 → linear 400→10, cross-entropy, SGD: ms per step
  * ResNet-18-shaped network (BasicBlocks 2-2-2-2, batch norm, 64-512 channels), batch 8,
    3×64×64, forward + backward + SGD step: ms per step
Times are the minimum over interleaved rounds (``_timing.py``; the median is shown too).
Ratios are ember / torch (CPU): below 1 means ember is faster.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import ember

sys.path.insert(0, str(Path(__file__).parent))
from _timing import interleaved  # noqa: E402

try:
    import torch
except ImportError:  # torch is optional: the comparison column is left empty
    torch = None


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 256),
                             lib.nn.ReLU(), lib.nn.Linear(256, 10))


def cnn(lib):
    n = lib.nn
    return n.Sequential(n.Conv2d(1, 8, 3), n.ReLU(), n.MaxPool2d(2), n.Conv2d(8, 16, 3), n.ReLU(),
                        n.MaxPool2d(2), n.Flatten(), n.Linear(16 * 5 * 5, 10))


def resnet18(lib):
    """ResNet-18's layout (BasicBlocks 2-2-2-2 of 64-512 channels, batch norm, a 7x7 stride-2
    stem and max pool, global average pool) for 64x64 inputs and 10 classes."""
    n = lib.nn

    class Block(n.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = n.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = n.BatchNorm2d(cout)
            self.conv2 = n.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = n.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = n.Sequential(n.Conv2d(cin, cout, 1, stride, bias=False),
                                         n.BatchNorm2d(cout))

        def forward(self, x):
            out = self.bn1(self.conv1(x)).relu()
            out = self.bn2(self.conv2(out))
            return (out + (x if self.down is None else self.down(x))).relu()

    layers = [n.Conv2d(3, 64, 7, 2, 3, bias=False), n.BatchNorm2d(64), n.ReLU(),
              n.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [n.AdaptiveAvgPool2d(1), n.Flatten(), n.Linear(512, 10)]
    return n.Sequential(*layers)


CASES = {
    "mlp 784-256-256-10 b64": (mlp, (64, 784)),
    "cnn 1x28x28 b32": (cnn, (32, 1, 28, 28)),
    "resnet18 3x64x64 b8": (resnet18, (8, 3, 64, 64)),
}
CASE_NAMES = {"mlp": "mlp 784-256-256-10 b64", "cnn": "cnn 1x28x28 b32",
              "resnet18": "resnet18 3x64x64 b8"}


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
    parser.add_argument("--cases", default="mlp,cnn,resnet18",
                        help=f"comma-separated cases among {', '.join(CASE_NAMES)}")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time (default) or the process's CPU time (on a loaded "
                             "machine: time descheduled does not count)")
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads for both ember and torch (default: each "
                             "library's own default)")
    args = parser.parse_args()
    if args.threads:
        if hasattr(ember, "set_num_threads"):
            ember.set_num_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)
    if args.devices:
        devices = [d.strip() for d in args.devices.split(",")]
    else:
        from ember.demo import demo_devices
        devices = demo_devices()[0]
    rounds, round_time = (5, 0.05) if args.quick else (15, 0.1)
    rng = np.random.default_rng(0)
    header = (f"{'case':<24}{'device':<10}{'ember ms':>10}{'(median)':>10}{'torch ms':>10}"
              f"{'(median)':>10}{'ratio':>8}")
    print(header)
    print("-" * len(header))
    for key in args.cases.split(","):
        case = CASE_NAMES[key.strip()]
        build, shape = CASES[case]
        x_np = rng.standard_normal(shape).astype(np.float32)
        y_np = rng.integers(0, 10, shape[0])
        fns = {}
        if torch is not None:
            torch.manual_seed(0)
            fns["torch"] = step_fn(torch, build(torch), torch.from_numpy(x_np),
                                   torch.from_numpy(y_np))
        for device in devices:
            ember.manual_seed(0)
            model = build(ember).to(device)
            fns[device] = step_fn(ember, model, ember.tensor(x_np, device=device),
                                  ember.tensor(y_np, device=device))
        times = interleaved(fns, rounds=rounds, round_time=round_time,
                            clock=time.process_time if args.clock == "cpu" else time.perf_counter)
        t = times.get("torch")
        for device in devices:
            e = times[device]
            tt = f"{t[0] * 1e3:10.2f}{t[1] * 1e3:10.2f}" if t else f"{'-':>10}{'-':>10}"
            r = f"{e[0] / t[0]:8.2f}" if t else f"{'-':>8}"
            print(f"{case:<24}{device:<10}{e[0] * 1e3:10.2f}{e[1] * 1e3:10.2f}{tt}{r}")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
