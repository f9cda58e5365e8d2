"""Time on the simulated GPU: streams, events and the host as vector clocks.

Work is computed when it is issued (numpy is synchronous), but the simulator keeps track of who
*knows* it has happened, the way CUDA orders work: a stream knows its own work in issue order,
what the events it waited for knew, and -- for streams created blocking -- what the legacy
default stream knew (and the default stream what every blocking stream knew); the host knows
what it synchronized with (device, stream or event synchronization, a blocking copy to the host,
a value read, an event query that returned True). A write is *visible* to a reader whose clock
covers the writer's stamp. ``arrays.py`` makes every invisible read return poison (NaN, a byte
pattern), so a missing synchronization or ``wait_event`` gives wrong data in a test; writes to
host memory issued on a stream (non-blocking copies to the host) are applied only once the host
learns of them.

Errors "found on the device" (``fail``) are raised at the next synchronization, as CUDA reports
asynchronous errors. ``syncs`` counts every host synchronization.
"""
from __future__ import annotations

import itertools
import math
import threading
import time
import traceback


class Clock(dict):
    """stream id -> the last sequence number of that stream known here."""

    def merge(self, other) -> None:
        for k, v in other.items():
            if self.get(k, 0) < v:
                self[k] = v

    def sees(self, stamp) -> bool:
        return stamp is None or self.get(stamp[0], 0) >= stamp[1]


class SimulatedHang(RuntimeError):
    """The host waited on work the simulator was told never finishes (``stall``)."""


class SimStream:
    """``cupy.cuda.Stream``'s interface over a clock."""

    _ids = itertools.count(1)

    def __init__(self, sim, device, null=False, non_blocking=False, priority=0):
        self.sim, self.device_id = sim, device
        self.id = next(self._ids)
        self.ptr = 0 if null else 0x1000 + 0x10 * self.id
        self.null, self.non_blocking, self.priority = null, non_blocking, priority
        self.seq = 0
        self.clock = Clock()
        self.corrupt_from = math.inf     # results from this seq on read memory reused under them
        self.host_effects = []           # (seq, fn): writes to host memory, applied when known
        self.waited = []                 # events waited on (tests look)
        sim.streams[self.id] = self

    def issue(self):
        """One unit of work queued now: its stamp (stream id, sequence number)."""
        self.sim.before_issue(self)
        self.seq += 1
        self.clock[self.id] = self.seq
        return (self.id, self.seq)

    @property
    def done(self) -> bool:
        return self.sim.query(self.clock, self.device_id, self)

    def synchronize(self) -> None:
        self.sim.host_sync("stream.synchronize", self.device_id, self.clock, self)

    def wait_event(self, event) -> None:
        self.waited.append(event)
        if event.clock is not None:
            with self.sim._lock:
                self.clock.merge(event.clock)

    def use(self) -> None:
        self.sim.state.streams[self.device_id] = self

    def __enter__(self):   # cupy's streams are context managers that make them current
        self._prev = self.sim.current_stream(self.device_id)
        self.use()
        return self

    def __exit__(self, *exc):
        self._prev.use()

    def __repr__(self):
        return f"<SimStream {self.ptr:#x} device={self.device_id} seq={self.seq}>"


class SimEvent:
    """``cupy.cuda.Event``: records its stream's clock."""

    def __init__(self, sim, timing=False, blocking=False):
        self.sim, self.timing, self.blocking = sim, timing, blocking
        self.clock = None
        self.stream = None
        self.time = None
        self.device_id = None

    def record(self, stream=None):
        stream = stream if stream is not None else self.sim.current_stream()
        stream.issue()
        with self.sim._lock:
            self.clock = Clock(stream.clock)
        self.stream, self.device_id = stream, stream.device_id
        self.time = time.perf_counter()

    @property
    def done(self) -> bool:
        if self.clock is None:
            return True
        return self.sim.query(self.clock, self.device_id, self.stream)

    def synchronize(self) -> None:
        if self.clock is not None:
            self.sim.host_sync("event.synchronize", self.device_id, self.clock, self.stream)


class _State(threading.local):
    def __init__(self):
        self.device = 0
        self.streams = {}
        self.allocator = None


