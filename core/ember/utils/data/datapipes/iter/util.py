"""Sources and small utilities: IterableWrapper, header, cycle, repeat, enumerate, add_index,
set_length, in_memory_cache, slice, drop, flatten, prefetch, pin_memory, shard_expand,
and the map-to-iter converter."""
from __future__ import annotations

import copy
import queue
import re
import sys
import threading
import warnings
from collections import deque
from itertools import islice

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe, MapDataPipe
from ..utils.common import source_length
from ..._utils.pin_memory import pin_memory
from ....._warn import user_stacklevel

__all__ = ["CyclerIterDataPipe", "DropperIterDataPipe", "EnumeratorIterDataPipe",
           "FlattenerIterDataPipe", "HeaderIterDataPipe", "InMemoryCacheHolderIterDataPipe",
           "IndexAdderIterDataPipe", "IterableWrapperIterDataPipe", "LengthSetterIterDataPipe",
           "MapToIterConverterIterDataPipe", "PinMemoryIterDataPipe", "PrefetcherIterDataPipe",
           "RepeaterIterDataPipe", "ShardExpanderIterDataPipe", "SlicerIterDataPipe"]


def _first(source, n):
    """The first ``n`` items of ``source`` (all for None); with n == 0 it is not even
    started."""
    return iter(()) if n == 0 else islice(source, n)


class IterableWrapperIterDataPipe(IterDataPipe):
    """Wrap any iterable as an IterDataPipe.

    With ``deepcopy=True`` (the default) each iteration walks a deep copy, so in-place changes
    made downstream never reach the wrapped data.
    """

    def __init__(self, iterable, deepcopy: bool = True) -> None:
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn("The input iterable can not be deepcopied, please be aware of "
                              "in-place modification would affect source data.",
                              stacklevel=user_stacklevel())
        yield from source

    def __len__(self):
        return source_length(self, self.iterable)


@functional_datapipe("header")
class HeaderIterDataPipe(IterDataPipe):
    """The first ``limit`` items (functional name: ``header``)."""

    def __init__(self, source_datapipe, limit=10) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"header: limit must be non-negative or None, got {limit}")
        self.source_datapipe = source_datapipe
        self.limit = limit

    def __iter__(self):
        yield from _first(self.source_datapipe, self.limit)

    def __len__(self):
        try:
            n = len(self.source_datapipe)
        except TypeError:
            if self.limit is None:
                raise TypeError("The length of this HeaderIterDataPipe cannot be "
                                "determined.") from None
            return self.limit
        return n if self.limit is None else min(n, self.limit)


@functional_datapipe("set_length")
class LengthSetterIterDataPipe(IterDataPipe):
    """Declare a length (and stop after that many items)."""

    def __init__(self, source_datapipe, length: int) -> None:
        if not isinstance(length, int) or length < 0:
            raise AssertionError(f"'length' must be a non-negative integer, got {length!r}")
        self.source_datapipe = source_datapipe
        self.length = length

    def __iter__(self):
        yield from _first(self.source_datapipe, self.length)

    def __len__(self):
        return self.length


@functional_datapipe("cycle")
class CyclerIterDataPipe(IterDataPipe):
    """Repeat the whole source ``count`` times (None: forever)."""

    def __init__(self, source_datapipe, count=None) -> None:
        if count is not None and count < 0:
            raise ValueError(f"Expected non-negative count, got {count}")
        self.source_datapipe = source_datapipe
        self.count = count

    def __iter__(self):
        i = 0
        while self.count is None or i < self.count:
            yield from self.source_datapipe
            i += 1

    def __len__(self):
        if self.count is None:
            raise TypeError(f"This {type(self).__name__} instance cycles forever, and therefore "
                            f"doesn't have valid length")
        return self.count * len(self.source_datapipe)


@functional_datapipe("repeat")
class RepeaterIterDataPipe(IterDataPipe):
    """Yield each item ``times`` times in a row."""

    def __init__(self, source_datapipe, times: int) -> None:
        if times <= 1:
            raise ValueError(f"The number of repetition must be > 1, got {times}")
        self.source_datapipe = source_datapipe
        self.times = times

    def __iter__(self):
        for element in self.source_datapipe:
            for _ in range(self.times):
                yield element

    def __len__(self):
        return self.times * len(self.source_datapipe)


