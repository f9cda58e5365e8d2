"""What every shuffling DataPipe shares: on/off, a seed for the next iteration, a private
``random.Random`` reseeded at each ``reset()`` (from ember's default generator unless
``set_seed`` gave a seed), and pickling of that generator's state."""
from __future__ import annotations

import random

from .._utils.seeds import draw_seed
from .datapipe import IterDataPipe


class SeededRandomMixin:
    def _init_random(self):
        self._enabled = True
        self._seed = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int):
        self._seed = seed
        return self

    def reset(self) -> None:
        if self._enabled:
            self._rng.seed(draw_seed() if self._seed is None else self._seed)
            self._seed = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_rng"] = self._rng.getstate()
        hook = IterDataPipe.getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        rng = random.Random()
        rng.setstate(state["_rng"])
        self.__dict__.update(state)
        self._rng = rng
