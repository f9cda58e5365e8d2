"""Data-loading benchmark: ember.utils.data vs torch.utils.data / torchdata, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_data.py [--quick]

Cases (issue #17):
  * DataLoader over TensorDataset(60000 x 784 float32, 60000 int64 labels), batch 64,
    shuffle=True, num_workers 0 and 2: batches/s over whole epochs, ember vs torch.
    Also a map-style Dataset indexed sample by sample (no batched fast path), same sizes.
  * DataPipe chain over 100,000 CSV lines: open -> readlines -> parse -> map -> shuffle ->
    batch(64): rows/s, ember vs torchdata's DataPipes (when ``torchdata.datapipes`` imports)
    and vs a plain Python generator doing the same work.
Ratios are ember / reference: above 1 means ember is faster. Each figure is the best of
``--rounds`` runs (other processes share this machine).
"""
from __future__ import annotations

import sys
import argparse
import os
import random
import tempfile
import time
import warnings

import numpy as np

import ember
import ember.utils.data as edata
from ember.data.datapipes import iter as epipes

try:
    import torch
    import torch.utils.data as tdata
except ImportError:  # the comparison column stays empty
    torch = tdata = None
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchdata.datapipes import iter as tdpipes
except Exception:  # noqa: BLE001 - torchdata >= 0.9 has no DataPipes; any import failure skips
    tdpipes = None

N, D, BATCH = 60000, 784, 64
LINES = 100_000


def best_rate(run, rounds):
    """Best items/s over ``rounds`` calls of ``run()``, which returns the item count."""
    best = 0.0
    for _ in range(rounds):
        t0 = time.perf_counter()
        n = run()
        best = max(best, n / (time.perf_counter() - t0))
    return best


def epoch(loader, limit=None):
    def run():
        count = 0
        for _ in loader:
            count += 1
            if limit is not None and count >= limit:
                break
        return count
    return run


class Samples:
    """A map-style dataset indexed one sample at a time (works for both libraries)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.y)


def bench_loader(rounds, quick):
    x = np.random.default_rng(0).random((N, D), dtype=np.float32)
    y = np.random.default_rng(1).integers(0, 10, N)
    limit = 300 if quick else None
    rows = []
    for label, make in (("TensorDataset", "tensor"), ("Dataset.__getitem__", "samples")):
        for workers in (0, 2):
            def loader(lib, data):
                base = (lib.TensorDataset(*data) if make == "tensor"
                        else type("S", (Samples, lib.Dataset), {})(*data))
                kw = dict(batch_size=BATCH, shuffle=True, num_workers=workers)
                if workers:
                    kw["persistent_workers"] = True
                return lib.DataLoader(base, **kw)
            ember_loader = loader(edata, (ember.from_numpy(x), ember.from_numpy(y)))
            mine = best_rate(epoch(ember_loader, limit), rounds)
            ref = None
            if tdata is not None:
                torch_loader = loader(tdata, (torch.from_numpy(x), torch.from_numpy(y)))
                ref = best_rate(epoch(torch_loader, limit), rounds)
                del torch_loader
            del ember_loader
            rows.append((f"DataLoader {label}, batch {BATCH}, workers {workers}",
                         "batches/s", mine, ref, "torch"))
    return rows


def write_lines(path):
    rng = random.Random(0)
    with open(path, "w") as f:
        for i in range(LINES):
            f.write(f"{rng.randint(0, 9)},{rng.random():.6f},{rng.random():.6f},"
                    f"{rng.random():.6f}\n")


def parse(line):
    label, *values = line.split(",")
    return int(label), [float(v) for v in values]


def scale(row):
    label, values = row
    return label, [2.0 * v - 1.0 for v in values]


def chain(lib, path):
    dp = lib.FileOpener([path], mode="r").readlines(return_path=False)
    return dp.map(parse).map(scale).shuffle(buffer_size=10000).batch(BATCH)


def plain_generator(path):
    """The same work without DataPipes: read, parse, map, buffer-shuffle, batch."""
    rng = random.Random(0)
    buffer, batch = [], []
    with open(path) as f:
        for line in f:
            item = scale(parse(line.rstrip("\r\n")))
            if len(buffer) == 10000:
                idx = rng.randrange(10000)
                item, buffer[idx] = buffer[idx], item
                batch.append(item)
            else:
                buffer.append(item)
                continue
            if len(batch) == BATCH:
                yield batch
                batch = []
    rng.shuffle(buffer)
    for item in buffer:
        batch.append(item)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def rows_of(make):
    def run():
        return sum(len(b) for b in make())
    return run


def bench_pipes(rounds, path):
    mine = best_rate(rows_of(lambda: chain(epipes, path)), rounds)
    rows = []
    if tdpipes is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = best_rate(rows_of(lambda: chain(tdpipes, path)), rounds)
        rows.append(("DataPipe chain, 100k lines", "rows/s", mine, ref, "torchdata"))
    gen = best_rate(rows_of(lambda: plain_generator(path)), rounds)
    rows.append(("DataPipe chain, 100k lines", "rows/s", mine, gen, "plain generator"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="300 batches per loader round")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = bench_loader(args.rounds, args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lines.csv")
        write_lines(path)
        rows += bench_pipes(args.rounds, path)
    print(f"{'case':58} {'unit':>9} {'ember':>10} {'reference':>10} {'ratio':>6}  vs")
    for name, unit, mine, ref, against in rows:
        ref_s = f"{ref:10.0f}" if ref is not None else f"{'-':>10}"
        ratio = f"{mine / ref:6.2f}" if ref else f"{'-':>6}"
        print(f"{name:58} {unit:>9} {mine:10.0f} {ref_s} {ratio}  {against if ref else ''}")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
