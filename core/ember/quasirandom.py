"""``ember.quasirandom.SobolEngine``: torch's Sobol' low-discrepancy sequence engine.

The points come from ``scipy.stats.qmc.Sobol``, which uses the same Joe-Kuo direction numbers
(21201 dimensions) and 30 bits as torch, so unscrambled sequences equal torch's bit for bit.
Scrambling is scipy's linear matrix scramble with a digital shift, the construction torch uses,
seeded by ``seed`` or, without one, by ember's default generator (so ``ember.manual_seed``
makes it reproducible); its values differ from torch's, whose random bits come from torch's
generator.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import qmc

from . import _dtype
from .ops.factories import from_numpy
from .ops.random import randint

__all__ = ["SobolEngine"]


def _scipy_sobol(dimension, scramble, seed):
    try:  # scipy >= 1.15 names the seed `rng`
        return qmc.Sobol(dimension, scramble=scramble, bits=SobolEngine.MAXBIT, rng=seed)
    except TypeError:
        return qmc.Sobol(dimension, scramble=scramble, bits=SobolEngine.MAXBIT, seed=seed)


class SobolEngine:
    """``SobolEngine(dimension, scramble=False, seed=None)``: draws points of the Sobol'
    sequence in ``[0, 1)^dimension``; each draw continues where the last one stopped."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        scramble_seed = None
        if scramble:
            scramble_seed = seed if seed is not None else int(randint(0, 2 ** 62, ()).item())
        self._engine = _scipy_sobol(dimension, bool(scramble), scramble_seed)
        self.num_generated = 0

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points, a ``(n, dimension)`` CPU tensor of ``dtype`` (the default
        dtype), written into ``out`` when given."""
        dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
        with warnings.catch_warnings():  # scipy warns when n breaks the balance; torch does not
            warnings.simplefilter("ignore", UserWarning)
            points = self._engine.random(n)
        self.num_generated += n
        result = from_numpy(np.ascontiguousarray(points.astype(dt.np)))
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        """The next ``2**m`` points; the total drawn must stay a power of 2 (the balance of
        Sobol' points)."""
        n = 2 ** m
        total_n = self.num_generated + n
        if total_n & (total_n - 1) != 0:
            raise ValueError(f"The balance properties of Sobol' points require n to be a power "
                             f"of 2. {self.num_generated} points have been previously "
                             f"generated, then: n={self.num_generated}+2**{m}={total_n}. If you "
                             f"still want to do this, please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        """Back to the first point."""
        self._engine.reset()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skip ``n`` points, as drawing them would."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
