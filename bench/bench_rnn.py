"""Recurrent layers, fork/wait and the profiler: ember vs torch (when installed), in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_rnn.py [--quick]
        [--ensemble-C 256] [--skip-ensemble] [--skip-opencl]

Cases (issue #16):
  * nn.LSTM 256 -> 256, seq 50, batch 16, float32 on the CPU: forward (no_grad) and
    forward + backward, ember / torch, with each library's intra-op threads at --threads
    (torch.set_num_threads and a threadpoolctl BLAS limit; default: 1 and the machine's count);
  * the same LSTM on OpenCL: ember-OpenCL / ember-CPU;
  * dispatched ops per time step, the fused step ops against their composites (counted with
    the profiler);
  * the tutorial's LSTM ensemble (4 bidirectional LSTMs, T=50, B=50, C given by
    --ensemble-C; the tutorial uses 1024): serial vs ember.jit.fork, and the speedup;
  * the profiler's per-op cost: µs per dispatched op with the profiler off (the key in no key
    set), on, and on with shapes + stacks.
Times are the median of timed rounds (the machine is shared: rounds are interleaved between
the compared sides so both see the same load). Ratios below 1 mean ember is faster.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import ember

try:
    import torch
except ImportError:  # torch is optional: the comparison column is left empty
    torch = None


def interleaved(fns, *, rounds=7, min_time=0.2):
    """Median seconds per call of each function, timed in alternating blocks of at least
    ``min_time``. A short pause before each block lets the other library's spinning worker
    threads (OpenBLAS, OpenMP) park, so neither side pays for the other's."""
    calls = []
    for fn in fns:
        fn()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        calls.append(max(1, int(min_time / max(dt, 1e-9))))
    per = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            time.sleep(0.05)
            t0 = time.perf_counter()
            for _ in range(calls[k]):
                fn()
            per[k].append((time.perf_counter() - t0) / calls[k])
    return [statistics.median(p) for p in per]


# -- the LSTM ------------------------------------------------------------------------------------
T, B, I, H = 50, 16, 256, 256


