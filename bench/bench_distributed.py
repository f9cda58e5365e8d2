"""Distributed benchmark (issue #18), 2 ranks on this machine, ratios taken in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_distributed.py [--quick]

The script starts itself under the launcher (`python -m ember.distributed.run -n 2`); rank 0
prints the tables.

1. all_reduce of float32 tensors, 1 MB ... 256 MB: bus bandwidth of ember's
   ``dist.all_reduce`` (non-blocking MPI request polled against the timeout, CPU tensors used in
   place) and of raw mpi4py ``Comm.Allreduce`` on numpy buffers of the same size, interleaved.
   Bus bandwidth = bytes * 2(n-1)/n / time (NCCL-tests' definition).
2. One training step (forward, backward, SGD) of a ~10M-parameter MLP, batch 32 per rank:
   DDP with the all-reduce overlapping backward (default buckets), DDP's gradients all-reduced
   only after backward (``no_sync`` + one flat all-reduce), and the same step in one process
   without any communication (rank 1 idles meanwhile).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def median_time(fn, reps, comm=None):
    """Median seconds per call; with ``comm``, ranks line up before each timed call."""
    times = []
    fn()
    for _ in range(reps):
        if comm is not None:
            comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def mean_time(fn, comm, budget=0.2, most=200):
    """Mean seconds per call over back-to-back calls (about ``budget`` seconds, at most
    ``most`` calls) after one barrier: collectives synchronize the ranks themselves."""
    fn()
    comm.Barrier()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-6)
    from mpi4py import MPI
    reps = comm.allreduce(max(2, min(most, int(budget / once))), op=MPI.MIN)  # same on all
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def bench_allreduce(sizes_mb, quick):
    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist
    comm = MPI.COMM_WORLD.Dup()
    n = comm.Get_size()
    rows = []
    for mb in sizes_mb:
        count = mb * 2 ** 20 // 4
        t = ember.ones(count)
        arr = np.ones(count, np.float32)
        ember_t, raw_t = [], []
        for _ in range(3 if quick else 7):   # interleaved: both see the same machine load
            ember_t.append(mean_time(lambda: dist.all_reduce(t), comm))
            raw_t.append(mean_time(lambda: comm.Allreduce(MPI.IN_PLACE, arr), comm))
        te, tr = min(ember_t), min(raw_t)
        bus = mb * 2 ** 20 * 2 * (n - 1) / n
        rows.append((mb, te * 1e3, bus / te / 1e9, tr * 1e3, bus / tr / 1e9, tr / te))
    comm.Free()
    return rows


def bench_ddp(quick):
    import ember
    import ember.distributed as dist
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel as DDP

    def model():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                             nn.Linear(2048, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 512))
    x = ember.randn(32, 1024)
    y = ember.randn(32, 512)
    reps = 5 if quick else 15
    rank = dist.get_rank()

    def stepper(net, backward):
        opt = ember.optim.SGD(net.parameters(), lr=1e-4)

        def step():
            opt.zero_grad()
            backward(F.mse_loss(net(x), y))
            opt.step()
        return step

    # one process, no communication (the other rank waits in a barrier)
    single = model()
    nparams = sum(p.numel() for p in single.parameters())
    t_single = None
    if rank == 0:
        t_single = median_time(stepper(single, lambda loss: loss.backward()), reps)
    dist.barrier()

    ddp = DDP(model())
    t_overlap = median_time(stepper(ddp, lambda loss: loss.backward()), reps)

    flat_model = DDP(model())
    params = list(flat_model.parameters())

    def backward_then_allreduce(loss):
        from ember.ops.shape import cat
        with flat_model.no_sync():
            loss.backward()
        with ember.no_grad():
            flat = cat([p.grad.reshape(-1) for p in params])
            flat.div_(dist.get_world_size())
            dist.all_reduce(flat)
            start = 0
            for p in params:
                k = p.numel()
                p.grad.copy_(flat[start:start + k].view(tuple(p.shape)))
                start += k
    t_after = median_time(stepper(flat_model, backward_then_allreduce), reps)
    grads = ember.ones(nparams)
    t_comm = median_time(lambda: dist.all_reduce(grads), reps)
    return nparams, t_single, t_overlap, t_after, t_comm, len(ddp.reducer.buckets)


def worker(quick):
    from datetime import timedelta

    import ember.distributed as dist
    dist.init_process_group("mpi", timeout=timedelta(minutes=5))
    rank = dist.get_rank()
    sizes = [1, 4, 16, 64, 256] if not quick else [1, 16, 64]
    rows = bench_allreduce(sizes, quick)
    ddp = bench_ddp(quick)
    if rank == 0:
        print(f"all_reduce float32, {dist.get_world_size()} ranks, one host (bus bandwidth "
              f"GB/s; ratio = ember / raw mpi4py)")
        print(f"{'size':>8} {'ember ms':>10} {'ember GB/s':>11} {'mpi4py ms':>10} "
              f"{'mpi4py GB/s':>12} {'ratio':>6}")
        for mb, te, be, tr, br, ratio in rows:
            print(f"{mb:>6}MB {te:>10.2f} {be:>11.2f} {tr:>10.2f} {br:>12.2f} {ratio:>6.2f}")
        nparams, t_single, t_overlap, t_after, t_comm, nb = ddp
        print(f"\nDDP step, MLP with {nparams / 1e6:.1f}M parameters, batch 32 per rank, "
              f"{nb} buckets (25 MB cap)")
        print(f"  one process, no communication   {t_single * 1e3:8.1f} ms")
        print(f"  DDP, all-reduce overlapping bwd {t_overlap * 1e3:8.1f} ms  "
              f"({t_overlap / t_single:.2f}x one process)")
        print(f"  DDP, all-reduce after backward  {t_after * 1e3:8.1f} ms  "
              f"({t_after / t_single:.2f}x one process)")
        print(f"  overlap / after-backward        {t_overlap / t_after:8.2f}")
        print(f"  all_reduce of all gradients     {t_comm * 1e3:8.1f} ms "
              f"({nparams * 4 / 2 ** 20:.0f} MB)")
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.quick)
        return
    cmd = [sys.executable, "-m", "ember.distributed.run", "-n", "2", os.path.abspath(__file__),
           "--worker"] + (["--quick"] if args.quick else [])
    sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
