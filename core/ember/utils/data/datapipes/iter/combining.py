"""Combining and splitting streams: concat, zip, mux, fork, demux, unzip, key zippers."""
from __future__ import annotations

import copy as copymodule
import itertools
import operator
import random
import warnings
from collections import OrderedDict, deque
from collections.abc import Sized

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe, MapDataPipe
from ..utils.common import StreamWrapper, _check_unpickable_fn, unzip_columns
from ....._warn import user_stacklevel

__all__ = ["ConcaterIterDataPipe", "DemultiplexerIterDataPipe", "ForkerIterDataPipe",
           "IterKeyZipperIterDataPipe", "MapKeyZipperIterDataPipe", "MultiplexerIterDataPipe",
           "MultiplexerLongestIterDataPipe", "RoundRobinDemultiplexerIterDataPipe",
           "SampleMultiplexerDataPipe", "UnZipperIterDataPipe", "ZipperIterDataPipe",
           "ZipperLongestIterDataPipe"]


def _check_pipes(datapipes, who):
    if len(datapipes) == 0:
        raise ValueError("Expected at least one DataPipe, but got nothing")
    for i, dp in enumerate(datapipes):
        if not isinstance(dp, IterDataPipe):
            raise TypeError(f"All inputs are required to be `IterDataPipe` for `{who}`; input "
                            f"{i} is {type(dp).__name__}")


