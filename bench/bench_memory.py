"""Peak memory of one training step, ember beside torch (issue #31).

    python bench/bench_memory.py [--cases mlp,cnn,nanogpt] [--devices cpu,opencl]

Cases: bench_train.py's MLP (784-256-256-10, batch 64) and CNN (batch 32, 1x28x28) steps, and
the small GPT step of the real-program benchmark (karpathy/nanoGPT, 4 layers of width 128,
block 64, batch 8). Each step runs a few times first (optimizer state and caches exist), then
once more measured; the figure is the peak, during that step, of what it allocated beyond what
was live before it:

* ember on the CPU: tracemalloc's peak — numpy registers its array data with tracemalloc, so
  this is tensor data, kernel temporaries and the Python objects (tensors, graph nodes) alike;
* ember on OpenCL: the device allocator's peak (``max_memory_allocated``, rounded block sizes)
  plus tracemalloc's peak of the host objects;
* torch: the peak of its CPU allocator's allocation and free events (the profiler's
  ``profile_memory``: tensor data and temporaries) plus tracemalloc's peak of its Python
  objects (measured in a second run of the step) — a slight overestimate, as the two peaks
  need not coincide.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import bench_train  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def _train_case(name):
    build, shape = bench_train.CASES[bench_train.CASE_NAMES[name]]

    def make(lib, device):
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.integers(0, 10, shape[0])
        model = build(lib)
        if lib is ember:
            model = model.to(device)
            return bench_train.step_fn(lib, model, ember.tensor(x, device=device),
                                       ember.tensor(y, device=device))
        return bench_train.step_fn(lib, model, lib.from_numpy(x), lib.from_numpy(y))
    return make


def _program_case(name):
    def make(lib, device):
        import bench_programs
        return bench_programs.contender(bench_programs.PROGRAMS[name], lib, device)
    return make


CASES = {"mlp": _train_case("mlp"), "cnn": _train_case("cnn"),
         "nanogpt": _program_case("nanogpt")}


def _tracemalloc_peak(step):
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def ember_peak(step, device):
    if device == "cpu":
        return _tracemalloc_peak(step), None
    mod = getattr(ember, device.split(":")[0])
    mod.synchronize()
    base = mod.memory_allocated()
    mod.reset_peak_memory_stats()
    host = _tracemalloc_peak(lambda: (step(), mod.synchronize()))
    return host + mod.max_memory_allocated() - base, mod.max_memory_allocated() - base


def torch_peak(step):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    data = max(itertools.accumulate(n for _, n in events), default=0)
    return max(data, 0) + _tracemalloc_peak(step), data


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="mlp,cnn,nanogpt")
    parser.add_argument("--devices", default="cpu")
    args = parser.parse_args(argv)
    ember.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(f"{'case':<10}{'device':<9}{'ember MB':>10}{'(data)':>9}{'torch MB':>10}{'(data)':>9}"
          f"{'ratio':>8}")
    for name in args.cases.split(","):
        make = CASES[name]
        t = td = None
        quiet = contextlib.redirect_stdout(io.StringIO())
        if torch is not None:
            with quiet:
                step = make(torch, "cpu")
                for _ in range(3):
                    step()
                t, td = torch_peak(step)
        for device in args.devices.split(","):
            with contextlib.redirect_stdout(io.StringIO()):
                step = make(ember, device)
                for _ in range(3):
                    step()
                e, ed = ember_peak(step, device)
            mb = 1 / 2 ** 20
            print(f"{name:<10}{device:<9}{e * mb:10.2f}"
                  f"{'' if ed is None else f'{ed * mb:.2f}':>9}"
                  f"{'-' if t is None else f'{t * mb:.2f}':>10}"
                  f"{'' if td is None else f'{td * mb:.2f}':>9}"
                  f"{'-' if t is None else f'{e / t:.2f}':>8}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
