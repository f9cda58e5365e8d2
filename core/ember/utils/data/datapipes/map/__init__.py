"""Map-style DataPipes: SequenceWrapper, map, batch, shuffle, concat, zip, unzip,
in_memory_cache, and the iter-to-map converter (``to_map_datapipe``)."""
from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence

from .._decorator import functional_datapipe
from .._seeded import SeededRandomMixin
from ..datapipe import DataChunk, IterDataPipe, MapDataPipe
from ..utils.common import _check_unpickable_fn, unzip_columns
from ....._warn import user_stacklevel

__all__ = ["Batcher", "Concater", "InMemoryCacheHolder", "IterToMapConverter", "MapDataPipe",
           "Mapper", "SequenceWrapper", "Shuffler", "UnZipper", "Zipper"]


def _identity(x):
    return x


class SequenceWrapperMapDataPipe(MapDataPipe):
    """Wrap a sequence (or mapping) as a MapDataPipe; ``deepcopy`` protects the original."""

    def __init__(self, sequence, deepcopy: bool = True) -> None:
        if deepcopy:
            try:
                self.sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn("The input sequence can not be deepcopied, please be aware of "
                              "in-place modification would affect source data",
                              stacklevel=user_stacklevel())
                self.sequence = sequence
        else:
            self.sequence = sequence

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """``fn(datapipe[index])`` (functional name: ``map``)."""

    def __init__(self, datapipe, fn=_identity) -> None:
        super().__init__()
        self.datapipe = datapipe
        _check_unpickable_fn(fn)
        self.fn = fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    """Item ``i`` is the ``DataChunk`` of source items ``i*batch_size ...``."""

    def __init__(self, datapipe, batch_size: int, drop_last: bool = False,
                 wrapper_class=DataChunk) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise AssertionError(f"Batch size is required to be larger than 0! (batch got "
                                 f"{batch_size!r})")
        super().__init__()
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"Index {index} is out of bound.")
        start = index * self.batch_size
        stop = min(start + self.batch_size, len(self.datapipe))
        return self.wrapper_class([self.datapipe[i] for i in range(start, stop)])

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class ShufflerIterDataPipe(SeededRandomMixin, IterDataPipe):
    """A MapDataPipe's items in a shuffled order of ``indices`` (functional name ``shuffle``
    on map pipes). It is iterable-style, as in torch: a shuffled view has no stable keys."""

    def __init__(self, datapipe, *, indices=None) -> None:
        super().__init__()
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._init_random()
        self._shuffled_indices = self.indices

    def reset(self) -> None:
        super().reset()
        self._shuffled_indices = self._rng.sample(self.indices, len(self.indices)) \
            if self._enabled else self.indices

    def __iter__(self):
        for idx in self._shuffled_indices:
            yield self.datapipe[idx]

    def __len__(self):
        return len(self.datapipe)


MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)


def _map_inputs(datapipes):
    if len(datapipes) == 0:
        raise ValueError("Expected at least one DataPipe, but got nothing")
    if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
        raise TypeError("Expected all inputs to be `MapDataPipe`")
    return datapipes


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """Indices run through the first pipe, then the next, ..."""

    def __init__(self, *datapipes) -> None:
        self.datapipes = _map_inputs(datapipes)

    def __getitem__(self, index):
        offset = index
        for dp in self.datapipes:
            if offset < len(dp):
                return dp[offset]
            offset -= len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """Item ``i`` is the tuple of item ``i`` of every pipe; length of the shortest."""

    def __init__(self, *datapipes) -> None:
        self.datapipes = _map_inputs(datapipes)

    def __getitem__(self, index):
        res = []
        for dp in self.datapipes:
            try:
                res.append(dp[index])
            except IndexError as e:
                raise IndexError(f"Index {index} is out of range for one of the input "
                                 f"MapDataPipes {dp}.") from e
        return tuple(res)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


@functional_datapipe("in_memory_cache")
class InMemoryCacheHolderMapDataPipe(MapDataPipe):
    """Remember each item the first time it is read."""

    def __init__(self, source_dp) -> None:
        self.source_dp = source_dp
        self.cache = {}

    def __getitem__(self, index):
        if index not in self.cache:
            self.cache[index] = self.source_dp[index]
        return self.cache[index]

    def __len__(self):
        return len(self.source_dp)


class _ColumnMapDataPipe(MapDataPipe):
    def __init__(self, source_datapipe, column):
        self.source_datapipe = source_datapipe
        self.column = column

    def __getitem__(self, index):
        return self.source_datapipe[index][self.column]

    def __len__(self):
        return len(self.source_datapipe)


@functional_datapipe("unzip")
class UnZipperMapDataPipe(MapDataPipe):
    """One MapDataPipe per position of the source's sequences (minus ``columns_to_skip``)."""

    def __new__(cls, source_datapipe, sequence_length: int, columns_to_skip=None):
        columns = unzip_columns(sequence_length, columns_to_skip, "UnZipperMapDataPipe")
        return [_ColumnMapDataPipe(source_datapipe, c) for c in columns]


class IterToMapConverterMapDataPipe(MapDataPipe):
    """A MapDataPipe over an IterDataPipe of ``(key, value)`` pairs (or of items that
    ``key_value_fn`` turns into pairs), loaded into a dict at first access."""

    def __init__(self, datapipe, key_value_fn=None) -> None:
        if not isinstance(datapipe, IterDataPipe):
            raise TypeError(f"IterToMapConverter can only apply on IterDataPipe, but found "
                            f"{type(datapipe)}")
        if key_value_fn is not None:
            _check_unpickable_fn(key_value_fn)
        self.datapipe = datapipe
        self.key_value_fn = key_value_fn
        self._map = None

    def _load_map(self):
        self._map = {}
        for d in self.datapipe:
            pair = self.key_value_fn(d) if self.key_value_fn else d
            if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
                raise TypeError(f"{type(self).__name__} requires key-value pair in the source "
                                f"DataPipe (or from key_value_fn); got {pair!r}")
            key, value = pair
            if key in self._map:
                warnings.warn(f"Found duplicate key {key}. Please check your `key_value_fn`",
                              stacklevel=user_stacklevel())
            self._map[key] = value

    def __getitem__(self, index):
        if self._map is None:
            self._load_map()
        try:
            return self._map[index]
        except KeyError:
            raise IndexError(f"Index {index} is invalid for {type(self).__name__}.") from None

    def __len__(self):
        if self._map is not None:
            return len(self._map)
        try:
            return len(self.datapipe)
        except (TypeError, NotImplementedError):
            self._load_map()
            return len(self._map)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_map"] = None
        return state


IterDataPipe.register_datapipe_as_function("to_map_datapipe", IterToMapConverterMapDataPipe)

Batcher = BatcherMapDataPipe
Concater = ConcaterMapDataPipe
InMemoryCacheHolder = InMemoryCacheHolderMapDataPipe
IterToMapConverter = IterToMapConverterMapDataPipe
Mapper = MapperMapDataPipe
SequenceWrapper = SequenceWrapperMapDataPipe
Shuffler = ShufflerIterDataPipe
UnZipper = UnZipperMapDataPipe
Zipper = ZipperMapDataPipe
