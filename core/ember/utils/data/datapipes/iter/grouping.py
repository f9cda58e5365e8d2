"""Grouping: batch, unbatch, bucketbatch, max_token_bucketize, groupby, sharding_filter."""
from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Sized
from enum import IntEnum

from .._decorator import functional_datapipe
from ..datapipe import DataChunk, IterDataPipe
from ..utils.common import _check_unpickable_fn

__all__ = ["BatcherIterDataPipe", "BucketBatcherIterDataPipe", "GrouperIterDataPipe",
           "MaxTokenBucketizerIterDataPipe", "SHARDING_PRIORITIES", "ShardingFilterIterDataPipe",
           "UnBatcherIterDataPipe"]


def _positive(value, what, pipe):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise AssertionError(f"{what} is required to be larger than 0! ({pipe} got {value!r})")


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Group items into ``DataChunk`` lists of ``batch_size`` (functional name: ``batch``)."""

    def __init__(self, datapipe, batch_size: int, drop_last: bool = False,
                 wrapper_class=DataChunk) -> None:
        _positive(batch_size, "Batch size", "batch")
        super().__init__()
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self):
        it = iter(self.datapipe)
        size = self.batch_size
        wrap = self.wrapper_class
        while True:
            batch = list(itertools.islice(it, size))
            if len(batch) == size:
                yield wrap(batch)
                continue
            if batch and not self.drop_last:
                yield wrap(batch)
            return

    def __len__(self):
        if isinstance(self.datapipe, Sized):
            n = len(self.datapipe)
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """Undo ``batch``: yield the items of each batch; ``unbatch_level=-1`` flattens fully."""

    def __init__(self, datapipe, unbatch_level: int = 1) -> None:
        if unbatch_level < -1:
            raise ValueError(f"unbatch_level must be -1 or >= 0, got {unbatch_level}")
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def __iter__(self):
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)

    def _dive(self, element, level):
        if level == -1:
            if isinstance(element, (list, DataChunk)):
                for item in element:
                    yield from self._dive(item, -1)
            else:
                yield element
        elif level == 0:
            yield element
        elif isinstance(element, (list, DataChunk)):
            for item in element:
                yield from self._dive(item, level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the "
                             f"DataPipe")


@functional_datapipe("bucketbatch")
class BucketBatcherIterDataPipe(IterDataPipe):
    """Batches of similar items: shuffle a pool, sort each bucket with ``sort_key``, batch.

    A bucket holds ``batch_size * batch_num`` items and the pool ``bucket_num`` buckets. This
    returns the composed pipe (in_batch_shuffle/shuffle, map(sort_key), batch), as torchdata.
    """

    def __new__(cls, datapipe, batch_size: int, drop_last: bool = False, batch_num: int = 100,
                bucket_num: int = 1, sort_key=None, use_in_batch_shuffle: bool = True):
        _positive(batch_size, "Batch size", "bucketbatch")
        _positive(batch_num, "Number of batches", "bucketbatch")
        _positive(bucket_num, "Number of buckets", "bucketbatch")
        bucket_size = batch_size * batch_num
        pool_size = bucket_size * bucket_num
        if bucket_num > 1 or sort_key is None:
            if use_in_batch_shuffle:
                datapipe = datapipe.batch(batch_size=pool_size).in_batch_shuffle().unbatch()
            else:
                datapipe = datapipe.shuffle(buffer_size=pool_size)
        if sort_key is not None:
            datapipe = datapipe.batch(bucket_size).map(fn=sort_key).unbatch()
        datapipe = datapipe.batch(batch_size, drop_last=drop_last)
        if sort_key is not None:
            if use_in_batch_shuffle:
                datapipe = datapipe.batch(batch_size=bucket_num).in_batch_shuffle().unbatch()
            else:
                datapipe = datapipe.shuffle(buffer_size=bucket_size)
        return datapipe


@functional_datapipe("max_token_bucketize")
class MaxTokenBucketizerIterDataPipe(IterDataPipe):
    """Batches whose total ``len_fn`` (or, with ``include_padding``, longest × count) stays
    within ``max_token_count``; items are drawn shortest first from a ``buffer_size`` heap."""

    def __init__(self, datapipe, max_token_count: int, len_fn=len, min_len: int = 0,
                 max_len=None, buffer_size: int = 1000, include_padding: bool = False) -> None:
        if max_len is None:
            max_len = max_token_count
        if min_len < 0 or min_len > max_len:
            raise ValueError("``min_len`` should be larger than 0 and equal to or smaller than "
                             f"``max_len`` (got min_len={min_len}, max_len={max_len}).")
        if max_len > max_token_count:
            raise ValueError("``max_token_count`` must be equal to or greater than ``max_len`` "
                             f"(got max_token_count={max_token_count}, max_len={max_len}).")
        if buffer_size <= 0:
            raise ValueError(f"'buffer_size' is required to be a positive integer, got "
                             f"{buffer_size}.")
        _check_unpickable_fn(len_fn)
        self.datapipe = datapipe
        self.max_token_count = max_token_count
        self.len_fn = len_fn
        self.min_len = min_len
        self.max_len = max_len
        self.buffer_size = buffer_size
        self.include_padding = include_padding

    def __iter__(self):
        heap = []
        counter = itertools.count()  # ties keep arrival order and never compare the items
        batch, tokens, longest = [], 0, 0
        for item in self.datapipe:
            length = self.len_fn(item)
            if not self.min_len <= length <= self.max_len:
                continue
            heapq.heappush(heap, (length, next(counter), item))
            if len(heap) == self.buffer_size:
                length, _, item = heapq.heappop(heap)
                batch, tokens, longest, ready = self._add(batch, tokens, longest, length, item)
                if ready is not None:
                    yield ready
        while heap:
            length, _, item = heapq.heappop(heap)
            batch, tokens, longest, ready = self._add(batch, tokens, longest, length, item)
            if ready is not None:
                yield ready
        if batch:
            yield DataChunk(batch)

    def _add(self, batch, tokens, longest, length, item):
        new_longest = max(longest, length)
        cost = new_longest * (len(batch) + 1) if self.include_padding else tokens + length
        if batch and cost > self.max_token_count:
            return [item], length, length, DataChunk(batch)
        return batch + [item], tokens + length, new_longest, None


@functional_datapipe("groupby")
class GrouperIterDataPipe(IterDataPipe):
    """Group items by ``group_key_fn`` into ``DataChunk``s (functional name: ``groupby``).

    A group is yielded when it reaches ``group_size``; when ``buffer_size`` items are buffered,
    the largest group is yielded (or, if smaller than ``guaranteed_group_size``, dropped with
    ``drop_remaining`` or reported as an error).
    """

    def __init__(self, datapipe, group_key_fn, *, keep_key: bool = False,
                 buffer_size: int = 10000, group_size=None, guaranteed_group_size=None,
                 drop_remaining: bool = False) -> None:
        _check_unpickable_fn(group_key_fn)
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.max_buffer_size = buffer_size
        self.buffer_elements = defaultdict(list)
        self.curr_buffer_size = 0
        self.group_size = group_size
        self.guaranteed_group_size = None
        if group_size is not None and buffer_size is not None:
            if not 0 < group_size <= buffer_size:
                raise AssertionError(f"groupby: group_size must be in (0, buffer_size], got "
                                     f"group_size={group_size}, buffer_size={buffer_size}")
            self.guaranteed_group_size = group_size
        if guaranteed_group_size is not None:
            if group_size is None or not 0 < guaranteed_group_size <= group_size:
                raise AssertionError(f"groupby: guaranteed_group_size must be in "
                                     f"(0, group_size], got {guaranteed_group_size} with "
                                     f"group_size={group_size}")
            self.guaranteed_group_size = guaranteed_group_size
        self.drop_remaining = drop_remaining
        self.wrapper_class = DataChunk

    def _emit(self, key, items):
        result = self.wrapper_class(items)
        return (key, result) if self.keep_key else result

    def _remove_biggest_key(self):
        biggest_key = max(self.buffer_elements, key=lambda k: len(self.buffer_elements[k]))
        biggest = self.buffer_elements.pop(biggest_key)
        self.curr_buffer_size -= len(biggest)
        if self.guaranteed_group_size is not None and len(biggest) < self.guaranteed_group_size:
            if not self.drop_remaining:
                raise RuntimeError("Failed to group items", str(biggest))
            return None, biggest_key
        return biggest, biggest_key

    def __iter__(self):
        for x in self.datapipe:
            key = self.group_key_fn(x)
            group = self.buffer_elements[key]
            group.append(x)
            self.curr_buffer_size += 1
            if self.group_size is not None and len(group) == self.group_size:
                yield self._emit(key, group)
                self.curr_buffer_size -= len(group)
                del self.buffer_elements[key]
            if self.curr_buffer_size == self.max_buffer_size:
                result, big_key = self._remove_biggest_key()
                if result is not None:
                    yield self._emit(big_key, result)
        for key in tuple(self.buffer_elements):
            items = self.buffer_elements.pop(key)
            self.curr_buffer_size -= len(items)
            yield self._emit(key, items)

    def reset(self) -> None:
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("buffer_elements", "curr_buffer_size")}
        hook = IterDataPipe.getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.curr_buffer_size = 0
        self.buffer_elements = defaultdict(list)


class SHARDING_PRIORITIES(IntEnum):
    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


class _ShardingIterDataPipe(IterDataPipe):
    def apply_sharding(self, num_of_instances, instance_id, sharding_group):
        raise NotImplementedError


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(_ShardingIterDataPipe):
    """Keep every ``num_of_instances``-th item starting at ``instance_id``.

    The DataLoader applies ``(num_workers * world_size, worker_id * world_size + rank)`` in each
    worker, so each item reaches exactly one worker of one rank. Put it after ``shuffle`` (every
    worker shuffles identically from the shared seed) and before expensive work.
    """

    def __init__(self, source_datapipe, sharding_group_filter=None) -> None:
        super().__init__()
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups = {}
        self.num_of_instances = 1
        self.instance_id = 0
        self._update_num_of_instances()

    def apply_sharding(self, num_of_instances, instance_id,
                       sharding_group=SHARDING_PRIORITIES.DEFAULT):
        if instance_id >= num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than "
                             f"num_of_instances({num_of_instances})")
        if sharding_group == SHARDING_PRIORITIES.DEFAULT:
            if self.groups and SHARDING_PRIORITIES.DEFAULT not in self.groups:
                raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        elif SHARDING_PRIORITIES.DEFAULT in self.groups:
            raise RuntimeError("ShardingFilter cannot mix DEFAULT and non DEFAULT groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self._update_num_of_instances()

    def _update_num_of_instances(self):
        selected = [self.groups[k] for k in sorted(self.groups)
                    if self.sharding_group_filter is None or k == self.sharding_group_filter]
        self.num_of_instances, self.instance_id = 1, 0
        for n, i in reversed(selected):
            self.instance_id += self.num_of_instances * i
            self.num_of_instances *= n

    def __iter__(self):
        n, mine = self.num_of_instances, self.instance_id
        if n == 1:
            yield from self.source_datapipe
            return
        for i, item in enumerate(self.source_datapipe):
            if i % n == mine:
                yield item

    def __len__(self):
        if isinstance(self.source_datapipe, Sized):
            n = len(self.source_datapipe)
            return n // self.num_of_instances + \
                (1 if self.instance_id < n % self.num_of_instances else 0)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
