"""``cupy.cuda.nccl`` on the simulated GPU, for a world of one rank: the communicator checks
what cupy 14's does (the unique id as 128 bytes), runs each collective on the stream it is given
(reading its input as that stream sees it -- so a communication stream that did not wait for
the producer reads poison -- and writing its output there), and lets a test make NCCL misbehave:
``hang_init`` (a rank that never joins), ``async_error`` (ncclCommGetAsyncError), and a stalled
communication stream (a collective that never finishes; ``abort`` releases it, as
ncclCommAbort ends the kernels)."""
from __future__ import annotations

import os
import threading

import ml_dtypes
import numpy as np

NCCL_UNIQUE_ID_BYTES = 128
_TYPES = {"NCCL_INT8": np.int8, "NCCL_UINT8": np.uint8, "NCCL_INT32": np.int32,
          "NCCL_INT64": np.int64, "NCCL_FLOAT16": np.float16, "NCCL_FLOAT32": np.float32,
          "NCCL_FLOAT64": np.float64, "NCCL_BFLOAT16": ml_dtypes.bfloat16}
_REDUCTIONS = {"NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2, "NCCL_MIN": 3, "NCCL_AVG": 4}


class NcclError(RuntimeError):
    pass


class FakeNccl:
    """The module object (``api.nccl_module()``)."""

    available = True
    NcclError = NcclError

    def __init__(self, api):
        self.api = api
        for k, (name, _) in enumerate(_TYPES.items()):
            setattr(self, name, k)
        self._dtypes = {k: np.dtype(t) for k, t in enumerate(_TYPES.values())}
        for name, v in _REDUCTIONS.items():
            setattr(self, name, v)
        self.hang_init = threading.Event()     # set: communicator builds block until cleared
        self.async_error = None                # an NcclError check_async_error raises
        self.comms = []
        self._group = None

    def get_unique_id(self):
        """Fetch the NCCL unique ID as a Python bytes object (cupy 14)."""
        return os.urandom(NCCL_UNIQUE_ID_BYTES)

    def NcclCommunicator(self, ndev, commId, rank):   # noqa: N802 - cupy's name
        comm = FakeCommunicator(self, ndev, commId, rank)
        self.comms.append(comm)
        return comm

    def groupStart(self):   # noqa: N802
        self._group = []

    def groupEnd(self):   # noqa: N802
        pending, self._group = self._group, None
        sends = [p for p in pending if p[0] == "send"]
        recvs = [p for p in pending if p[0] == "recv"]
        if len(sends) != len(recvs):
            raise NcclError("unmatched send/recv in a group of one rank")
        for (_, comm, sbuf, n, dt, _, stream), (_, _, rbuf, m, _, _, _) in zip(sends, recvs):
            comm._copy(rbuf, sbuf, min(n, m), dt, stream)


class FakeCommunicator:
    def __init__(self, module, ndev, commId, rank):
        if not isinstance(commId, bytes):
            raise TypeError(f"Argument 'commId' has incorrect type (expected bytes, got "
                            f"{type(commId).__name__})")
        if len(commId) != NCCL_UNIQUE_ID_BYTES:
            raise ValueError(f"commId length {len(commId)} != {NCCL_UNIQUE_ID_BYTES}.")
        if ndev != 1 or rank != 0:
            raise NcclError("the simulated NCCL has one rank")
        while module.hang_init.is_set():          # a rank that never joins
            threading.Event().wait(0.01)
        self._m = module
        self.aborted = self.destroyed = False
        self.calls = []

    # -- the simulated transfers -----------------------------------------------------------------
    def _stream(self, ptr):
        sim = self._m.api.sim
        for s in list(sim.streams.values()):
            if s.ptr == ptr and s.device_id == sim.current_device():
                return s
        raise NcclError(f"no stream {ptr:#x} on the current device")

    def _copy(self, recvbuf, sendbuf, count, datatype, stream_ptr, scale=None):
        if self.aborted:
            raise NcclError("ncclInvalidUsage: the communicator was aborted")
        api = self._m.api
        dt = self._m._dtypes[datatype]
        stream = self._stream(stream_ptr)
        stamp = stream.issue()
        src = api.sim.arrays.readable(api.array_at(sendbuf, count * dt.itemsize), stream)
        dst = api.sim.arrays.writable(api.array_at(recvbuf, count * dt.itemsize), stream, stamp)
        values = src.view(dt)[:count]
        if scale is not None:
            values = values / scale
        dst.view(dt)[:count] = values

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):   # noqa: N802
        self.calls.append("allReduce")
        self._copy(recvbuf, sendbuf, count, datatype, stream)

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        self.calls.append("broadcast")
        self._copy(recvbuf, sendbuf, count, datatype, stream)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        self.calls.append("reduce")
        self._copy(recvbuf, sendbuf, count, datatype, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):   # noqa: N802
        self.calls.append("allGather")
        self._copy(recvbuf, sendbuf, count, datatype, stream)

    def reduceScatter(self, sendbuf, recvbuf, count, datatype, op, stream):   # noqa: N802
        self.calls.append("reduceScatter")
        self._copy(recvbuf, sendbuf, count, datatype, stream)

    def send(self, sendbuf, count, datatype, peer, stream):
        self._m._group.append(("send", self, sendbuf, count, datatype, peer, stream))

    def recv(self, recvbuf, count, datatype, peer, stream):
        self._m._group.append(("recv", self, recvbuf, count, datatype, peer, stream))

    # -- errors and life cycle --------------------------------------------------------------------
    def check_async_error(self):
        if self._m.async_error is not None:
            raise self._m.async_error

    def abort(self):
        self.aborted = True
        self._m.api.sim.release()    # ncclCommAbort ends the communicator's kernels

    def destroy(self):
        self.destroyed = True
