"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

The constructor follows torch's argument rules and errors; iteration creates a
``_SingleProcessDataLoaderIter`` (``num_workers=0``) or a ``_MultiProcessingDataLoaderIter``
(``_utils/multi_process.py``). Random order comes from ember's generators: the sampler's
``generator`` (or ember's default generator, seeded by ``ember.manual_seed``), which also seeds
the workers and every random DataPipe of an IterDataPipe dataset.
"""
from __future__ import annotations

import multiprocessing
import os
import warnings
import ember

from . import _utils
from ._utils.collate import default_collate, default_convert
from ._utils.fetch import create_fetcher
from ._utils.pin_memory import pin_memory as _pin
from ._utils.seeds import draw_seed
from .datapipes.datapipe import IterDataPipe, MapDataPipe
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .graph_settings import apply_random_seed, apply_sharding, apply_shuffle_settings
from ..._warn import user_stacklevel

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

get_worker_info = _utils.worker.get_worker_info


class _DatasetKind:
    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """What an IterableDataset is "sampled" with: None forever (the dataset decides the end)."""

    def __iter__(self):
        while True:
            yield None


def _distributed():
    """``ember.distributed`` if it exists and has a process group, else None."""
    dist = ember.distributed
    try:
        if dist.is_available() and dist.is_initialized():
            return dist
    except AttributeError:
        return None
    return None


def _get_distributed_settings():
    dist = _distributed()
    if dist is None:
        return 1, 0
    return dist.get_world_size(), dist.get_rank()


def _share_dist_seed(generator):
    """A seed drawn from ``generator``; with a process group, rank 0's seed on every rank."""
    seed = draw_seed(generator)
    dist = _distributed()
    if dist is not None and dist.get_world_size() > 1:
        t = ember.tensor(seed, dtype=ember.int64)
        dist.broadcast(t, src=0)
        seed = int(t.item())
    return seed


_FROZEN_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                      "persistent_workers")


class DataLoader:
    """Iterate over ``dataset`` in batches (torch's ``DataLoader``; see torch's docs for each
    argument).

    ``num_workers > 0`` loads batches in that many worker processes (``multiprocessing``'s
    default start method, or ``multiprocessing_context``), ``prefetch_factor`` batches ahead per
    worker, returned in sampler order unless ``in_order=False``. A worker's exception is raised
    here with the worker's traceback; a worker that dies raises
    ``RuntimeError("DataLoader worker (pid(s) N) exited unexpectedly ...")`` instead of hanging;
    ``timeout`` > 0 bounds each wait for a batch. Batches come back through shared memory
    (see ``_utils/transfer.py``). ``pin_memory=True`` makes batches contiguous host buffers
    (no ember backend has page-locked memory; see ``_utils/pin_memory.py``).
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers option should be non-negative; use num_workers=0 to "
                             f"disable multiprocessing. (got num_workers={num_workers!r})")
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative (got timeout={timeout})")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError(f"prefetch_factor option should be non-negative (got "
                             f"prefetch_factor={prefetch_factor})")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers == 0 and timeout > 0:
            raise ValueError(f"timeout={timeout} needs worker processes (num_workers > 0): "
                             f"without workers batches load in the calling thread")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if isinstance(dataset, IterDataPipe):
                if shuffle is not None:
                    dataset = apply_shuffle_settings(dataset, shuffle=shuffle)
                    self.dataset = dataset
            elif shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError(f"sampler option is mutually exclusive with shuffle (got "
                             f"sampler={sampler} and shuffle={shuffle})")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    # -- settings ------------------------------------------------------------------------------
    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid = multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid:
                        raise ValueError(f"multiprocessing_context option should specify a "
                                         f"valid start method in {valid!r}, but got "
                                         f"multiprocessing_context={multiprocessing_context!r}")
                    multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
                if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                    raise TypeError(f"multiprocessing_context option should be a valid context "
                                    f"object or a string specifying the start method, but got "
                                    f"multiprocessing_context={multiprocessing_context}")
            else:
                raise ValueError(f"multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in _FROZEN_AFTER_INIT:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} "
                             f"is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    # -- iteration -----------------------------------------------------------------------------
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        # start-up: ~17 ms, num_workers > 0 only
        from ._utils.multi_process import _MultiProcessingDataLoaderIter
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else \
                    -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        """Warn (as torch does) when there are more workers than CPUs this process may use."""
        if not self.num_workers:
            return
        if hasattr(os, "sched_getaffinity"):
            try:
                suggested = len(os.sched_getaffinity(0))
            except OSError:
                suggested = os.cpu_count()
        else:
            suggested = os.cpu_count()
        if suggested is None or self.num_workers > suggested:
            detail = ("Our suggested max number of worker in current system is "
                      f"{suggested}, which is smaller than what this DataLoader is going to "
                      "create." if suggested else
                      "DataLoader is not able to compute a suggested max number of worker in "
                      "current system.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                          f"total. {detail} Please be aware that excessive worker creation might "
                          f"get DataLoader running slow or even freeze, lower the worker number "
                          f"to avoid potential slowness/freeze if necessary.",
                          stacklevel=user_stacklevel())


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._shared_seed = None
        if isinstance(self._dataset, IterDataPipe):
            self._shared_seed = _share_dist_seed(loader.generator)
            self._apply_datapipe_seed()
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._world_size, self._rank = _get_distributed_settings()
        self._pin_memory = loader.pin_memory
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = draw_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def _apply_datapipe_seed(self):

        rng = ember.Generator()
        rng.manual_seed(self._shared_seed)
        apply_random_seed(self._dataset, rng)

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        if isinstance(self._dataset, IterDataPipe):
            self._shared_seed = _share_dist_seed(loader.generator)
            self._apply_datapipe_seed()

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._dataset_kind == _DatasetKind.Iterable and \
                self._IterableDataset_len_called is not None and \
                self._num_yielded > self._IterableDataset_len_called:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker (see "
                        "get_worker_info()).")
            warnings.warn(msg, stacklevel=user_stacklevel())
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if isinstance(self._dataset, (IterDataPipe, MapDataPipe)):
            apply_sharding(self._dataset, self._world_size, self._rank)
        self._dataset_fetcher = create_fetcher(self._dataset_kind == _DatasetKind.Iterable,
                                               self._dataset, self._auto_collation,
                                               self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        data = self._dataset_fetcher.fetch(index)
        if self._pin_memory:
            data = _pin(data)
        return data