class Sim:
    """The simulated GPUs of one ``FakeCupyAPI``: streams, the host's knowledge, pending
    asynchronous errors, stalls and the synchronization count."""

    def __init__(self, device_count=2):
        self.device_count = device_count
        self.streams = {}
        self.state = _State()
        self.host_clock = Clock()
        self.nulls = [SimStream(self, d, null=True) for d in range(device_count)]
        self.errors = {}                 # device -> exception raised at its next synchronization
        self.stalled = {}                # stream id -> last seq that completes (until released)
        self.hang_timeout = 0.0          # how long a wait on stalled work blocks before raising
        self.syncs = 0
        self.sync_hook = None            # ember's set_sync_debug_mode callback
        self.sync_log = None             # a list while tracing: (what, where)
        self.pending_uploads = []        # arrays.Block with an H2D copy not yet applied
        self._lock = threading.RLock()

    # -- the current device and stream -------------------------------------------------------------
    def current_device(self) -> int:
        return self.state.device

    def current_stream(self, device=None) -> SimStream:
        d = self.state.device if device is None else device
        return self.state.streams.get(d, self.nulls[d])

    def blocking_streams(self, device):
        return [s for s in self.streams.values()
                if s.device_id == device and not s.null and not s.non_blocking]

    # -- ordering -----------------------------------------------------------------------------------
    def before_issue(self, stream: SimStream) -> None:
        """What a stream knows when work is queued on it: everything the host knows (the host
        issues in program order), and the legacy default stream's implicit synchronization."""
        with self._lock:
            stream.clock.merge(self.host_clock)
            if stream.null:
                for s in self.blocking_streams(stream.device_id):
                    stream.clock.merge(s.clock)
            elif not stream.non_blocking:
                stream.clock.merge(self.nulls[stream.device_id].clock)

    def _stuck(self, clock):
        """The stalled stream whose unfinished work ``clock`` depends on, or None."""
        for sid, done in self.stalled.items():
            if clock.get(sid, 0) > done:
                return self.streams[sid]
        return None

    def _known(self, clock) -> None:
        """The host now knows ``clock``: apply the host writes and uploads it covers."""
        with self._lock:
            self._learn(clock)

    def _learn(self, clock) -> None:
        self.host_clock.merge(clock)
        for s in list(self.streams.values()):
            if s.host_effects:
                keep = []
                for seq, fn in s.host_effects:
                    if self.host_clock.sees((s.id, seq)):
                        fn()
                    else:
                        keep.append((seq, fn))
                s.host_effects = keep
        if self.pending_uploads:
            pending, self.pending_uploads = self.pending_uploads, []
            for blk in pending:
                blk.materialize(self.host_clock)
                if blk.upload is not None:
                    self.pending_uploads.append(blk)

    def count_sync(self, what: str) -> None:
        self.syncs += 1
        if self.sync_hook is not None:
            self.sync_hook(what)
        if self.sync_log is not None:
            frames = [f for f in traceback.extract_stack()[:-2]
                      if "cuda_sim" not in f.filename and "helpers_cuda" not in f.filename]
            where = "; ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}"
                              for f in frames[-4:])
            self.sync_log.append((what, where))

    def raise_pending(self, device) -> None:
        exc = self.errors.pop(device, None)
        if exc is not None:
            raise exc

    def host_sync(self, what, device, clock, stream=None) -> None:
        """The host blocks until ``clock``'s work is done: for stalled work (``stall``), until
        the stall is released (another thread, an NCCL abort) or ``hang_timeout`` passes."""
        self.count_sync(what)
        deadline = time.monotonic() + self.hang_timeout
        while True:
            with self._lock:
                stuck = self._stuck(clock)
            if stuck is None:
                break
            if time.monotonic() >= deadline:
                raise SimulatedHang(f"{what}: waits for work on the simulated stream "
                                    f"{stuck.ptr:#x} that never finishes (stalled by the test); "
                                    f"a real program would hang here")
            time.sleep(0.005)
        self._known(clock)
        self.raise_pending(device)

    def synchronize_device(self, device) -> None:
        clock = Clock()
        with self._lock:
            for s in list(self.streams.values()):
                if s.device_id == device:
                    clock.merge(s.clock)
        self.host_sync("synchronize", device, clock)

    def query(self, clock, device, stream=None) -> bool:
        """An event or stream query: False while it depends on stalled work; True otherwise,
        and then the host knows the work is done (as after a real query that returned True)."""
        with self._lock:
            if self._stuck(clock) is not None:
                return False
            self._learn(clock)
        return True

    # -- test controls ----------------------------------------------------------------------------
    def fail(self, device, exc) -> None:
        """An error found by the device, raised at the next synchronization of ``device``."""
        self.errors.setdefault(device, exc)

    def stall(self, stream) -> None:
        """Work on ``stream`` (a SimStream) that the host does not yet know finished -- queued
        so far or later -- never completes until ``release``: queries of it, or of anything
        waiting for it, say False; synchronizations on it block ``hang_timeout`` seconds, then
        raise ``SimulatedHang``."""
        with self._lock:
            self.stalled.setdefault(stream.id, self.host_clock.get(stream.id, 0))

    def release(self, stream=None) -> None:
        with self._lock:
            if stream is None:
                self.stalled.clear()
            else:
                self.stalled.pop(stream.id, None)

    def trace_syncs(self, on=True) -> None:
        self.sync_log = [] if on else None