@functional_datapipe("enumerate")
class EnumeratorIterDataPipe(IterDataPipe):
    """``(index, item)`` pairs, counting from ``starting_index``."""

    def __init__(self, source_datapipe, starting_index: int = 0) -> None:
        self.source_datapipe = source_datapipe
        self.starting_index = starting_index

    def __iter__(self):
        yield from enumerate(self.source_datapipe, self.starting_index)

    def __len__(self):
        return source_length(self, self.source_datapipe)


@functional_datapipe("add_index")
class IndexAdderIterDataPipe(IterDataPipe):
    """Store each dict item's position under ``index_name``."""

    def __init__(self, source_datapipe, index_name: str = "index") -> None:
        self.source_datapipe = source_datapipe
        self.index_name = index_name

    def __iter__(self):
        for i, x in enumerate(self.source_datapipe):
            if not isinstance(x, dict):
                raise NotImplementedError(f"We only support adding index to row or batch in dict "
                                          f"type; item {i} is {type(x).__name__}")
            x[self.index_name] = i
            yield x

    def __len__(self):
        return source_length(self, self.source_datapipe)


@functional_datapipe("in_memory_cache")
class InMemoryCacheHolderIterDataPipe(IterDataPipe):
    """Keep the items of the first iteration in memory and replay them afterwards.

    ``size`` (megabytes) bounds the cache: past it the oldest items are dropped and later
    iterations re-read that prefix from the source.
    """

    def __init__(self, source_dp, size=None) -> None:
        self.source_dp = source_dp
        self.size = None if size is None else size * 1024 * 1024
        self.cache = None
        self.idx = 0

    def __iter__(self):
        if self.cache is not None:
            if self.idx > 0:
                for idx, data in enumerate(self.source_dp):
                    if idx >= self.idx:
                        break
                    yield data
            yield from self.cache
            return
        cache = deque()
        idx = 0
        nbytes = 0
        for data in self.source_dp:
            cache.append(data)
            if self.size is not None:
                nbytes += sys.getsizeof(data)
                while nbytes > self.size and cache:
                    nbytes -= sys.getsizeof(cache.popleft())
                    idx += 1
            yield data
        self.cache, self.idx = cache, idx

    def __len__(self):
        try:
            return len(self.source_dp)
        except TypeError:
            if self.cache is not None:
                return self.idx + len(self.cache)
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length until "
                            f"the cache is loaded.") from None


def _select(item, index, stop, step, keep):
    """Positions/keys of one tuple/list/dict item for slice (keep=True) or drop (keep=False)."""
    if isinstance(item, dict):
        keys = index if isinstance(index, list) else [index]
        if keep:
            return {k: item[k] for k in keys}
        return {k: v for k, v in item.items() if k not in keys}
    if not isinstance(item, (list, tuple)):
        raise TypeError(f"slice/drop need tuple, list or dict items, got {type(item).__name__}")
    if keep:
        if isinstance(index, list):
            picked = [item[i] for i in index]
        else:
            picked = list(item[index:stop:step])
    else:
        drop = set(i % len(item) for i in (index if isinstance(index, list) else [index]))
        picked = [v for i, v in enumerate(item) if i not in drop]
    return tuple(picked) if isinstance(item, tuple) else picked


@functional_datapipe("slice")
class SlicerIterDataPipe(IterDataPipe):
    """Keep ``item[index:stop:step]`` (or the listed positions/keys) of every item."""

    def __init__(self, datapipe, index, stop=None, step=None) -> None:
        if isinstance(index, list) and (stop is not None or step is not None):
            raise ValueError("slice: `stop` and `step` only apply to an integer `index`")
        self.datapipe = datapipe
        self.index = index
        self.stop = stop
        self.step = step

    def __iter__(self):
        for item in self.datapipe:
            yield _select(item, self.index, self.stop, self.step, keep=True)

    def __len__(self):
        return source_length(self, self.datapipe)


@functional_datapipe("drop")
class DropperIterDataPipe(IterDataPipe):
    """Remove the given positions (tuples/lists) or keys (dicts) from every item."""

    def __init__(self, datapipe, indices) -> None:
        self.datapipe = datapipe
        self.indices = indices

    def __iter__(self):
        for item in self.datapipe:
            yield _select(item, self.indices, None, None, keep=False)

    def __len__(self):
        return source_length(self, self.datapipe)