def _sum_len(pipe, datapipes, combine=sum):
    if all(isinstance(dp, Sized) for dp in datapipes):
        return combine(len(dp) for dp in datapipes)
    raise TypeError(f"{type(pipe).__name__} instance doesn't have valid length")


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """Yield every item of the first pipe, then of the next, ... (functional name: ``concat``)."""

    def __init__(self, *datapipes) -> None:
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        return _sum_len(self, self.datapipes)


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of one item from each pipe; stops with the shortest (functional name: ``zip``)."""

    def __init__(self, *datapipes) -> None:
        _check_pipes(datapipes, "ZipIterDataPipe")
        self.datapipes = datapipes

    def __iter__(self):
        yield from zip(*(iter(dp) for dp in self.datapipes))

    def __len__(self):
        return _sum_len(self, self.datapipes, min)


@functional_datapipe("zip_longest")
class ZipperLongestIterDataPipe(IterDataPipe):
    """Like ``zip`` until the longest pipe ends; missing items are ``fill_value``."""

    def __init__(self, *datapipes, fill_value=None) -> None:
        _check_pipes(datapipes, "ZipperLongestIterDataPipe")
        self.datapipes = datapipes
        self.fill_value = fill_value

    def __iter__(self):
        yield from itertools.zip_longest(*(iter(dp) for dp in self.datapipes),
                                         fillvalue=self.fill_value)

    def __len__(self):
        return _sum_len(self, self.datapipes, max)


@functional_datapipe("mux")
class MultiplexerIterDataPipe(IterDataPipe):
    """One item from each pipe in turn; stops at the first round a pipe cannot complete."""

    def __init__(self, *datapipes) -> None:
        _check_pipes(datapipes, "MultiplexerIterDataPipe")
        self.datapipes = datapipes

    def __iter__(self):
        iterators = [iter(dp) for dp in self.datapipes]
        while True:
            round_items = []
            for it in iterators:
                try:
                    round_items.append(next(it))
                except StopIteration:
                    return
            yield from round_items

    def __len__(self):
        return _sum_len(self, self.datapipes, min) * len(self.datapipes)


@functional_datapipe("mux_longest")
class MultiplexerLongestIterDataPipe(IterDataPipe):
    """One item from each pipe in turn, skipping exhausted pipes until all are done."""

    def __init__(self, *datapipes) -> None:
        _check_pipes(datapipes, "MultiplexerLongestIterDataPipe")
        self.datapipes = datapipes

    def __iter__(self):
        iterators = [iter(dp) for dp in self.datapipes]
        while iterators:
            alive = []
            for it in iterators:
                try:
                    item = next(it)
                except StopIteration:
                    continue
                alive.append(it)
                yield item
            iterators = alive

    def __len__(self):
        return _sum_len(self, self.datapipes)


class SampleMultiplexerDataPipe(IterDataPipe):
    """Draw each item from a pipe chosen at random with the given weights, until all end."""

    def __init__(self, pipes_to_weights_dict, seed=None) -> None:
        if not pipes_to_weights_dict:
            raise ValueError("Empty dictionary passed to SampleMultiplexerDataPipe")
        total = 0.0
        for weight in pipes_to_weights_dict.values():
            if weight <= 0:
                raise ValueError(f"Expecting a positive and non-zero weight, got {weight}")
            total += weight
        self.pipes_and_weights = [(dp, w / total) for dp, w in pipes_to_weights_dict.items()]
        self.seed = seed
        self.random = random.Random(seed)

    def __iter__(self):
        live = [(iter(dp), w) for dp, w in self.pipes_and_weights]
        while len(live) > 1:
            r, acc = self.random.random(), 0.0
            for it, weight in live:
                acc += weight
                if r < acc:
                    try:
                        yield next(it)
                    except StopIteration:
                        rest = 1 - weight
                        live = [(k, v / rest) for k, v in live if k is not it]
                    break
            else:  # rounding left r above the last cumulative weight
                try:
                    yield next(live[-1][0])
                except StopIteration:
                    rest = 1 - live[-1][1]
                    live = [(k, v / rest) for k, v in live[:-1]]
        if live:
            yield from live[0][0]

    def __len__(self):
        return _sum_len(self, [dp for dp, _ in self.pipes_and_weights])


# -- one source, several children ------------------------------------------------------------------
class _Container(IterDataPipe):
    """State shared by the children of fork/demux; each child iterates through it."""

    def __init__(self, main_datapipe, num_instances, buffer_size, what):
        self.main_datapipe = main_datapipe
        self.num_instances = num_instances
        self.buffer_size = buffer_size
        if buffer_size < 0:
            warnings.warn(f"Unlimited buffer size is set for `{what}`, please be aware of OOM "
                          f"at random places", UserWarning, stacklevel=user_stacklevel())
        self.reset()

    def reset(self) -> None:
        self._source = None
        self._child_stop = [True] * self.num_instances

    def _start_source(self):
        self._source = iter(self.main_datapipe)
        self._child_stop = [False] * self.num_instances

    def _stop_child(self, instance_id):
        self._child_stop[instance_id] = True
        if all(self._child_stop):
            self._source = None

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k in ("main_datapipe", "num_instances", "buffer_size", "copy_fn",
                          "classifier_fn", "drop_none", "_valid_iterator_id")}
        hook = IterDataPipe.getstate_hook
        return hook(state) if hook is not None else state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.reset()


class _ForkContainer(_Container):
    def __init__(self, datapipe, num_instances, buffer_size, copy):
        if copy is None:
            self.copy_fn = _no_copy
        elif copy == "shallow":
            self.copy_fn = copymodule.copy
        elif copy == "deep":
            self.copy_fn = copymodule.deepcopy
        else:
            raise ValueError(f"Unknown copy method `{copy}` requested, choose one of None, "
                             f"`shallow` or `deep`.")
        super().__init__(datapipe, num_instances, buffer_size, "fork")

    def reset(self) -> None:
        super().reset()
        self.buffer = deque()
        self.offset = 0  # global index of buffer[0]
        self.positions = [0] * self.num_instances
        self.end = None

    def is_every_instance_exhausted(self) -> bool:
        return self.end is not None and all(self._child_stop)

    def get_length_by_instance(self, instance_id):
        return len(self.main_datapipe)

    def get_next_element_by_instance(self, instance_id):
        if self._source is None and self._child_stop[instance_id]:
            self._start_source()
        try:
            while True:
                pos = self.positions[instance_id]
                if pos < self.offset + len(self.buffer):
                    item = self.buffer[pos - self.offset]
                elif self.end is not None and pos >= self.end:
                    return
                else:
                    try:
                        item = next(self._source)
                    except StopIteration:
                        self.end = pos
                        return
                    self.buffer.append(item)
                self.positions[instance_id] = pos + 1
                slowest = min(self.positions)
                while self.offset < slowest and self.buffer:
                    self.buffer.popleft()
                    self.offset += 1
                if 0 <= self.buffer_size < len(self.buffer):
                    raise BufferError(f"ForkerIterDataPipe buffer overflow, buffer size "
                                      f"{self.buffer_size} is insufficient.")
                yield self.copy_fn(item)
        finally:
            self._stop_child(instance_id)


def _no_copy(x):
    return x


class _DemuxContainer(_Container):
    def __init__(self, datapipe, num_instances, classifier_fn, drop_none, buffer_size):
        self.classifier_fn = classifier_fn
        self.drop_none = drop_none
        super().__init__(datapipe, num_instances, buffer_size, "demux")

    def reset(self) -> None:
        super().reset()
        self.child_buffers = [deque() for _ in range(self.num_instances)]
        self.buffer_usage = 0
        self.exhausted = False

    def is_every_instance_exhausted(self) -> bool:
        return self.exhausted and all(self._child_stop)

    def get_length_by_instance(self, instance_id):
        raise TypeError(f"{type(self).__name__} children don't have valid length")

    def _find_next(self, instance_id):
        while True:
            value = next(self._source)
            target = self.classifier_fn(value)
            if target is None and self.drop_none:
                StreamWrapper.close_streams(value)
                continue
            if target is None or not 0 <= target < self.num_instances:
                raise ValueError(f"Output of the classification fn should be between 0 and "
                                 f"{self.num_instances - 1}. {target} is returned.")
            if target == instance_id:
                return value
            self.child_buffers[target].append(value)
            self.buffer_usage += 1
            if 0 <= self.buffer_size < self.buffer_usage:
                raise BufferError(f"DemultiplexerIterDataPipe buffer overflow, buffer size "
                                  f"{self.buffer_size} is insufficient.")

    def get_next_element_by_instance(self, instance_id):
        if self._source is None and self._child_stop[instance_id]:
            self._start_source()
            self.exhausted = False
        try:
            mine = self.child_buffers[instance_id]
            while True:
                if mine:
                    self.buffer_usage -= 1
                    yield mine.popleft()
                elif self.exhausted or self._source is None:
                    return
                else:
                    try:
                        value = self._find_next(instance_id)
                    except StopIteration:
                        self.exhausted = True
                        return
                    yield value
        finally:
            self._stop_child(instance_id)


class _ChildDataPipe(IterDataPipe):
    """One output of fork/demux: iterates through the shared container."""

    _is_child_datapipe = True

    def __init__(self, main_datapipe, instance_id) -> None:
        self.main_datapipe = main_datapipe
        self.instance_id = instance_id

    def __iter__(self):
        return self.main_datapipe.get_next_element_by_instance(self.instance_id)

    def __len__(self):
        return self.main_datapipe.get_length_by_instance(self.instance_id)

    def _start_child_iteration(self) -> int:
        main = self.main_datapipe
        if main._valid_iterator_id is None:
            main._valid_iterator_id = 0
        elif main._valid_iterator_id == self._valid_iterator_id:
            main._valid_iterator_id += 1
            if not main.is_every_instance_exhausted():
                warnings.warn("Some child DataPipes are not exhausted when __iter__ is called. "
                              "We are resetting the buffer and each child DataPipe will read "
                              "from the start again.", UserWarning, stacklevel=user_stacklevel())
            main.reset()
        self._valid_iterator_id = main._valid_iterator_id
        return self._valid_iterator_id

    def _child_iterator_is_current(self, iterator_id) -> bool:
        return iterator_id == self._valid_iterator_id == self.main_datapipe._valid_iterator_id


def _num_instances(num_instances):
    if num_instances < 1:
        raise ValueError(f"Expected `num_instances` larger than 0, but {num_instances} is found")


@functional_datapipe("fork")
class ForkerIterDataPipe(IterDataPipe):
    """``num_instances`` pipes that each yield every source item (functional name: ``fork``).

    Items read by one child and not yet by another wait in a buffer of at most ``buffer_size``
    (-1: unbounded); ``copy`` ('shallow'/'deep') gives each child its own copy.
    """

    def __new__(cls, datapipe, num_instances: int, buffer_size: int = 1000, copy=None):
        _num_instances(num_instances)
        if num_instances == 1:
            return datapipe
        container = _ForkContainer(datapipe, num_instances, buffer_size, copy)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]


@functional_datapipe("demux")
class DemultiplexerIterDataPipe(IterDataPipe):
    """Route each item to child ``classifier_fn(item)`` (functional name: ``demux``)."""

    def __new__(cls, datapipe, num_instances: int, classifier_fn, drop_none: bool = False,
                buffer_size: int = 1000):
        _num_instances(num_instances)
        _check_unpickable_fn(classifier_fn)
        container = _DemuxContainer(datapipe, num_instances, classifier_fn, drop_none,
                                    buffer_size)
        return [_ChildDataPipe(container, i) for i in range(num_instances)]


class _RoundRobin:
    def __init__(self, num_instances):
        self.num_instances = num_instances

    def __call__(self, indexed):
        return indexed[0] % self.num_instances


def _drop_index(indexed):
    return indexed[1]


@functional_datapipe("round_robin_demux")
class RoundRobinDemultiplexerIterDataPipe(IterDataPipe):
    """Item ``i`` goes to child ``i % num_instances``."""

    def __new__(cls, datapipe, num_instances: int, buffer_size: int = 1000):
        _num_instances(num_instances)
        if num_instances == 1:
            return datapipe
        children = datapipe.enumerate().demux(num_instances, _RoundRobin(num_instances),
                                              buffer_size=buffer_size)
        return [child.map(_drop_index) for child in children]


@functional_datapipe("unzip")
class UnZipperIterDataPipe(IterDataPipe):
    """Split a pipe of sequences into one pipe per position (skipping ``columns_to_skip``)."""

    def __new__(cls, source_datapipe, sequence_length: int, buffer_size: int = 1000,
                columns_to_skip=None):
        columns = unzip_columns(sequence_length, columns_to_skip, "UnZipperIterDataPipe")
        children = source_datapipe.fork(len(columns), buffer_size=buffer_size)
        if len(columns) == 1:
            children = [children]
        return [child.map(operator.itemgetter(col)) for child, col in zip(children, columns)]


# -- joining by key -------------------------------------------------------------------------------
@functional_datapipe("zip_with_iter")
class IterKeyZipperIterDataPipe(IterDataPipe):
    """Pair each source item with the ``ref_datapipe`` item of the same key (buffering the
    reference pipe's items until the key shows up)."""

    def __init__(self, source_datapipe, ref_datapipe, key_fn, ref_key_fn=None,
                 keep_key: bool = False, buffer_size: int = 10000, merge_fn=None) -> None:
        if not isinstance(ref_datapipe, IterDataPipe):
            raise TypeError(f"ref_datapipe must be a IterDataPipe, but its type is "
                            f"{type(ref_datapipe)} instead.")
        if buffer_size is not None and buffer_size <= 0:
            raise ValueError(f"'buffer_size' is required to be either None or a positive "
                             f"integer, got {buffer_size}.")
        _check_unpickable_fn(key_fn)
        if ref_key_fn is not None:
            _check_unpickable_fn(ref_key_fn)
        if merge_fn is not None:
            _check_unpickable_fn(merge_fn)
        self.source_datapipe = source_datapipe
        self.ref_datapipe = ref_datapipe
        self.key_fn = key_fn
        self.ref_key_fn = key_fn if ref_key_fn is None else ref_key_fn
        self.keep_key = keep_key
        self.merge_fn = merge_fn
        self.buffer_size = buffer_size

    def __iter__(self):
        buffer = OrderedDict()
        ref_it = iter(self.ref_datapipe)
        warned = False
        for data in self.source_datapipe:
            key = self.key_fn(data)
            while key not in buffer:
                try:
                    ref_data = next(ref_it)
                except StopIteration:
                    raise BufferError(f"No matching key can be found from reference DataPipe "
                                      f"for the data {data}. Please consider increasing the "
                                      f"buffer size.") from None
                ref_key = self.ref_key_fn(ref_data)
                if ref_key in buffer:
                    raise ValueError(f"Duplicate key is found in reference DataPipe: {ref_key!r}")
                if self.buffer_size is not None and len(buffer) > self.buffer_size:
                    if not warned:
                        warned = True
                        warnings.warn("Buffer reaches the upper limit, so reference key-data "
                                      "pair begins to be removed from buffer in FIFO order. "
                                      "Please consider increase buffer size.",
                                      stacklevel=user_stacklevel())
                    buffer.popitem(last=False)
                buffer[ref_key] = ref_data
            ref = buffer.pop(key)
            res = self.merge_fn(data, ref) if self.merge_fn else (data, ref)
            yield (key, res) if self.keep_key else res

    def __len__(self):
        return len(self.source_datapipe)


@functional_datapipe("zip_with_map")
class MapKeyZipperIterDataPipe(IterDataPipe):
    """Pair each source item with ``map_datapipe[key_fn(item)]``."""

    def __init__(self, source_iterdatapipe, map_datapipe, key_fn, merge_fn=None,
                 keep_key: bool = False) -> None:
        if not isinstance(map_datapipe, MapDataPipe):
            raise TypeError(f"map_datapipe must be a MapDataPipe, but its type is "
                            f"{type(map_datapipe)} instead.")
        _check_unpickable_fn(key_fn)
        if merge_fn is not None:
            _check_unpickable_fn(merge_fn)
        self.source_iterdatapipe = source_iterdatapipe
        self.map_datapipe = map_datapipe
        self.key_fn = key_fn
        self.merge_fn = merge_fn
        self.keep_key = keep_key

    def __iter__(self):
        for item in self.source_iterdatapipe:
            key = self.key_fn(item)
            try:
                map_item = self.map_datapipe[key]
            except (KeyError, IndexError):
                raise KeyError(f"key_fn maps {item} to {key}, which is not a valid key in the "
                               f"given MapDataPipe.") from None
            res = self.merge_fn(item, map_item) if self.merge_fn else (item, map_item)
            yield (key, res) if self.keep_key else res

    def __len__(self):
        return len(self.source_iterdatapipe)
