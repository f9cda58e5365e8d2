"""The DataLoader worker process: its loop, ``WorkerInfo``/``get_worker_info`` and the
``ExceptionWrapper`` that carries a worker's traceback to the main process."""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
import numpy as np
import ember

from . import transfer
from .fetch import create_fetcher

# How often a worker waiting for work checks that its parent is still alive, and how often the
# main process checks its workers when no batch is ready (seconds).
MP_STATUS_CHECK_INTERVAL = 5.0

_worker_info = None


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed``
    (this worker's seed: base seed + id) and ``dataset`` (this worker's copy)."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{type(self).__name__}({items})"


def get_worker_info():
    """The current worker's ``WorkerInfo``, or None in the main process.

    Use it in ``IterableDataset.__iter__`` or ``worker_init_fn`` to give each worker its own
    share of the data (each worker has its own copy of the dataset).
    """
    return _worker_info


class KeyErrorMessage(str):
    """KeyError repr()s its message; this keeps the traceback text readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception with its traceback text, to be re-raised in another process."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - an exception type that needs other arguments
            raise RuntimeError(msg) from None
        raise exception


class _IterableDatasetStopIteration:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at a new epoch: restart the dataset iterator (re-seeding
    DataPipes with ``seed``)."""

    def __init__(self, seed=None):
        self.seed = seed


def _seed_worker(seed, base_seed, worker_id):

    random.seed(seed)
    ember.manual_seed(seed)
    state = np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32])
    np.random.seed(state.generate_state(4))


def _worker_loop(is_iterable, dataset, index_queue, data_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                 persistent_workers, shared_seed, segment_prefix, reseed=None):
    """A worker process: fetch what the index queue asks for. ``reseed(dataset, seed)`` seeds
    the dataset's random parts when the shared seed changes (a DataPipe graph's: the loader
    passes graph_settings.seed_datapipe_graph)."""
    global _worker_info
    try:
        seed = base_seed + worker_id
        _seed_worker(seed, base_seed, worker_id)
        if reseed is not None:
            reseed(dataset, shared_seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:  # noqa: BLE001 - reported with the first batch
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        sender = transfer.Sender(segment_prefix, worker_id)
        iteration_end = False
        parent = os.getppid()
        while True:
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent or done_event.is_set():
                    break  # the main process is gone, or shut down without reaching us
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if reseed is not None:
                    reseed(dataset, r.seed)
                fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn,
                                         drop_last)
                continue
            if r is None:  # told to exit
                break
            if done_event.is_set() or iteration_end:
                continue  # drain outstanding indices after the end
            idx, index, returned_slots = r
            if returned_slots:
                sender.release(returned_slots)
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:  # noqa: BLE001 - sent to the main process
                    if isinstance(e, StopIteration) and is_iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(
                            where=f"in DataLoader worker process {worker_id}")
            if not isinstance(data, (ExceptionWrapper, _IterableDatasetStopIteration)):
                try:
                    data = sender.encode(data)
                except Exception:  # noqa: BLE001 - e.g. an unpicklable batch
                    data = ExceptionWrapper(
                        where=f"in DataLoader worker process {worker_id} (sending the batch)")
            data_queue.put((idx, data))
            del data
        sender.close()
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
