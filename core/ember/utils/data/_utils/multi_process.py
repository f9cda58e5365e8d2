"""The multi-process DataLoader iterator.

The main process sends ``(task index, sampler indices)`` to the workers round-robin, keeping
``prefetch_factor * num_workers`` tasks outstanding, and returns results in task order
(``in_order=False``: as they arrive). While it waits it watches the result queue and every
live worker's process sentinel together, so a worker that dies is reported at once instead of
being waited for. Shutdown tells workers to exit, joins them (terminating stragglers) and
unlinks shared-memory segments no one received.
"""
from __future__ import annotations

import functools
import itertools
import multiprocessing
import pickle
import queue
import signal
import threading
import time
from multiprocessing import connection as mp_connection

from ..dataloader import _BaseDataLoaderIter, _DatasetKind
from ..datapipes.datapipe import IterDataPipe, MapDataPipe
from ..graph_settings import apply_sharding, seed_datapipe_graph
from . import transfer
from .pin_memory import start_pin_thread
from .worker import (MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, _IterableDatasetStopIteration,
                     _ResumeIteration, _worker_loop, get_worker_info)


def _sharding_worker_init_fn(worker_init_fn, world_size, rank_id, worker_id):
    """Shard DataPipes across workers of all ranks, then run the user's worker_init_fn."""
    info = get_worker_info()
    total = info.num_workers * world_size
    global_id = worker_id * world_size + rank_id
    apply_sharding(info.dataset, total, global_id)
    if worker_init_fn is not None:
        worker_init_fn(worker_id)


def _describe_exit(process):
    code = process.exitcode
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (a bus error: shared memory may be exhausted)" if name == "SIGBUS" else ""
        return f"killed by {name}{hint}"
    return f"exit code {code}"


