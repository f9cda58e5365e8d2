"""The PyTorch 2.2 tutorial "Dynamic Parallelism in TorchScript" on ember: an ensemble of
bidirectional LSTMs, run serially, then with ``ember.jit.fork``/``wait``, and profiled.

The model code below is the tutorial's, with ``import ember as torch``: ``torch.jit.script``
is accepted (ember runs the code eagerly), ``torch.jit.Future[torch.Tensor]`` annotates the
futures, and forked tasks run on the inter-op thread pool. numpy releases the GIL inside its
kernels, so the two directions of a model, and the models of the ensemble, overlap on a
multi-core machine. The profile of the forked run is written to ``parallel.json`` (open it in
chrome://tracing or https://ui.perfetto.dev): each forked task is on its own thread row.

Run: ``python examples/lstm_ensemble.py [--T 50 --B 50 --C 1024] [--models 4] [--repeat 3]
[--out parallel.json]``. The script makes ``2 * repeat + 3`` passes over the ensemble (two to
warm up and compare the versions, ``repeat`` timed passes of each, one profiled). At the
tutorial's size (C=1024: 4 models x 2 directions x 50 steps of a 1024-wide LSTM) a pass took
20-27 s on a shared 2-core machine, so the default run takes 3-4 minutes; a progress line per
pass shows where it is (a bar in a terminal). ``--C 256`` is a quick look (about a second per
pass).
"""
from __future__ import annotations

import argparse
import time
from typing import List

import ember as torch
from ember.utils.progress import Progress

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


def best_time(fn, repeat, task=None, name=""):
    times = []
    for _ in range(repeat):
        s = time.perf_counter()
        fn()
        times.append(time.perf_counter() - s)
        if task is not None:
            task.advance(note=f"{name} {times[-1]:.1f} s")
    return min(times)


def main(argv=None):
    global T, B, C
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--T", type=int, default=T, help="sequence length")
    parser.add_argument("--B", type=int, default=B, help="batch size")
    parser.add_argument("--C", type=int, default=C, help="input and hidden size of each LSTM")
    parser.add_argument("--models", type=int, default=4, help="models in the ensemble")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes of each version")
    parser.add_argument("--out", default="parallel.json", help="chrome trace of the forked run")
    args = parser.parse_args(argv)
    T, B, C = args.T, args.B, args.C

    torch.manual_seed(0)
    ens = torch.jit.script(LSTMEnsemble(n_models=args.models))
    with Progress("lstm_ensemble") as progress:
        task = progress.task("passes", total=2 * args.repeat + 3)
        x = torch.rand(T, B, C)
        forked_out = ens(x)           # warm up the allocator and check both versions agree
        task.advance(note="warm-up (forked)")
        serial_out = _serial(ens, x)
        task.advance(note="warm-up (serial)")
        diff = float((forked_out - serial_out).abs().max())
        assert diff < 1e-4, f"forked and serial results differ by {diff}"

        x = torch.rand(T, B, C)
        serial = best_time(lambda: _serial(ens, x), args.repeat, task, "serial")
        forked = best_time(lambda: ens(x), args.repeat, task, "forked")
        with torch.autograd.profiler.profile() as prof:
            ens(x)
        task.advance(note="profiled")
    print(f"T={T} B={B} C={C}, {args.models} models, "
          f"{torch.get_num_interop_threads()} inter-op threads")
    print(f"Inference took (serial): {serial:.3f} s")
    print(f"Inference took (forked): {forked:.3f} s  -> speedup {serial / forked:.2f}x")
    prof.export_chrome_trace(args.out)
    threads = {e.thread for e in prof.function_events}
    print(f"profile of the forked run written to {args.out} ({len(threads)} threads)")
    return serial, forked


if __name__ == "__main__":
    main()
