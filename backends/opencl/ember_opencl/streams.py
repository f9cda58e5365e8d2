"""Streams are OpenCL command queues; events are markers enqueued on them.

Every queue is in-order with profiling enabled (so ``Event.elapsed_time`` reads the markers'
timestamps). Like PyTorch's CUDA streams, ``ember.opencl.Stream()`` hands out queues from a small
per-device pool, so a program that makes streams in a loop does not make queues without bound,
and the allocator knows every queue a freed block may still be used on.
"""
from __future__ import annotations

from ember.runtime import EventBase, StreamBase

POOL_SIZE = 8   # queues per device besides the default one


def _profiling_queue(state):
    import pyopencl as cl
    return cl.CommandQueue(state.context, state.device,
                           properties=cl.command_queue_properties.PROFILING_ENABLE)


class Stream(StreamBase):
    """An in-order OpenCL command queue of one device."""

    def __init__(self, backend, device_index=None, priority=0, _state=None):
        state = _state if _state is not None else backend._devices.state(device_index)
        self.backend = backend
        self.device_index = state.index
        self.priority = priority
        self._state = state
        with state.lock:
            if _state is not None or len(state.streams) <= POOL_SIZE:
                self.queue = _profiling_queue(state)
                state.streams.append(self)
            else:  # reuse the pool round-robin, as PyTorch does with CUDA streams
                state.pool_next = state.pool_next % POOL_SIZE + 1
                self.queue = state.streams[state.pool_next].queue

    def query(self) -> bool:
        """True when all work queued so far has finished (never blocks): the queue is in order,
        so that is when the last command queued on it (which the launchers note) has."""
        import pyopencl as cl
        last = self._state.last.get(self.queue)
        if last is None:
            return True
        self.queue.flush()
        return last.command_execution_status == cl.command_execution_status.COMPLETE

    def synchronize(self) -> None:
        self.queue.finish()

    def wait_event(self, event) -> None:
        """Later work on this stream starts after ``event`` (no host blocking)."""
        import pyopencl as cl
        if event._event is None or event._queue is self.queue:
            return  # an unrecorded event is complete; an in-order queue orders itself
        event._queue.flush()  # the other queue must reach the device, or we would wait forever
        self._state.last[self.queue] = cl.enqueue_barrier(self.queue, wait_for=[event._event])

    def __eq__(self, other):
        return isinstance(other, Stream) and other.queue is self.queue

    def __hash__(self):
        return hash(id(self.queue))

    def __repr__(self):
        return f"<ember.opencl.Stream device={self.device} queue={id(self.queue):#x}>"


class Event(EventBase):
    """A marker on a queue: complete when everything queued before it is. ``record``/``wait``
    without a stream and the checks of ``elapsed_time`` come from ``EventBase``."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        super().__init__(enable_timing, blocking, interprocess)
        self._event = None
        self._queue = None

    @property
    def is_recorded(self) -> bool:
        return self._event is not None

    def _record(self, stream) -> None:
        import pyopencl as cl
        self._queue = stream.queue
        self._event = stream._state.last[stream.queue] = cl.enqueue_marker(stream.queue)

    def query(self) -> bool:
        import pyopencl as cl
        if self._event is None:
            return True
        self._queue.flush()
        return self._event.command_execution_status == cl.command_execution_status.COMPLETE

    def synchronize(self) -> None:
        if self._event is not None:
            self._event.wait()

    def _elapsed_ms(self, end) -> float:
        return (end._event.profile.end - self._event.profile.end) / 1e6
