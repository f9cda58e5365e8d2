"""Count what one training step dispatches: ops (every ``Op`` call, at any level), backend
kernel calls, and, on OpenCL, kernel launches and host<->device transfers.

    python bench/op_count.py [--device cpu|opencl] [--case cnn|mlp|resnet18]

The counters wrap the dispatcher and pyopencl for the duration of one step (after two warm-up
steps), so they cost nothing when this script is not running.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import sys
from pathlib import Path

import numpy as np

import ember
from ember.dispatch import dispatcher

sys.path.insert(0, str(Path(__file__).parent))
import bench_train  # noqa: E402


@contextlib.contextmanager
def counting():
    """Yields a Counter: 'op:<name>' per Op call, 'kernel:<name>' per backend kernel call,
    'cl:launch' / 'cl:transfer' per OpenCL enqueue."""
    counts = collections.Counter()
    op_call = dispatcher.Op.__call__
    make_backend = dispatcher._backend_handler

    def counted_call(self, *args, **kwargs):
        counts["op:" + self.name] += 1
        return op_call(self, *args, **kwargs)

    def counted_backend(op, dev):
        h = make_backend(op, dev)
        if h is op.composite:
            return h

        def kernel(*args, **kwargs):
            counts["kernel:" + op.name] += 1
            return h(*args, **kwargs)
        return kernel

    patches = [(dispatcher.Op, "__call__", counted_call),
               (dispatcher, "_backend_handler", counted_backend)]
    try:
        import pyopencl as cl
    except ImportError:
        cl = None
    if cl is not None:
        kcall = cl.Kernel.__call__
        copy = cl.enqueue_copy

        def counted_kernel(self, *args, **kwargs):
            counts["cl:launch"] += 1
            return kcall(self, *args, **kwargs)

        def counted_copy(*args, **kwargs):
            counts["cl:transfer"] += 1
            return copy(*args, **kwargs)
        patches += [(cl.Kernel, "__call__", counted_kernel), (cl, "enqueue_copy", counted_copy)]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    for obj, name, new in patches:
        setattr(obj, name, new)
    dispatcher.invalidate()
    try:
        yield counts
    finally:
        for obj, name, old in saved:
            setattr(obj, name, old)
        dispatcher.invalidate()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--case", default="cnn", choices=sorted(bench_train.CASE_NAMES))
    parser.add_argument("--top", type=int, default=25, help="most frequent entries to list")
    args = parser.parse_args(argv)
    build, shape = bench_train.CASES[bench_train.CASE_NAMES[args.case]]
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal(shape).astype(np.float32), device=args.device)
    y = ember.tensor(rng.integers(0, 10, shape[0]), device=args.device)
    ember.manual_seed(0)
    step = bench_train.step_fn(ember, build(ember).to(args.device), x, y)
    step()
    step()
    with counting() as counts:
        step()
    ops = sum(v for k, v in counts.items() if k.startswith("op:"))
    kernels = sum(v for k, v in counts.items() if k.startswith("kernel:"))
    print(f"{args.case} step on {args.device}: {ops} op calls, {kernels} kernel calls"
          + (f", {counts['cl:launch']} OpenCL launches, {counts['cl:transfer']} transfers"
             if args.device.startswith("opencl") else ""))
    for k, v in counts.most_common(args.top):
        print(f"  {v:5d}  {k}")
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
