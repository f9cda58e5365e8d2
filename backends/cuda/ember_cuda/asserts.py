"""Device-side asserts: value checks found on the GPU, raised at the next synchronization.

A kernel's value check (``ember.kit.value_checks``: an index out of bounds, a class target out of
range, a probability outside [0, 1]) arrives here as two 0-d device arrays, *failed* and the value
to name, computed on the current stream. Reading them back would make every such op wait for the
GPU, so instead they are copied into a slot of a small record buffer on the device (two tiny
copies, queued on the same stream) and the op's name and message are kept on the host, as
PyTorch's device-side asserts keep theirs in the kernel. Each stream has its own buffers (so a
stream's records are read in that stream's order); a buffer holds ``SLOTS`` checks, and a full
one is followed by another.

The records are read where the host waits anyway: before a blocking copy to the host
(``.item()``, ``.cpu()``) the stream's records are queued to pinned memory behind the stream's
work, so the one wait covers both; ``synchronize()`` (device, stream or event) does the same for
what it waits on. Any failure raises the op's own exception with its message, naming the op
and that it was found on the device; several failures are all reported.
"""
from __future__ import annotations

import threading

import numpy as np

SLOTS = 256
#: past this many buffers of one stream unread, the next check reads them (one wait), so a loop
#: that never synchronizes cannot grow them without bound
MAX_BUFFERS = 64


class _Buffer:
    __slots__ = ("array", "entries")

    def __init__(self, array):
        self.array = array      # (SLOTS, 2) int64: failed flag, value
        self.entries = []       # (slot, op, exc, message) in slot order


class _Pending:
    """What a stream has recorded and not yet read."""

    __slots__ = ("stream", "buffers")

    def __init__(self, stream):
        self.stream = stream
        self.buffers = []


class DeviceAsserts:
    """The records of one backend (all devices and streams)."""

    def __init__(self, backend):
        self._be = backend
        self._pending = {}     # (device, stream ptr) -> _Pending
        self._lock = threading.Lock()

    def record(self, op, bad, value, exc, message) -> None:
        be = self._be
        api, xp = be._api, be.xp
        stream = api.current_stream()
        key = (api.get_device(), stream.ptr)
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                pending = self._pending[key] = _Pending(stream)
            buffers = pending.buffers
            if not buffers or len(buffers[-1].entries) == SLOTS:
                if len(buffers) >= MAX_BUFFERS:
                    full = True
                else:
                    buffers.append(_Buffer(xp.zeros((SLOTS, 2), dtype=np.int64)))
                    full = False
            else:
                full = False
        if full:
            self.check(key[0], stream)
            return self.record(op, bad, value, exc, message)
        buf = buffers[-1]
        slot = len(buf.entries)
        buf.array[slot, 0] = bad
        if value is not None:
            buf.array[slot, 1] = value
        buf.entries.append((slot, op, exc, message))

    # -- reading them back ------------------------------------------------------------------------
    def _take(self, device, stream=None):
        """Detach the pending records of ``stream`` (every stream of ``device`` when None)."""
        with self._lock:
            keys = [k for k in self._pending if k[0] == device and
                    (stream is None or k[1] == stream.ptr)]
            return [self._pending.pop(k) for k in keys]

    def prefetch(self, device, stream=None):
        """Queue the copies of the pending records to the host behind their streams' work; the
        token is read by ``verify`` once the host has waited for those streams."""
        taken = self._take(device, stream)
        if not taken:
            return None
        api = self._be._api
        token = []
        with api.on_device(device):
            for pending in taken:
                for buf in pending.buffers:
                    n = len(buf.entries)
                    if not n:
                        continue
                    host = self._be._pinned.empty((n, 2), np.int64)
                    api.to_host(buf.array[:n], out=host, stream=pending.stream, blocking=False)
                    self._be._pinned.record(host, pending.stream)
                    token.append((host, buf.entries))
        return token

    def verify(self, token, device_name) -> None:
        """Raise what the records read back say failed (the host has waited for them)."""
        if not token:
            return
        failures = []
        for host, entries in token:
            for slot, op, exc, message in entries:
                if host[slot, 0]:
                    failures.append((op, exc, message.format(value=int(host[slot, 1]))))
        if not failures:
            return
        op, exc, text = failures[0]
        full = (f"{text} (found on the device by {op} on {device_name} and raised at the next "
                f"synchronization)")
        if len(failures) > 1:
            full += "; later failures: " + "; ".join(f"{t} (in {o})" for o, _, t in failures[1:])
        raise exc(full)

    def check(self, device, stream=None) -> None:
        """Read and raise the records of ``stream`` (or the device) now: one wait."""
        token = self.prefetch(device, stream)
        if token is None:
            return
        api = self._be._api
        if stream is None:
            api.synchronize(device)
        else:
            api.stream_synchronize(stream)
        self.verify(token, f"{self._be.name}:{device}")
