"""The PyTorch 2.2 tutorial "Dynamic Parallelism in TorchScript" on ember: an ensemble of
bidirectional LSTMs, run serially, then with ``ember.jit.fork``/``wait``, and profiled.

The model code below is the tutorial's, with ``import ember as torch``: ``torch.jit.script``
is accepted (ember runs the code eagerly), ``torch.jit.Future[torch.Tensor]`` annotates the
futures, and forked tasks run on the inter-op thread pool. numpy releases the GIL inside its
kernels, so the two directions of a model, and the models of the ensemble, overlap on a
multi-core machine. The profile of the forked run is written to ``parallel.json`` (open it in
chrome://tracing or https://ui.perfetto.dev): each forked task is on its own thread row.

Run: ``python examples/lstm_ensemble.py [--T 50 --B 50 --C 1024] [--models 4] [--out
parallel.json]``. The tutorial's size (C=1024) takes a few seconds per pass on 2 cores; pass
``--C 256`` for a quick look.
"""
from __future__ import annotations

import argparse
import time
from typing import List

import ember as torch

T, B, C = 50, 50, 1024


class BidirectionalRecurrentLSTM(torch.nn.Module):
    """Two LSTMs over the same sequence, one reversed in time; the forward one is forked."""

    def __init__(self):
        super().__init__()
        self.cell_f = torch.nn.LSTM(input_size=C, hidden_size=C)
        self.cell_b = torch.nn.LSTM(input_size=C, hidden_size=C)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Forward layer - fork() so this can run in parallel to the backward layer
        future_f = torch.jit.fork(self.cell_f, x)

        # Backward layer. Flip input in the time dimension (dim 0), apply the layer, then flip
        # the outputs in the time dimension
        x_rev = torch.flip(x, dims=[0])
        output_b, _ = self.cell_b(x_rev)
        output_b_rev = torch.flip(output_b, dims=[0])

        # Retrieve the output from the forward layer. Note this needs to happen *after* the
        # stuff we want to parallelize with
        output_f, _ = torch.jit.wait(future_f)

        return torch.cat((output_f, output_b_rev), dim=2)


class LSTMEnsemble(torch.nn.Module):
    """Runs every model on the same input (forked) and sums their stacked results."""

    def __init__(self, n_models):
        super().__init__()
        self.n_models = n_models
        self.models = torch.nn.ModuleList([BidirectionalRecurrentLSTM()
                                           for _ in range(self.n_models)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Launch tasks for each model
        futures: List[torch.jit.Future[torch.Tensor]] = []
        for model in self.models:
            futures.append(torch.jit.fork(model, x))

        # Collect the results from the launched tasks
        results = []
        for future in futures:
            results.append(torch.jit.wait(future))

        return torch.stack(results).sum(dim=0)


def _serial(ens, x):
    """The tutorial's first version: the same models, one after the other."""
    results = []
    for model in ens.models:
        output_f, _ = model.cell_f(x)
        output_b, _ = model.cell_b(torch.flip(x, dims=[0]))
        results.append(torch.cat((output_f, torch.flip(output_b, dims=[0])), dim=2))
    return torch.stack(results).sum(dim=0)


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        s = time.perf_counter()
        fn()
        times.append(time.perf_counter() - s)
    return min(times)


def main(argv=None):
    global T, B, C
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=T)
    parser.add_argument("--B", type=int, default=B)
    parser.add_argument("--C", type=int, default=C)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="parallel.json")
    args = parser.parse_args(argv)
    T, B, C = args.T, args.B, args.C

    torch.manual_seed(0)
    ens = torch.jit.script(LSTMEnsemble(n_models=args.models))
    x = torch.rand(T, B, C)
    forked_out = ens(x)           # warm up the allocator and check both versions agree
    serial_out = _serial(ens, x)
    diff = float((forked_out - serial_out).abs().max())
    assert diff < 1e-4, f"forked and serial results differ by {diff}"

    x = torch.rand(T, B, C)
    serial = best_time(lambda: _serial(ens, x), args.repeat)
    forked = best_time(lambda: ens(x), args.repeat)
    print(f"T={T} B={B} C={C}, {args.models} models, "
          f"{torch.get_num_interop_threads()} inter-op threads")
    print(f"Inference took (serial): {serial:.3f} s")
    print(f"Inference took (forked): {forked:.3f} s  -> speedup {serial / forked:.2f}x")

    with torch.autograd.profiler.profile() as prof:
        ens(x)
    prof.export_chrome_trace(args.out)
    threads = {e.thread for e in prof.function_events}
    print(f"profile of the forked run written to {args.out} ({len(threads)} threads)")
    return serial, forked


if __name__ == "__main__":
    main()
