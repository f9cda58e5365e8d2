"""Model, data and schedule shared by the DDP worker (run under ember-run) and the single-process
reference in tests/test_distributed_ddp.py."""
import numpy as np

import ember
import ember.nn as nn

IN, HIDDEN, OUT = 8, 16, 4
BATCH = 6          # per rank and step
STEPS = 20
LR = 0.05
BUCKET_MB = 200 / (1024 * 1024)   # ~200-byte buckets: several buckets for a small model


class Net(nn.Module):
    def __init__(self, unused_parts=False):
        super().__init__()
        self.fc1 = nn.Linear(IN, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, OUT)
        if unused_parts:
            self.extra = nn.Linear(IN, OUT)   # used on rank 0 only (find_unused)
            self.never = nn.Linear(2, 2)      # never used (find_unused, static_graph)

    def forward(self, x, use_extra=False):
        h = ember.tanh(self.fc1(x))
        h = ember.tanh(self.fc2(h))
        y = self.fc3(h)
        if use_extra:
            y = y + self.extra(x)
        return y


def has_unused_parts(variant):
    return variant in ("find_unused", "static", "join_static")


def make_model(seed, device, variant):
    ember.manual_seed(seed)
    return Net(has_unused_parts(variant)).to(device)


def data(world, steps=STEPS):
    rng = np.random.RandomState(1234)
    x = rng.randn(steps, world * BATCH, IN).astype(np.float32)
    y = rng.randn(steps, world * BATCH, OUT).astype(np.float32)
    return x, y


def shard(a, step, rank):
    return a[step, rank * BATCH:(rank + 1) * BATCH]


def steps_for(rank, variant):
    """Uneven inputs for the join variant: rank r has 3*r fewer batches."""
    return STEPS - 3 * rank if variant.startswith("join") else STEPS


def uses_extra(rank, variant):
    return variant == "find_unused" and rank == 0
