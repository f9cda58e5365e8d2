"""``pin_memory=True``: make batches device-ready on the host.

No ember backend allocates page-locked ("pinned") host memory: the CPU backend's memory is
numpy's and the OpenCL backend copies from any host array (through a private contiguous copy
it makes itself). What a device copy can use without an extra staging step is a *contiguous*
host buffer, so pinning here means: every CPU tensor of the batch is made contiguous (left as
is when it already is), on the pin thread when there are workers, so the main thread finds the
batch ready. Objects with a ``pin_memory()`` method (custom batch types) have it called, as in
torch. ``Tensor.is_pinned()`` stays False on every backend.
"""
from __future__ import annotations

import collections
import copy
import queue
import threading

from .worker import ExceptionWrapper
from ...._tensor import Tensor


def _pin_tensor(t):
    if t.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{t.device}' tensor of dtype {t.dtype}: only dense CPU "
                           f"tensors can be pinned")
    return t if t.is_contiguous() else t.contiguous()


def pin_memory(data, device=None):
    """torch's ``pin_memory`` walk over a batch (tensors, mappings, namedtuples, sequences)."""
    if isinstance(data, Tensor):
        return _pin_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: pin_memory(v, device) for k, v in data.items()})
                return clone
            return type(data)({k: pin_memory(v, device) for k, v in data.items()})
        except TypeError:
            return {k: pin_memory(v, device) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(sample, device) for sample in data))
    if isinstance(data, tuple):
        return [pin_memory(sample, device) for sample in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, item in enumerate(data):
                    clone[i] = pin_memory(item, device)
                return clone
            return type(data)([pin_memory(sample, device) for sample in data])
        except TypeError:
            return [pin_memory(sample, device) for sample in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


def _pin_memory_loop(in_queue, out_queue, done_event, decode, poll_interval):
    """Move (idx, batch) from the workers' queue to ``out_queue``, decoded and pinned."""
    while not done_event.is_set():
        try:
            r = in_queue.get(timeout=poll_interval)
        except queue.Empty:
            continue
        except (OSError, EOFError, ValueError):  # the queue was closed during shutdown
            break
        idx, data = r
        if not done_event.is_set() and not isinstance(data, ExceptionWrapper):
            try:
                data = pin_memory(decode(data))
            except Exception:  # noqa: BLE001 - re-raised by the main thread
                data = ExceptionWrapper(where="in pin memory thread for device 0")
        r = (idx, data)
        while not done_event.is_set():
            try:
                out_queue.put(r, timeout=poll_interval)
                break
            except queue.Full:
                continue


def start_pin_thread(in_queue, done_event, decode, poll_interval):
    out_queue = queue.Queue()
    thread = threading.Thread(target=_pin_memory_loop, daemon=True,
                              args=(in_queue, out_queue, done_event, decode, poll_interval))
    thread.start()
    return thread, out_queue
