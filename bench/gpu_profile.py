"""Where ember's CUDA time goes, on a GPU: the host profile of a small op, a large op and the
tiny-GPT training step, and the calls at which the host waits for the GPU.

    python bench/gpu_profile.py [--top 25] [--gpt-batch 16]

* **host profile**: cProfile over repeated calls, sorted by own time (where Python spends it);
* **GPU time**: ``cupyx.profiler.benchmark`` per call (is the kernel itself slow, or the host?);
* **launch queue**: how many kernels queue behind a busy GPU before a launch blocks;
* **waits**: the GPU is kept busy for one second by a spinning kernel, then the code runs once
  under cProfile: a call that took most of that second is where the host waited for the GPU (a
  synchronization the step should not have), printed with the chain of its heaviest callers.

Made for ``bench/gpu_check.sh``'s machine; it needs a GPU (exit 3 without one).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_gpt  # noqa: E402

SPIN = r"""
extern "C" __global__ void ember_spin(unsigned long long ns) {
    unsigned long long start; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    unsigned long long now = start;
    while (now - start < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}
"""


def spin(ember, ms):
    """Keep the current stream busy for ``ms`` milliseconds."""
    import cupy
    kernel = cupy.RawKernel(SPIN, "ember_spin")
    with ember.cuda.current_stream()._stream:
        kernel((1,), (1,), (np.uint64(int(ms * 1e6)),))


def _label(key):
    file, line, name = key
    return f"{Path(file).name}:{line}({name})" if line else name


def host_profile(ember, fn, calls, top):
    fn()
    ember.cuda.synchronize()
    pr = cProfile.Profile()
    t = time.perf_counter()
    pr.enable()
    for _ in range(calls):
        fn()
    issued = time.perf_counter() - t
    ember.cuda.synchronize()
    pr.disable()
    total = time.perf_counter() - t
    print(f"  {calls} calls: {issued / calls * 1e6:.1f} us/call issued, "
          f"{total / calls * 1e6:.1f} us/call with the final synchronize (profiled)")
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(top)
    print("\n".join(out.getvalue().splitlines()[4:]))


def gpu_time(ember, fn, label):
    from cupyx.profiler import benchmark
    r = benchmark(fn, n_repeat=50, n_warmup=5)
    print(f"  {label}: cpu {np.mean(r.cpu_times) * 1e6:.1f} us, "
          f"gpu {np.mean(r.gpu_times) * 1e6:.1f} us per call (cupyx.profiler.benchmark)")


def waits(ember, fn, busy_ms=1000, chains=4):
    fn()
    ember.cuda.synchronize()
    spin(ember, busy_ms)
    pr = cProfile.Profile()
    t = time.perf_counter()
    pr.enable()
    fn()
    pr.disable()
    host = time.perf_counter() - t
    ember.cuda.synchronize()
    print(f"  with the GPU busy for {busy_ms} ms, the call took {host * 1e3:.0f} ms on the host"
          + ("" if host * 1e3 > busy_ms / 2 else ": it did not wait"))
    if host * 1e3 <= busy_ms / 2:
        return
    stats = pstats.Stats(pr).stats    # key -> (cc, nc, tottime, cumtime, callers)
    heavy = sorted(stats, key=lambda k: stats[k][2], reverse=True)[:chains]
    for key in heavy:
        if stats[key][2] < 0.05:
            break
        print(f"  waited {stats[key][2] * 1e3:.0f} ms in {_label(key)}; called from:")
        seen, k = {key}, key
        for _ in range(14):
            callers = stats[k][4]
            if not callers:
                break
            k = max(callers, key=lambda c: callers[c][3])
            if k in seen:
                break
            seen.add(k)
            print(f"      {_label(k)}")


def queue_depth(ember, limit=6000):
    """How many small kernels the host can queue behind a busy GPU before a launch blocks (the
    driver's launch queue): a step issuing more than this waits although it never syncs."""
    small = ember.randn(8, device="cuda")
    y = small + small
    ember.cuda.synchronize()
    spin(ember, 1500)
    for n in range(limit):
        t = time.perf_counter()
        y = small + small
        if time.perf_counter() - t > 0.2:
            print(f"  launch {n + 1} behind a busy GPU blocked the host: the queue holds about "
                  f"{n} of ember's adds")
            break
    else:
        print(f"  {limit} adds queued behind a busy GPU without blocking")
    ember.cuda.synchronize()
    del y


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--gpt-batch", type=int, default=16)
    args = ap.parse_args(argv)
    import ember
    reason = ember.cuda.unavailable_reason()
    if reason is not None:
        print(f"no GPU: {reason}")
        return 3
    small = ember.randn(8, device="cuda")
    big = ember.randn(1 << 20, device="cuda")
    cases = [("add of 8 elements", lambda: small + small, 2000),
             ("add of 1M elements", lambda: big + big, 200)]
    step, _ = tiny_gpt.training_step(ember, "cuda", batch=args.gpt_batch, vocab=8192, ctx=256,
                                     dim=512, heads=8, layers=4)
    for label, fn, calls in cases:
        print(f"== {label}")
        gpu_time(ember, fn, label)
        waits(ember, fn)
        host_profile(ember, fn, calls, args.top // 2)
    print("== tiny-GPT training step (bench_cuda's shape)")
    step()
    waits(ember, step)
    host_profile(ember, step, 3, args.top)
    print(f"  host syncs counted by ember in those steps: {ember.cuda.host_sync_count()}")
    print("== launch queue")
    queue_depth(ember)
    return 0


if __name__ == "__main__":
    sys.exit(main())