def lstm_cases(rounds, device_cases, threads):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((T, B, I)).astype(np.float32)
    em = ember.nn.LSTM(I, H)
    ex = ember.tensor(x_np)
    rows = []
    fns_fwd, fns_fb = [], []

    def e_fwd():
        with ember.no_grad():
            em(ex)

    def e_fb():
        em.zero_grad()
        out, _ = em(ex)
        out.sum().backward()

    fns_fwd.append(e_fwd)
    fns_fb.append(e_fb)
    if torch is not None:
        tm = torch.nn.LSTM(I, H)
        em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                            tm.state_dict().items()})
        tx = torch.tensor(x_np)

        def t_fwd():
            with torch.no_grad():
                tm(tx)

        def t_fb():
            tm.zero_grad()
            out, _ = tm(tx)
            out.sum().backward()
        with torch.no_grad():   # same numbers, or the timing means nothing
            np.testing.assert_allclose(em(ex)[0].detach().numpy(), tm(tx)[0].numpy(),
                                       rtol=1e-4, atol=1e-5)
        fns_fwd.append(t_fwd)
        fns_fb.append(t_fb)
    from threadpoolctl import threadpool_limits
    w_ih = rng.standard_normal((4 * H, I)).astype(np.float32)
    w_hh = rng.standard_normal((4 * H, H)).astype(np.float32)
    h = rng.standard_normal((B, H)).astype(np.float32)
    flat = x_np.reshape(T * B, I)

    def gemms_only():
        """The LSTM's matrix products alone in numpy: what any array-module kernel pays."""
        np.matmul(flat, w_ih.T)
        for _ in range(T):
            np.matmul(w_hh, h.T)
    for n in threads:
        if torch is not None:
            torch.set_num_threads(n)
        with threadpool_limits(limits=n, user_api="blas"):
            for name, fns in (("forward (no_grad)", fns_fwd), ("forward+backward", fns_fb)):
                times = interleaved(fns, rounds=rounds)
                rows.append((f"LSTM 256->256 T=50 B=16 {name}, {n} thread(s) [vs torch]", "ms",
                             times[0] * 1e3, times[1] * 1e3 if torch else None))
                if name.startswith("forward ("):
                    floor, ref = interleaved([gemms_only, fns[-1]], rounds=rounds)
                    rows.append((f"  its GEMMs alone in numpy, {n} thread(s) [vs torch forward]",
                                 "ms", floor * 1e3, ref * 1e3 if torch else None))
    if device_cases and ember.opencl.is_available():
        dm = ember.nn.LSTM(I, H)
        dm.load_state_dict(em.state_dict())
        dm.to("opencl")
        dx = ex.to("opencl")

        def d_fwd():
            with ember.no_grad():
                dm(dx)[0].sum().item()

        def d_fb():
            dm.zero_grad()
            out, _ = dm(dx)
            out.sum().backward()
            dm.weight_hh_l0.grad.sum().item()

        for name, d_fn, c_fn in (("forward (no_grad)", d_fwd, e_fwd),
                                 ("forward+backward", d_fb, e_fb)):
            td, tc = interleaved([d_fn, c_fn], rounds=max(3, rounds // 2))
            rows.append((f"LSTM on OpenCL {name} [vs ember-CPU, {os.cpu_count()} BLAS threads]",
                         "ms", td * 1e3, tc * 1e3))
    return rows


def dispatch_counts():
    """Dispatched ops per time step (forward without grad; forward+backward) with the fused
    step ops, and with their composites (the CPU kernels taken out)."""
    from ember.profiler import profile
    from ember.runtime.registry import registry

    def per_step(run):
        counts = []
        for t in (4, 12):
            with profile() as prof:
                run(t)
            counts.append(sum(1 for e in prof.events() if e.kind == "op"))
        return (counts[1] - counts[0]) / 8

    out = {}
    for cls in ("LSTM", "GRU", "RNN"):
        m = getattr(ember.nn, cls)(8, 8)
        xs = {t: ember.randn(t, 2, 8) for t in (4, 12)}

        def fwd(t):
            with ember.no_grad():
                m(xs[t])

        def train(t):
            out_, _ = m(xs[t])
            out_.sum().backward()
        fused = (per_step(fwd), per_step(train))
        cpu = registry.get("cpu")
        taken = {n: cpu.kernels._kernels.pop(n) for n in list(cpu.kernels._kernels)
                 if n.endswith("_step") or n.endswith("_step_backward")}
        ember.dispatch.dispatcher.invalidate()
        try:
            composite = (per_step(fwd), per_step(train))
        finally:
            for n, k in taken.items():
                cpu.kernels.register(n, k)
        out[cls] = (fused, composite)
    return out


# -- the ensemble ----------------------------------------------------------------------------------
def ensemble_case(C, rounds):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    import lstm_ensemble as ex
    ex.T, ex.B, ex.C = 50, 50, C
    ember.manual_seed(0)
    ens = ex.LSTMEnsemble(n_models=4)
    x = ember.rand(50, 50, C)
    serial, forked = interleaved([lambda: ex._serial(ens, x), lambda: ens(x)], rounds=rounds,
                                 min_time=0.0)
    return serial, forked


# -- profiler overhead -------------------------------------------------------------------------------
def profiler_overhead(rounds):
    from ember.profiler import profile
    a = ember.ones(16)
    b = ember.ones(16)
    n = 2000

    def ops():
        x = a
        for _ in range(n):
            x = x + b
        return x

    def run_with(**kw):
        def f():
            with profile(**kw):
                ops()
        return f
    off, on, full = interleaved([ops, run_with(), run_with(record_shapes=True, with_stack=True)],
                                rounds=rounds, min_time=0.0)
    return off / n * 1e6, on / n * 1e6, full / n * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--ensemble-C", type=int, default=256,
                        help="the ensemble's channels (the tutorial's is 1024)")
    parser.add_argument("--skip-ensemble", action="store_true")
    parser.add_argument("--skip-opencl", action="store_true")
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}",
                        help="intra-op thread counts for the LSTM comparison")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 7
    from rich.console import Console
    from rich.table import Table
    console = Console()
    env = (f"torch {torch.__version__ if torch else '—'}, {os.cpu_count()} cpus, load "
           f"{os.getloadavg()[0]:.1f}")
    threads = [int(n) for n in args.threads.split(",")]
    rows = lstm_cases(rounds, not args.skip_opencl, threads)
    table = Table(title=f"ember recurrent layers ({env})")
    for col in ("case", "unit", "ember", "reference", "ratio"):
        table.add_column(col, justify="right" if col not in ("case", "unit") else "left")
    for case, unit, e, t in rows:
        table.add_row(case, unit, f"{e:.2f}", "—" if t is None else f"{t:.2f}",
                      "—" if not t else f"{e / t:.2f}")
    console.print(table)

    counts = dispatch_counts()
    table = Table(title="dispatched ops per time step (profiler counts; fused step op vs its "
                        "composite)")
    for col in ("layer", "forward fused", "forward composite", "fwd+bwd fused",
                "fwd+bwd composite"):
        table.add_column(col, justify="right" if col != "layer" else "left")
    for cls, (fused, comp) in counts.items():
        table.add_row(cls, f"{fused[0]:g}", f"{comp[0]:g}", f"{fused[1]:g}", f"{comp[1]:g}")
    console.print(table)

    if not args.skip_ensemble:
        serial, forked = ensemble_case(args.ensemble_C, max(2, rounds // 2))
        console.print(f"LSTM ensemble (4 bidirectional LSTMs, T=50 B=50 C={args.ensemble_C}, "
                      f"{ember.get_num_interop_threads()} inter-op threads): serial "
                      f"{serial:.3f} s, forked {forked:.3f} s, speedup {serial / forked:.2f}x")

    off, on, full = profiler_overhead(rounds)
    console.print(f"profiler per-op cost (add of 16 floats): off {off:.2f} us/op, on "
                  f"{on:.2f} us/op (+{on - off:.2f}), on with shapes+stack {full:.2f} us/op "
                  f"(+{full - off:.2f})")
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
