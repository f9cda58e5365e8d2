"""Kernel timing for ``ember.profiler``: the device activity of a profile.

Every command queue is created with profiling enabled, and every launcher notes the event of
the command it queues in ``state.last[queue]``. While the profiler times kernels, ``state.last``
is a ``TimedLaunches`` dict that also logs (owner, queue, event, host time) for each command:
``owner()`` is the profiler's innermost open op on the launching thread. At stop the queues are
drained and each event's device timestamps are moved onto the host clock
(``time.perf_counter_ns``) through the host time the command was queued at. Devices first used
while profiling are not timed.
"""
from __future__ import annotations

import time

from ember import device


class TimedLaunches(dict):
    __slots__ = ("log", "owner")

    def __init__(self, items, log, owner):
        super().__init__(items)
        self.log = log
        self.owner = owner

    def __setitem__(self, queue, event):
        super().__setitem__(queue, event)
        self.log.append((self.owner(), queue, event, time.perf_counter_ns()))


def start(backend, owner):
    """Begin logging the commands queued on every device in use."""
    log = []
    for st in list(backend._devices._states.values()):
        st.last = TimedLaunches(st.last, log, owner)
    backend._timing_log = log


def stop(backend):
    """Stop logging; the logged kernels and copies as the profiler's kernel records."""
    import pyopencl as cl
    log = getattr(backend, "_timing_log", None)
    backend._timing_log = None
    if log is None:
        return []
    queue_names = {}
    for st in list(backend._devices._states.values()):
        if isinstance(st.last, TimedLaunches):
            st.last = dict(st.last)
        for k, s in enumerate(st.streams):
            queue_names.setdefault(s.queue, (st.name, f"stream {k}"))
        for s in st.streams:
            s.queue.finish()
    kinds = {cl.command_type.NDRANGE_KERNEL: "kernel", cl.command_type.COPY_BUFFER: "memcpy",
             cl.command_type.WRITE_BUFFER: "memcpy HtoD", cl.command_type.READ_BUFFER:
             "memcpy DtoH", cl.command_type.FILL_BUFFER: "memset"}
    out = []
    for owner, queue, event, host_ns in log:
        kind = kinds.get(event.command_type)
        if kind is None:   # markers and barriers take no device time
            continue
        prof = event.profile
        queued, t0, t1 = prof.queued, prof.start, prof.end
        dev_name, stream = queue_names.get(queue, ("opencl:0", "stream ?"))
        # named after the op that queued it, kept apart from the op's own row
        name = f"{owner.name} {kind}" if owner is not None else kind
        out.append({"owner": owner, "name": name, "device": device(dev_name),
                    "stream": stream, "start_ns": host_ns + (t0 - queued),
                    "end_ns": host_ns + (t1 - queued)})
    return out
