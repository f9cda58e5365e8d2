"""What the binding layer (``ember/_api/binding.py``) costs a successful call (issue #30).

    python bench/bench_binding.py             # wall clock, interleaved rounds, min of each
    python bench/bench_binding.py --callgrind # instruction counts under valgrind (repeatable)

Each case calls one public function or Tensor method N times through its wrapper and N times
through the function it wraps (``__wrapped__``), and reports both per call and the difference.
With ``--callgrind`` the script re-runs itself under ``valgrind --tool=callgrind`` and brackets
each loop with callgrind's client requests (a tiny C helper compiled with the system's ``cc``),
so the counts exclude ``import ember``.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

N = 1000
STEPS = 20
TRAIN = "MLP training step"


def cases():
    import ember
    import ember.nn.functional as F
    x, y = ember.ones(4, 4), ember.ones(4, 4)
    return [
        ("ember.sum(x)", ember.sum, (x,), {}),
        ("x.sum()", ember.Tensor.sum, (x,), {}),
        ("ember.mean(x, dim=0)", ember.mean, (x,), {"dim": 0}),
        ("ember.add(x, y)", ember.add, (x, y), {}),
        ("x.add(y)", ember.Tensor.add, (x, y), {}),
        ("F.relu(x)", F.relu, (x,), {}),
        ("x.reshape(16)", ember.Tensor.reshape, (x, 16), {}),
        ("x.size(0)", ember.Tensor.size, (x, 0), {}),
    ]


def _loop(fn, args, kwargs, n):
    for _ in range(n):
        fn(*args, **kwargs)


def training_step():
    """One step of a small MLP (forward, cross-entropy, backward, SGD): the public calls a
    model makes, each through the binding layer when it is installed."""
    import ember
    import ember.nn as nn
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    x, y = ember.randn(16, 32), ember.randint(0, 10, (16,))

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def wall_clock(rounds=7):
    print(f"{'call':<24}{'wrapped us':>12}{'direct us':>12}{'overhead ns':>13}")
    # the training step first: uninstalling the layer is for the rest of this process
    from ember._api import binding
    wrapped_step = training_step()
    times = {"w": float("inf"), "d": float("inf")}
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(STEPS):
            wrapped_step()
        times["w"] = min(times["w"], (time.perf_counter() - t0) / STEPS)
    for label, wrapped, args, kwargs in cases():
        direct = wrapped.__wrapped__
        best = {"w": float("inf"), "d": float("inf")}
        for _ in range(rounds):
            for key, fn in (("w", wrapped), ("d", direct)):
                t0 = time.perf_counter()
                _loop(fn, args, kwargs, N)
                best[key] = min(best[key], (time.perf_counter() - t0) / N)
        print(f"{label:<24}{best['w'] * 1e6:>12.2f}{best['d'] * 1e6:>12.2f}"
              f"{(best['w'] - best['d']) * 1e9:>13.0f}")
    binding.uninstall()
    direct_step = training_step()
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(STEPS):
            direct_step()
        times["d"] = min(times["d"], (time.perf_counter() - t0) / STEPS)
    print(f"{TRAIN:<24}{times['w'] * 1e6:>12.1f}{times['d'] * 1e6:>12.1f}"
          f"{(times['w'] - times['d']) * 1e9:>13.0f}")


_HELPER = r"""
#include <valgrind/callgrind.h>
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


def _helper(tmp):
    src, lib = os.path.join(tmp, "cg.c"), os.path.join(tmp, "libcg.so")
    with open(src, "w") as f:
        f.write(_HELPER)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", lib, src], check=True)
    return lib


def under_callgrind(lib):
    cg = ctypes.CDLL(lib)
    for label, wrapped, args, kwargs in cases():
        for rep in range(2):
            for kind, fn in (("direct", wrapped.__wrapped__), ("wrapped", wrapped)):
                _loop(fn, args, kwargs, 10)  # warm caches (resolution, signatures)
                cg.cg_zero()
                _loop(fn, args, kwargs, N)
                cg.cg_dump(f"{kind}|{label}|{rep}".encode())
    from ember._api import binding
    for kind in ("wrapped", "direct"):
        if kind == "direct":
            binding.uninstall()
        step = training_step()
        for _ in range(3):
            step()
        cg.cg_zero()
        for _ in range(STEPS):
            step()
        cg.cg_dump(f"{kind}|{TRAIN}|0".encode())


def callgrind():
    with tempfile.TemporaryDirectory() as tmp:
        lib = _helper(tmp)
        out = os.path.join(tmp, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, __file__, "--inside", lib], check=True, env=env,
                       stderr=subprocess.DEVNULL)
        counts = {}
        for path in glob.glob(out + "*"):
            text = open(path).read()
            trigger = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
            total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if trigger and total:
                kind, label, _ = trigger.group(1).split("|")
                per = int(total.group(1)) / (STEPS if label == TRAIN else N)
                counts[f"{kind}|{label}"] = min(per, counts.get(f"{kind}|{label}", per))
    print(f"{'call':<24}{'wrapped Ir':>12}{'direct Ir':>12}{'overhead Ir':>13}{'%':>7}")
    for label in [c[0] for c in cases()] + [TRAIN]:
        w, d = counts.get(f"wrapped|{label}"), counts.get(f"direct|{label}")
        if w is None or d is None:
            print(f"{label:<24}  (no count)")
            continue
        print(f"{label:<24}{w:>12.0f}{d:>12.0f}{w - d:>13.0f}{100 * (w - d) / d:>6.1f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--inside", metavar="LIB", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        under_callgrind(args.inside)
    elif args.callgrind:
        callgrind()
    else:
        wall_clock()


if __name__ == "__main__":
    main()