@functional_datapipe("flatten")
class FlattenerIterDataPipe(IterDataPipe):
    """Open nested lists/tuples (or dicts) at ``indices`` one level into the item itself
    (every nested one when ``indices`` is None)."""

    def __init__(self, datapipe, indices=None) -> None:
        self.datapipe = datapipe
        if indices is not None and not isinstance(indices, list):
            indices = [indices]
        self.indices = None if indices is None else set(indices)

    def _wanted(self, key, value, nested_type):
        return isinstance(value, nested_type) and (self.indices is None or key in self.indices)

    def __iter__(self):
        for item in self.datapipe:
            if isinstance(item, dict):
                flat = {}
                for k, v in item.items():
                    if self._wanted(k, v, dict):
                        flat.update(v)
                    else:
                        flat[k] = v
                yield flat
            else:
                flat = []
                for i, v in enumerate(item):
                    if self._wanted(i, v, (list, tuple)):
                        flat.extend(v)
                    else:
                        flat.append(v)
                yield tuple(flat) if isinstance(item, tuple) else flat

    def __len__(self):
        return source_length(self, self.datapipe)


_END = object()


def _fill_queue(source, out, stop, transform):
    try:
        for item in source:
            item = transform(item) if transform is not None else item
            while not stop.is_set():
                try:
                    out.put((item, None), timeout=0.1)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                return
        out.put((_END, None))
    except BaseException as e:  # noqa: BLE001 - handed to the consuming thread
        out.put((_END, e))


@functional_datapipe("prefetch")
class PrefetcherIterDataPipe(IterDataPipe):
    """Read up to ``buffer_size`` items ahead on a background thread."""

    def __init__(self, source_datapipe, buffer_size: int = 10) -> None:
        if buffer_size <= 0:
            raise ValueError(f"'buffer_size' is required to be a positive integer, got "
                             f"{buffer_size}.")
        self.source_datapipe = source_datapipe
        self.buffer_size = buffer_size

    def _transform(self):
        return None

    def __iter__(self):
        items = queue.Queue(maxsize=self.buffer_size)
        stop = threading.Event()
        worker = threading.Thread(target=_fill_queue, daemon=True,
                                  args=(self.source_datapipe, items, stop, self._transform()))
        worker.start()
        try:
            while True:
                item, error = items.get()
                if item is _END:
                    if error is not None:
                        raise error
                    return
                yield item
        finally:
            stop.set()
            worker.join(timeout=5)

    def __len__(self):
        return source_length(self, self.source_datapipe)


@functional_datapipe("pin_memory")
class PinMemoryIterDataPipe(PrefetcherIterDataPipe):
    """Prefetch on a thread and apply ``pin_memory_fn`` there (see DataLoader ``pin_memory``:
    on ember's backends this makes host tensors contiguous, ready for a device copy)."""

    def __init__(self, source_datapipe, device=None, pin_memory_fn=None) -> None:
        super().__init__(source_datapipe, buffer_size=2)
        self.device = device
        self.pin_memory_fn = pin_memory if pin_memory_fn is None else pin_memory_fn

    def _transform(self):
        fn, device = self.pin_memory_fn, self.device
        return lambda item: fn(item, device)


_BRACES = re.compile(r"\{(\d+)\.\.(\d+)\}")


def _expand_braces(pattern):
    match = _BRACES.search(pattern)
    if match is None:
        yield pattern
        return
    lo, hi = match.group(1), match.group(2)
    width = len(lo)
    for i in range(int(lo), int(hi) + 1):
        yield from _expand_braces(pattern[:match.start()] + str(i).zfill(width)
                                  + pattern[match.end():])


@functional_datapipe("shard_expand")
class ShardExpanderIterDataPipe(IterDataPipe):
    """Expand brace ranges: ``"data-{000..002}.tar"`` gives data-000.tar, data-001.tar,
    data-002.tar."""

    def __init__(self, source_datapipe) -> None:
        self.source_datapipe = source_datapipe

    def __iter__(self):
        for path in self.source_datapipe:
            if not isinstance(path, str):
                raise TypeError(f"shard_expand: expected string patterns, got "
                                f"{type(path).__name__}")
            yield from _expand_braces(path)


class MapToIterConverterIterDataPipe(IterDataPipe):
    """Iterate a MapDataPipe over ``indices`` (default ``range(len(datapipe))``)."""

    def __init__(self, datapipe, indices=None) -> None:
        if not isinstance(datapipe, MapDataPipe):
            raise TypeError(f"MapToIterConverter can only apply on MapDataPipe, but found "
                            f"{type(datapipe)}")
        self.datapipe = datapipe
        self.indices = indices if indices else range(len(datapipe))

    def __iter__(self):
        for idx in self.indices:
            yield self.datapipe[idx]

    def __len__(self):
        return len(self.indices)


MapDataPipe.register_datapipe_as_function("to_iter_datapipe", MapToIterConverterIterDataPipe)
