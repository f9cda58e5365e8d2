"""MPI work handles and the communication thread.

MPI's blocking calls can't be interrupted, so every transfer is a non-blocking MPI request
polled against a deadline (the group's timeout). A thread that waits drives its own request
(``Work._drive``). Requests of asynchronous collectives (``async_op=True``, DDP's buckets) are
also tracked by one communication thread per process, which tests them while the caller computes
(MPICH moves data only inside MPI calls), completes them — running their post steps and their
futures' callbacks, i.e. ember ops, on that thread — and fails the ones whose deadline passed. It
also refreshes the status boards' heartbeats.
"""
from __future__ import annotations

import sys
import threading
import time
import traceback
import weakref

from .._types import DistBackendError
from ..work import Work
from .engine import Backoff, mpi

#: seconds between two polls of the communication thread while requests are pending
POLL_INTERVAL = 2.5e-4
_HEARTBEAT = 0.5


class MPIWork(Work):
    def __init__(self, group, op, seq, requests, outputs=(), posts=(), status=None):
        super().__init__(op, outputs)
        self._group = group
        self._seq = seq
        self._reqs = requests
        self._req_lock = threading.Lock()
        self._start = time.monotonic()
        self._deadline = self._start + group.timeout_s
        self._status = status
        self._watched = False
        for fn in posts:
            self._add_post(fn)

    def _test(self) -> bool:
        reqs = self._reqs
        if len(reqs) == 1:
            return reqs[0].Test(self._status) if self._status is not None else reqs[0].Test()
        return mpi().Request.Testall(reqs)

    def _poll(self) -> bool:
        if self._done.is_set():
            return True
        if not self._watched:       # only the waiting thread tests it: no lock needed
            return self._poll_once()
        if not self._req_lock.acquire(blocking=False):
            return False  # the other thread is testing it right now
        try:
            return self._poll_once()
        finally:
            self._req_lock.release()

    def _poll_once(self) -> bool:
        if self._completing:
            return True
        try:
            finished = self._test()
        except Exception as e:  # an MPI error: the op fails, the group is unusable
            self._complete(self._group.mpi_error(self, e))
            return True
        if finished:
            if self._status is not None:
                self._source = self._status.Get_source()
            self._complete()
        return finished

    def _drive(self, deadline) -> None:
        limit = self._deadline if deadline is None else min(deadline, self._deadline)
        backoff = Backoff()
        while not self._poll():
            if self._completing:
                return      # the communication thread is finishing it; wait() waits for that
            now = time.monotonic()
            if now >= limit:
                if limit >= self._deadline:
                    self._group.timed_out(self)      # raises unless it just completed
                    return
                raise DistBackendError(
                    f"Work.wait: {self._op} on process group '{self._group.group_name}' did "
                    f"not complete within the wait's timeout ({now - self._start:.2f} s since "
                    f"it started); it is still pending and may be waited on again")
            backoff.pause(now)

    def _watch(self) -> None:
        """Let the communication thread drive it too (asynchronous collectives)."""
        self._watched = True
        progress.track(self)


class Progress:
    """The communication thread (started on first use, stopped at exit)."""

    def __init__(self):
        self._works = []
        self._boards = weakref.WeakSet()
        self._cond = threading.Condition()
        self._thread = None
        self._stop = False

    def track(self, work) -> None:
        with self._cond:
            self._works.append(work)
            self._ensure_thread()
            self._cond.notify()

    def add_board(self, board) -> None:
        with self._cond:
            self._boards.add(board)
            self._ensure_thread()

    def _ensure_thread(self) -> None:
        if self._thread is None and not self._stop:
            self._thread = threading.Thread(target=self._run, name="ember-dist-comm",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        last_beat = 0.0
        while True:
            with self._cond:
                if self._stop:
                    return
                if not self._works:
                    self._cond.wait(_HEARTBEAT)
                    if self._stop:
                        return
                works = list(self._works)
            now = time.monotonic()
            finished = []
            for w in works:
                try:
                    if w._poll():
                        finished.append(w)
                    elif now >= w._deadline:
                        finished.append(w)
                        w._group.timed_out(w, raise_error=False)
                except BaseException:  # noqa: BLE001 - never let the thread die silently
                    finished.append(w)
                    print("ember.distributed: error in the communication thread:\n" +
                          traceback.format_exc(), file=sys.stderr, flush=True)
            if finished:
                with self._cond:
                    self._works = [w for w in self._works if w not in finished]
            if now - last_beat >= _HEARTBEAT:
                last_beat = now
                for b in list(self._boards):
                    if not b.closed:
                        b.beat()
            if works and len(finished) < len(works):
                time.sleep(POLL_INTERVAL)

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
            t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=2.0)


progress = Progress()
