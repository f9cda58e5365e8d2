"""Datasets with torch's names: Dataset, IterableDataset, TensorDataset, StackDataset,
ConcatDataset, ChainDataset, Subset, random_split."""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable
from typing import Generic, TypeVar
import numpy as np
import ember
from ..._warn import user_stacklevel

T_co = TypeVar("T_co", covariant=True)

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset",
           "Subset", "TensorDataset", "random_split"]


class Dataset(Generic[T_co]):
    """A map from keys (usually ``0..len-1``) to samples: subclasses define ``__getitem__``
    and, for the default samplers, ``__len__``. ``__getitems__(indices)`` may fetch a whole
    batch at once; the DataLoader uses it when present."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable):
    """A stream of samples: subclasses define ``__iter__``. With DataLoader workers, each
    worker iterates its own copy; use ``get_worker_info()`` in ``__iter__`` to split work."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; all tensors share their first dim.

    With the DataLoader's default collation, a batch is gathered with one ``index_select`` per
    tensor instead of indexing sample by sample and stacking (same result, same autograd).
    """

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        first = tensors[0].size(0)
        for i, t in enumerate(tensors):
            if t.size(0) != first:
                raise AssertionError(f"Size mismatch between tensors: tensor {i} has size(0) = "
                                     f"{t.size(0)}, tensor 0 has {first}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)

    def _fetch_collated(self, indices):
        """default_collate([self[i] for i in indices]), computed batch-wise; NotImplemented
        when a subclass changed how samples are made or an index is out of range (the sample
        path then raises torch's error)."""
        cls = type(self)
        if cls.__getitem__ is not TensorDataset.__getitem__ or hasattr(cls, "__getitems__"):
            return NotImplemented
        if len(indices) == 0:
            return NotImplemented
        n = len(self)
        if min(indices) < 0 or max(indices) >= n:
            return NotImplemented

        index = ember.from_numpy(np.fromiter(indices, dtype=np.int64, count=len(indices)))
        out = []
        for t in self.tensors:
            idx = index if t.device.type == "cpu" else index.to(t.device)
            out.append(t.index_select(0, idx))
        return out


class StackDataset(Dataset):
    """Sample ``i`` is ``tuple(d[i] for d in args)`` or ``{k: d[i] for k, d in kwargs}``."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError(f"Size mismatch between datasets: lengths "
                             f"{[len(d) for d in parts]}")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def _column(self, dataset, indices):
        getitems = getattr(dataset, "__getitems__", None)
        if callable(getitems):
            items = getitems(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected "
                                 f"{len(indices)}, got {len(items)}")
            return items
        return [dataset[i] for i in indices]

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            columns = {k: self._column(d, indices) for k, d in self.datasets.items()}
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        columns = [self._column(d, indices) for d in self.datasets]
        return [tuple(col[j] for col in columns) for j in range(len(indices))]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after another."""

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for e in sequence:
            total += len(e)
            out.append(total)
        return out

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        if dataset_idx >= len(self.datasets):
            raise IndexError(f"index {idx} is out of range for ConcatDataset of length "
                             f"{len(self)}")
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """The samples of several IterableDatasets one after another, streamed."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(f"ChainDataset only supports IterableDataset, got "
                                     f"{type(d).__name__}")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError(f"ChainDataset only supports IterableDataset, got "
                                     f"{type(d).__name__}")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing "
                "Subset and overriding __getitem__, you must also override __getitems__ to "
                "ensure DataLoader works correctly with your custom logic. A simple "
                "implementation:\n\ndef __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def _fetch_collated(self, indices):
        if type(self).__getitems__ is not Subset.__getitems__:
            return NotImplemented
        inner = getattr(self.dataset, "_fetch_collated", None)
        if inner is None:
            return NotImplemented
        n = len(self.indices)
        if any(not -n <= i < n for i in indices):
            return NotImplemented
        return inner([int(self.indices[i]) for i in indices])

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping ``Subset``s of the given lengths (or fractions
    summing to 1), permuted with ``ember.randperm(generator=generator)``."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(n * frac))
        remainder = n - sum(sizes)
        for i in range(remainder):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                              f"dataset.", stacklevel=user_stacklevel())
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths does not equal the length of the input dataset! "
                         f"(lengths {list(lengths)} sum to {sum(lengths)}, dataset has {n})")
    indices = ember.randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
