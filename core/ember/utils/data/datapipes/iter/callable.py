"""Pipes that apply a function: map, filter, flatmap, collate, map_batches, threadpool_map."""
from __future__ import annotations

from collections import deque
from collections.abc import Sized
from concurrent.futures import ThreadPoolExecutor

from ..._utils.collate import default_collate
from .._decorator import functional_datapipe
from .._seeded import SeededRandomMixin
from ..datapipe import IterDataPipe
from ..utils.common import (_check_unpickable_fn, apply_to_columns, call_on_columns,
                            check_columns)

__all__ = ["BatchMapperIterDataPipe", "CollatorIterDataPipe", "FilterIterDataPipe",
           "FlatMapperIterDataPipe", "MapperIterDataPipe", "ShuffledFlatMapperIterDataPipe",
           "ThreadPoolMapperIterDataPipe"]


def _identity(x):
    return x


def _no_length(datapipe):
    return TypeError(f"{type(datapipe).__name__} instance doesn't have valid length")


def _source_len(datapipe, source):
    if isinstance(source, Sized):
        return len(source)
    raise _no_length(datapipe)


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """Apply ``fn`` to each item (functional name: ``map``).

    ``input_col`` picks the column(s) of tuple/list/dict items ``fn`` gets; ``output_col`` says
    where the result goes (-1 appends; default: replaces ``input_col``).
    """

    def __init__(self, datapipe, fn=_identity, input_col=None, output_col=None) -> None:
        super().__init__()
        self.datapipe = datapipe
        _check_unpickable_fn(fn)
        self.fn = fn
        self.input_col = input_col
        self.output_col = check_columns(fn, input_col, output_col)

    def _apply_fn(self, data):
        if self.input_col is None:
            return self.fn(data)
        return apply_to_columns(self.fn, data, self.input_col, self.output_col)

    def __iter__(self):
        # the builtin map keeps the per-item cost in C; the iterator hook adds the checks
        if self.input_col is None:
            return map(self.fn, self.datapipe)
        return map(self._apply_fn, self.datapipe)

    def __len__(self):
        return _source_len(self, self.datapipe)


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Collate each batch with ``conversion`` (default: ``default_collate``)."""

    def __init__(self, datapipe, conversion=default_collate, collate_fn=None) -> None:
        if collate_fn is not None:
            conversion = collate_fn
        if conversion is None or not callable(conversion):
            raise TypeError(f"Collator: `conversion` must be a callable collate function, got "
                            f"{type(conversion).__name__} (dict conversions need DataFrames, "
                            f"which ember does not have)")
        super().__init__(datapipe, fn=conversion)


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """Keep the items for which ``filter_fn`` returns True (functional name: ``filter``).

    ``fn=`` is accepted as another name for ``filter_fn`` (the spelling of torch's early
    DataPipe README).
    """

    def __init__(self, datapipe, filter_fn=None, input_col=None, *, fn=None) -> None:
        super().__init__()
        if filter_fn is None:
            filter_fn = fn
        elif fn is not None:
            raise TypeError("Filter got both `filter_fn` and `fn`; pass one of them")
        if filter_fn is None:
            raise TypeError("Filter() missing 1 required positional argument: 'filter_fn'")
        self.datapipe = datapipe
        _check_unpickable_fn(filter_fn)
        self.filter_fn = filter_fn
        self.input_col = input_col
        check_columns(filter_fn, input_col, None)

    def _condition(self, data):
        result = call_on_columns(self.filter_fn, data, self.input_col)
        if not isinstance(result, bool):
            raise ValueError(f"Boolean output is required for `filter_fn` of FilterIterDataPipe, "
                             f"got {type(result)} (value {result!r})")
        return result

    def __iter__(self):
        for data in self.datapipe:
            if self._condition(data):
                yield data


@functional_datapipe("flatmap")
class FlatMapperIterDataPipe(IterDataPipe):
    """Apply ``fn`` (returning an iterable) to each item and yield its elements one by one."""

    def __init__(self, datapipe, fn=None, input_col=None) -> None:
        super().__init__()
        self.datapipe = datapipe
        if fn is None:
            fn = _identity
        _check_unpickable_fn(fn)
        self.fn = fn
        self.input_col = input_col
        check_columns(fn, input_col, None)

    def _apply(self, data):
        return call_on_columns(self.fn, data, self.input_col)

    def __iter__(self):
        for data in self.datapipe:
            yield from self._apply(data)


@functional_datapipe("shuffled_flatmap")
class ShuffledFlatMapperIterDataPipe(SeededRandomMixin, IterDataPipe):
    """flatmap that interleaves the outputs of up to ``buffer_size`` items at random.

    The randomness is seeded like ``shuffle``: ``ember.manual_seed``, ``set_seed`` or the
    DataLoader's generator.
    """

    def __init__(self, datapipe, fn=None, input_col=None, buffer_size: int = 100) -> None:
        super().__init__()
        if buffer_size <= 0:
            raise AssertionError(f"buffer_size should be larger than 0, got {buffer_size}")
        self._flat = FlatMapperIterDataPipe(datapipe, fn, input_col)
        self.datapipe = datapipe
        self.buffer_size = buffer_size
        self._init_random()

    def __iter__(self):
        if not self._enabled:
            yield from self._flat
            return
        buffer = []
        rng = self._rng
        for data in self.datapipe:
            buffer.append(iter(self._flat._apply(data)))
            while len(buffer) >= self.buffer_size:
                yield from _draw_from(buffer, rng)
        while buffer:
            yield from _draw_from(buffer, rng)


def _draw_from(buffer, rng):
    """Yield one element of a random iterator in ``buffer`` (dropping it if exhausted)."""
    idx = rng.randint(0, len(buffer) - 1)
    try:
        yield next(buffer[idx])
    except StopIteration:
        buffer.pop(idx)


@functional_datapipe("map_batches")
class BatchMapperIterDataPipe(IterDataPipe):
    """Apply ``fn`` to batches of ``batch_size`` items; yield the items ``fn`` returns."""

    def __init__(self, datapipe, fn, batch_size: int, input_col=None) -> None:
        super().__init__()
        if batch_size <= 0:
            raise AssertionError(f"Batch size is required to be larger than 0! (got "
                                 f"batch_size={batch_size})")
        _check_unpickable_fn(fn)
        self.datapipe = datapipe
        self.fn = fn
        self.batch_size = batch_size
        self.input_col = input_col
        check_columns(fn, input_col, None)

    def __iter__(self):
        batch = []
        for data in self.datapipe:
            batch.append(data)
            if len(batch) == self.batch_size:
                yield from self._apply(batch)
                batch = []
        if batch:
            yield from self._apply(batch)

    def _apply(self, batch):
        if self.input_col is None:
            return self.fn(batch)
        col = self.input_col
        if isinstance(col, (list, tuple)):
            return self.fn(*([d[c] for d in batch] for c in col))
        return self.fn([d[col] for d in batch])


@functional_datapipe("threadpool_map")
class ThreadPoolMapperIterDataPipe(IterDataPipe):
    """``map`` run on a thread pool (I/O-bound functions), results in the source's order."""

    def __init__(self, source_datapipe, fn, input_col=None, output_col=None,
                 scheduled_tasks: int = 128, max_workers=None, **threadpool_kwargs) -> None:
        super().__init__()
        if scheduled_tasks <= 0:
            raise ValueError(f"'scheduled_tasks' is required to be a positive integer, got "
                             f"{scheduled_tasks}")
        if max_workers is not None and max_workers <= 0:
            raise ValueError(f"'max_workers' is required to be a positive integer, got "
                             f"{max_workers}")
        _check_unpickable_fn(fn)
        self.datapipe = source_datapipe
        self.fn = fn
        self.input_col = input_col
        self.output_col = check_columns(fn, input_col, output_col)
        self.scheduled_tasks = scheduled_tasks
        self.max_workers = max_workers
        self.threadpool_kwargs = threadpool_kwargs

    def _apply_fn(self, data):
        if self.input_col is None:
            return self.fn(data)
        return apply_to_columns(self.fn, data, self.input_col, self.output_col)

    def __iter__(self):
        with ThreadPoolExecutor(max_workers=self.max_workers, **self.threadpool_kwargs) as pool:
            pending = deque()
            for data in self.datapipe:
                pending.append(pool.submit(self._apply_fn, data))
                if len(pending) >= self.scheduled_tasks:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def __len__(self):
        return _source_len(self, self.datapipe)