def _find_unpicklable(obj, path, depth=0):
    """A readable ``path = value`` for the first thing inside ``obj`` pickle refuses."""
    try:
        pickle.dumps(obj)
        return None
    except Exception:  # noqa: BLE001 - any pickling failure is what we are looking for
        pass
    if depth < 6:
        if isinstance(obj, functools.partial):
            items = [("func", obj.func)] + [(f"args[{i}]", a) for i, a in enumerate(obj.args)]
        elif isinstance(obj, dict):
            items = [(f"[{k!r}]", v) for k, v in obj.items()]
        elif isinstance(obj, (list, tuple)):
            items = [(f"[{i}]", v) for i, v in enumerate(obj)]
        else:
            state = getattr(obj, "__dict__", None)
            items = [(f".{k}", v) for k, v in state.items()] if isinstance(state, dict) else []
        for key, value in items:
            found = _find_unpicklable(value, path + key, depth + 1)
            if found is not None:
                return found
    text = repr(obj)
    return f"{path} = {text if len(text) < 80 else text[:77] + '...'}"


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise ValueError(f"prefetch_factor must be > 0 with worker processes, got "
                             f"{self._prefetch_factor}")
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._worker_init_fn = loader.worker_init_fn
        if isinstance(self._dataset, (IterDataPipe, MapDataPipe)):
            self._worker_init_fn = functools.partial(_sharding_worker_init_fn,
                                                     self._worker_init_fn, self._world_size,
                                                     self._rank)
        self._segment_prefix = transfer.new_prefix()
        self._receiver = transfer.Receiver(self._num_workers)
        self._worker_result_queue = context.Queue()
        self._shutdown = False
        self._failure = None
        self._workers_done_event = context.Event()
        self._index_queues = []
        self._workers = []
        try:
            for i in range(self._num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()
                w = context.Process(
                    target=_worker_loop,
                    args=(self._dataset_kind == _DatasetKind.Iterable, self._dataset, index_queue,
                          self._worker_result_queue, self._workers_done_event,
                          self._auto_collation, self._collate_fn, self._drop_last,
                          self._base_seed, self._worker_init_fn, i, self._num_workers,
                          self._persistent_workers, self._shared_seed, self._segment_prefix,
                          seed_datapipe_graph))
                w.daemon = True
                self._index_queues.append(index_queue)
                try:
                    w.start()
                except (TypeError, AttributeError, pickle.PicklingError) as e:
                    self._index_queues.pop()
                    raise self._pickling_error(e, context) from e
                self._workers.append(w)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._pin_memory_thread = None
            self._task_info = {}
            self._shutdown_workers()
            raise
        if self._pin_memory:
            self._pin_memory_thread_done_event = threading.Event()
            self._pin_memory_thread, self._data_queue = start_pin_thread(
                self._worker_result_queue, self._pin_memory_thread_done_event,
                self._decode, MP_STATUS_CHECK_INTERVAL / 50)
        else:
            self._pin_memory_thread = None
            self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    def _pickling_error(self, error, context):
        method = context.get_start_method()
        for what, obj in (("dataset", self._dataset), ("collate_fn", self._collate_fn),
                          ("worker_init_fn", self._worker_init_fn)):
            culprit = _find_unpicklable(obj, what)
            if culprit is not None:
                break
        else:
            culprit = "the worker arguments"
        msg = (f"DataLoader: cannot send {culprit} to worker processes started with "
               f"'{method}', which pickles them ({type(error).__name__}: {error}). Use "
               f"module-level functions or functools.partial instead of lambdas and local "
               f"functions, or multiprocessing_context='fork' where available.")
        try:
            return type(error)(msg)
        except Exception:  # noqa: BLE001 - an error type with another signature
            return pickle.PicklingError(msg)

    # -- epochs --------------------------------------------------------------------------------
    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_ResumeIteration(self._shared_seed))
            remaining = self._num_workers
            while remaining > 0:
                idx, data = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # -- receiving -----------------------------------------------------------------------------
    def _decode(self, data):
        return self._receiver.decode(data) if transfer.is_message(data) else data

    def _check_workers(self, cause=None):
        failed = [(i, w) for i, w in enumerate(self._workers)
                  if self._workers_status[i] and not w.is_alive()]
        if not failed:
            return
        for i, _ in failed:
            self._mark_worker_as_unavailable(i)
        pids = ", ".join(str(w.pid) for _, w in failed)
        details = "; ".join(f"worker {i} {_describe_exit(w)}" for i, w in failed)
        self._failure = f"DataLoader worker (pid(s) {pids}) exited unexpectedly ({details})"
        # the epoch cannot complete: the other workers are stopped now, not when the iterator
        # is collected (they would hold their memory and the dataset's files until then)
        self._shutdown_workers()
        raise RuntimeError(self._failure) from cause

    def _try_get_data(self, timeout):
        if self._pin_memory_thread is not None:
            try:
                return True, self._data_queue.get(timeout=min(timeout, 0.1))
            except queue.Empty:
                self._check_workers()
                if not self._pin_memory_thread.is_alive():
                    raise RuntimeError("Pin memory thread exited unexpectedly") from None
                return False, None
        reader = self._worker_result_queue._reader
        sentinels = [w.sentinel for i, w in enumerate(self._workers) if self._workers_status[i]]
        ready = mp_connection.wait([reader] + sentinels, timeout)
        if reader in ready:
            try:
                return True, self._worker_result_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                pass
        self._check_workers()
        return False, None

    def _get_data(self):
        if self._timeout > 0:
            deadline = time.monotonic() + self._timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                success, data = self._try_get_data(left)
                if success:
                    return data
        while True:
            success, data = self._try_get_data(MP_STATUS_CHECK_INTERVAL)
            if success:
                return data

    def _next_data(self):
        if self._failure is not None:  # a worker died: the iterator stays failed
            raise RuntimeError(self._failure)
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable and \
                    isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        max_tasks = self._prefetch_factor * self._num_workers
        for _ in range(self._num_workers):
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order or self._workers_num_tasks[worker_queue_idx] < \
                        max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_queue_idx].put(
            (self._send_idx, index, self._receiver.take_returns(worker_queue_idx)))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_idx):
        self._workers_num_tasks[worker_idx] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        if self._pin_memory_thread is None:
            data = self._decode(data)
        return data

    # -- shutdown ------------------------------------------------------------------------------
    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self, join_timeout=MP_STATUS_CHECK_INTERVAL):
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        deadline = time.monotonic() + join_timeout
        try:
            if self._pin_memory_thread is not None:
                self._pin_memory_thread_done_event.set()
                self._pin_memory_thread.join(timeout=MP_STATUS_CHECK_INTERVAL)
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for w in self._workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=MP_STATUS_CHECK_INTERVAL)
            self._discard_undelivered()

    def _discard_undelivered(self):
        self._task_info = {}
        try:
            while True:
                self._worker_result_queue.get_nowait()
        except (queue.Empty, OSError, EOFError, ValueError):
            pass
        self._worker_result_queue.cancel_join_thread()
        self._worker_result_queue.close()
        self._receiver.close()
        # Workers have exited; any segment still named was never attached here.
        transfer.cleanup_segments(self._segment_prefix)

    def __del__(self):
        # Collected as part of a reference cycle, the queues' own finalizers may already have
        # stopped their feeder threads, so the exit message may never reach the workers: wait
        # briefly, then terminate (workers hold nothing the main process needs back).
        try:
            self._shutdown_workers(join_timeout=0.5)
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn modules down
            pass
