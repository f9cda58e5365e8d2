"""Device memory: the core's caching allocator over ``pyopencl.Buffer``, made safe for streams.

A freed block goes back to the cache at once while the device has only its default queue: the
next user of the block is queued behind every earlier user on that same in-order queue. Once
other queues exist, a freed block may still be read by a kernel on another queue, so it waits in
``pending`` behind a marker on every queue and is only reused when those markers completed
(PyTorch solves the same problem with ``record_stream``; here it needs no user call).
"""
from __future__ import annotations

from ember.runtime import CachingAllocator, OutOfMemoryError
from ember.runtime import format_bytes as _fmt


class DeviceAllocator(CachingAllocator):
    def __init__(self, state):
        import pyopencl as cl
        ctx = state.context
        flags = cl.mem_flags.READ_WRITE

        def raw_alloc(nbytes):
            return cl.Buffer(ctx, flags, nbytes)

        def raw_free(buf):
            buf.release()  # OpenCL keeps it alive until the commands using it are done

        super().__init__(raw_alloc, raw_free, state.name, oom_errors=(MemoryError, cl.MemoryError),
                         limit_bytes=state.device.global_mem_size)
        self._state = state
        self._pending = []   # (buffer, size, [markers]) freed while other queues were live

    def allocate(self, nbytes):
        if nbytes > self._state.max_alloc:
            self._num_ooms += 1
            raise OutOfMemoryError(
                f"{self.device_name}: out of memory trying to allocate {_fmt(nbytes)}: a single "
                f"buffer may hold at most {_fmt(self._state.max_alloc)} on this device "
                f"(CL_DEVICE_MAX_MEM_ALLOC_SIZE); {_fmt(self._allocated)} allocated by tensors, "
                f"{_fmt(self._reserved)} reserved in total.")
        if self._pending:
            self._collect()
        return super().allocate(nbytes)

    def _release(self, handle, size, requested):
        state = self._state
        if len(state.streams) == 1:
            return super()._release(handle, size, requested)
        try:
            import pyopencl as cl
            markers = [cl.enqueue_marker(q) for q in state.queues()]
        except Exception:  # interpreter exit: the queues are gone, nothing can use the block
            return super()._release(handle, size, requested)
        with self._lock:
            self._allocated -= size
            self._pending.append((handle, size, markers))

    def _collect(self):
        import pyopencl as cl
        done = cl.command_execution_status.COMPLETE
        for q in self._state.queues():
            q.flush()  # markers only progress once their queue reached the device
        with self._lock:
            keep = []
            for item in self._pending:
                if all(m.command_execution_status == done for m in item[2]):
                    self._cache.setdefault(item[1], []).append(item[0])
                else:
                    keep.append(item)
            self._pending = keep

    def _empty_cache_locked(self):
        for buf, size, _ in self._pending:
            self._raw_free(buf)
            self._reserved -= size
        self._pending = []
        super()._empty_cache_locked()
