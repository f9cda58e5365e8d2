"""Randomness: shuffle, in_batch_shuffle, random_split, and the Sampler pipe.

Every random pipe has ``set_seed``/``set_shuffle`` and draws a fresh seed from ember's default
generator when an iteration starts without one, so ``ember.manual_seed`` (or the DataLoader's
``generator``, which seeds every random pipe of the graph) makes the order reproducible.
"""
from __future__ import annotations

import random
from collections.abc import Sized

from ...sampler import SequentialSampler
from .._decorator import functional_datapipe
from .._seeded import SeededRandomMixin
from ..datapipe import DataChunk, IterDataPipe
from ..utils.common import source_length

__all__ = ["InBatchShufflerIterDataPipe", "RandomSplitterIterDataPipe", "SamplerIterDataPipe",
           "ShufflerIterDataPipe"]


class SamplerIterDataPipe(IterDataPipe):
    """Yield what ``sampler(data_source=datapipe, ...)`` yields (indices by default)."""

    def __init__(self, datapipe, sampler=SequentialSampler, sampler_args=None,
                 sampler_kwargs=None) -> None:
        if not isinstance(datapipe, Sized):
            raise AssertionError("Sampler class requires input datapipe implemented `__len__`")
        super().__init__()
        self.datapipe = datapipe
        self.sampler_args = () if sampler_args is None else sampler_args
        self.sampler_kwargs = {} if sampler_kwargs is None else sampler_kwargs
        self.sampler_kwargs["data_source"] = self.datapipe
        self.sampler = sampler(*self.sampler_args, **self.sampler_kwargs)

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self):
        return source_length(self, self.sampler)


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(SeededRandomMixin, IterDataPipe):
    """Shuffle with a buffer of ``buffer_size`` items (functional name: ``shuffle``).

    The buffer fills first; then each incoming item replaces a random buffered one, which is
    yielded. ``buffer_size`` >= the number of items gives a full shuffle. ``unbatch_level``
    unbatches the source first.
    """

    def __init__(self, datapipe, *, buffer_size: int = 10000, unbatch_level: int = 0) -> None:
        super().__init__()
        if buffer_size <= 0:
            raise AssertionError(f"buffer_size should be larger than 0, got {buffer_size}")
        self.datapipe = datapipe if unbatch_level == 0 else \
            datapipe.unbatch(unbatch_level=unbatch_level)
        self.buffer_size = buffer_size
        self._buffer = []
        self._init_random()

    def reset(self) -> None:
        self._buffer = []
        super().reset()

    def __iter__(self):
        if not self._enabled:
            yield from self.datapipe
            return
        buffer = self._buffer
        size = self.buffer_size
        randbelow = self._rng._randbelow  # randint(0, n-1) without its argument checks
        for x in self.datapipe:
            if len(buffer) == size:
                idx = randbelow(size)
                val, buffer[idx] = buffer[idx], x
                yield val
            else:
                buffer.append(x)
        while buffer:
            idx = randbelow(len(buffer))
            # swap-with-last then pop: O(1), and the same uniform choice as pop(idx)
            buffer[idx], buffer[-1] = buffer[-1], buffer[idx]
            yield buffer.pop()

    def __len__(self):
        return source_length(self, self.datapipe)


@functional_datapipe("in_batch_shuffle")
class InBatchShufflerIterDataPipe(SeededRandomMixin, IterDataPipe):
    """Shuffle the items inside each batch (functional name: ``in_batch_shuffle``)."""

    def __init__(self, datapipe) -> None:
        super().__init__()
        self.datapipe = datapipe
        self._init_random()

    def __iter__(self):
        if not self._enabled:
            yield from self.datapipe
            return
        for batch in self.datapipe:
            yield DataChunk(self._rng.sample(batch, len(batch)))

    def __len__(self):
        return len(self.datapipe)


class _RandomSplitter(IterDataPipe):
    """Assigns each source item to a split; splits draw the same sequence from the same seed."""

    def __init__(self, source_datapipe, total_length, weights, seed):
        self.source_datapipe = source_datapipe
        self.total_length = total_length
        self._seed = seed
        self.keys = list(weights)
        self.key_to_index = {k: i for i, k in enumerate(self.keys)}
        self.norm_weights = self._normalize([weights[k] for k in self.keys], total_length)
        self.weights = list(self.norm_weights)
        self.remaining_length = total_length
        self._rng = random.Random(seed)
        self._lengths = []

    @staticmethod
    def _normalize(weights, total_length):
        total = sum(weights)
        if total <= 0:
            raise ValueError(f"random_split: weights must sum to a positive value, got {weights}")
        return [float(w) * total_length / total for w in weights]

    def draw(self):
        key = self._rng.choices(self.keys, self.weights)[0]
        index = self.key_to_index[key]
        self.weights[index] -= 1
        self.remaining_length -= 1
        if self.weights[index] < 0:
            self.weights[index] = 0
            if self.remaining_length > 0:
                self.weights = self._normalize(self.weights, self.remaining_length)
        return key

    def reset(self) -> None:
        self._rng = random.Random(self._seed)
        self.weights = list(self.norm_weights)
        self.remaining_length = self.total_length

    def override_seed(self, seed):
        self._seed = seed
        return self

    def get_length(self, target) -> int:
        if not self._lengths:
            if all(w.is_integer() for w in self.norm_weights) and \
                    sum(self.norm_weights) == self.total_length:
                self._lengths = [int(w) for w in self.norm_weights]
            else:
                raise TypeError("Lengths of the split cannot be known in advance. Please supply "
                                "integer `weights` that sum up to `total_length`.\nAlternatively, "
                                "use `datapipe.set_length(LENGTH)` to manually set the desired "
                                "length.")
        return self._lengths[self.key_to_index[target]]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_rng"] = self._rng.getstate()
        return state

    def __setstate__(self, state):
        rng = random.Random()
        rng.setstate(state["_rng"])
        self.__dict__.update(state)
        self._rng = rng


class _SplitterIterator(IterDataPipe):
    def __init__(self, main_datapipe, target):
        self.main_datapipe = main_datapipe
        self.target = target

    def __iter__(self):
        main = self.main_datapipe
        main.reset()
        for sample in main.source_datapipe:
            if main.draw() == self.target:
                yield sample

    def override_seed(self, seed):
        self.main_datapipe.override_seed(seed)
        return self

    def __len__(self):
        return self.main_datapipe.get_length(self.target)


@functional_datapipe("random_split")
class RandomSplitterIterDataPipe(IterDataPipe):
    """Split the source at random into one pipe per key of ``weights`` (reproducible by
    ``seed``); with ``target``, return only that split."""

    def __new__(cls, source_datapipe, weights, seed, total_length=None, target=None):
        if total_length is None:
            try:
                total_length = len(source_datapipe)
            except TypeError:
                raise TypeError("RandomSplitter needs `total_length`, but it is unable to infer "
                                f"it from the `source_datapipe`: {source_datapipe}.") from None
        container = _RandomSplitter(source_datapipe, total_length, weights, seed)
        if target is None:
            return [_SplitterIterator(container, k) for k in list(weights)]
        if target not in weights:
            raise KeyError(f"`target={target}` does not match any key in `weights`.")
        return _SplitterIterator(container, target)
