"""The status board: which collective each rank of a group is in, readable by any rank without
the others' help.

Each rank owns one slot of an MPI RMA window (``MPI_Win_allocate`` on the group's control
communicator) and writes it with plain stores: the sequence number and op of the collective it
entered last, the one it finished last, the element count, and a heartbeat the communication
thread refreshes. When a collective times out, the waiting rank reads every slot with one-sided
``MPI_Rget`` (polled with a short deadline, so a dead peer cannot block it) and can say which
ranks never entered the collective, where they are instead and when they were last alive.
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np

from .engine import mpi, poll

ENTERED, FINISHED, OPCODE, COUNT, HEARTBEAT, PID = range(6)
_SLOT = 6

OPS = ["none", "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "gather",
       "scatter", "all_to_all", "barrier", "monitored_barrier", "send", "recv", "setup"]
_CODE = {name: i for i, name in enumerate(OPS)}


class StatusBoard:
    def __init__(self, comm):
        MPI = mpi()
        self.comm = comm
        self.win = MPI.Win.Allocate(_SLOT * 8, 8, comm=comm)
        self.mine = np.frombuffer(self.win.tomemory(), dtype=np.int64)
        self.mine[:] = 0
        self.mine[PID] = os.getpid()
        self.win.Lock_all()
        self.closed = False
        self._lock = threading.Lock()   # beat() (communication thread) vs close()
        self.beat()

    def enter(self, seq: int, op: str, count: int) -> None:
        m = self.mine
        m[OPCODE] = _CODE.get(op, 0)
        m[COUNT] = count
        m[ENTERED] = seq

    def finish(self, seq: int) -> None:
        if self.mine[FINISHED] < seq:
            self.mine[FINISHED] = seq

    def beat(self) -> None:
        with self._lock:
            if not self.closed:  # the window's memory is gone once freed
                self.mine[HEARTBEAT] = time.time_ns()

    def query(self, grace: float = 2.0) -> list:
        """Every rank's slot as a dict (None for ranks that did not answer within ``grace``)."""
        size = self.comm.Get_size()
        me = self.comm.Get_rank()
        out = [None] * size
        reqs = {}
        bufs = {}
        for r in range(size):
            if r == me:
                out[r] = self._decode(self.mine.copy())
                continue
            bufs[r] = np.zeros(_SLOT, dtype=np.int64)
            try:
                reqs[r] = self.win.Rget(bufs[r], r)
            except Exception:  # noqa: BLE001 - a broken peer is reported as unknown
                pass
        deadline = time.monotonic() + grace
        for r, req in reqs.items():
            if poll(req, deadline, "status query"):
                out[r] = self._decode(bufs[r])
        return out

    @staticmethod
    def _decode(slot) -> dict:
        code = int(slot[OPCODE])
        return {"entered": int(slot[ENTERED]), "finished": int(slot[FINISHED]),
                "op": OPS[code] if 0 <= code < len(OPS) else "?", "count": int(slot[COUNT]),
                "heartbeat_age": (time.time_ns() - int(slot[HEARTBEAT])) / 1e9,
                "pid": int(slot[PID])}

    def close(self) -> None:
        """Collective: free the window (the caller checked that every member is here)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self.mine = None
        self.win.Unlock_all()
        self.win.Free()
