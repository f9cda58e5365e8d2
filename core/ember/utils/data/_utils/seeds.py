"""Seeds drawn from ember's generators, so ``ember.manual_seed`` reproduces every shuffle."""
from __future__ import annotations

import ember


def draw_seed(generator=None) -> int:
    """A fresh 63-bit seed from ``generator`` (None: ember's default CPU generator).

    torch draws ``torch.empty((), dtype=torch.int64).random_(generator=g)``; this is the same
    draw on ember's generator, so seeding ember seeds samplers, shuffling pipes and workers.
    """
    return int(ember.empty((), dtype=ember.int64).random_(generator=generator).item())
