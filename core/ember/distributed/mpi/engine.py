"""MPI itself: lazy mpi4py import, datatypes and reduction ops per dtype, host staging of tensors,
and communicator setup that can't hang.

Every tensor goes through a host numpy buffer handed to MPI by the buffer protocol: a contiguous
CPU tensor *is* its buffer (no copy); any other tensor (another device, non-contiguous) is copied
to the host before the transfer and back after it. float16/bfloat16 have no MPI type: they travel
as 16-bit words reduced by user-defined MPI ops written in numpy.
"""
from __future__ import annotations

import os
import time

import importlib.util
import numpy as np

from .._types import DistBackendError, RedOpType
from ...dispatch.grad_mode import no_grad
from ...ops.factories import from_numpy

_MPI = None


def mpi():
    """The ``mpi4py.MPI`` module, initialising MPI (thread level MULTIPLE) on first use."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py  # optional: mpi4py (ember[distributed])
        except ImportError as e:
            raise RuntimeError("ember.distributed's MPI backend needs mpi4py and an MPI library: "
                               "pip install 'ember[distributed]' (mpi4py + the mpich wheel)") from e
        mpi4py.rc.threads = True
        mpi4py.rc.thread_level = "multiple"
        from mpi4py import MPI  # optional: mpi4py (ember[distributed])
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise RuntimeError(f"ember.distributed: the MPI library gave thread level "
                               f"{MPI.Query_thread()}, but the communication thread needs "
                               f"MPI_THREAD_MULTIPLE ({MPI.THREAD_MULTIPLE})")
        _MPI = MPI
    return _MPI


def available() -> bool:
    return importlib.util.find_spec("mpi4py") is not None


# -- datatypes and ops ---------------------------------------------------------------------------
_HALF = ("float16", "bfloat16")
_user_ops = {}


_TYPES = {}


def datatype(np_dtype):
    """The MPI datatype that reduces values of ``np_dtype`` (16-bit floats: their carrier)."""
    name = np.dtype(np_dtype).name
    t = _TYPES.get(name)
    if t is None:
        MPI = mpi()
        table = {"float32": MPI.FLOAT, "float64": MPI.DOUBLE, "int8": MPI.INT8_T,
                 "int16": MPI.INT16_T, "int32": MPI.INT32_T, "int64": MPI.INT64_T,
                 "uint8": MPI.UINT8_T, "bool": MPI.C_BOOL, "complex64": MPI.C_FLOAT_COMPLEX,
                 "complex128": MPI.C_DOUBLE_COMPLEX, "float16": MPI.UINT16_T,
                 "bfloat16": MPI.UINT16_T}
        if name not in table:
            raise DistBackendError(f"the MPI backend has no datatype for {name}")
        t = _TYPES[name] = table[name]
    return t


def _half_op(red, np_dtype):
    key = (red, np.dtype(np_dtype).name)
    op = _user_ops.get(key)
    if op is None:
        dt = np.dtype(np_dtype)
        fn = {RedOpType.SUM: np.add, RedOpType.PRODUCT: np.multiply,
              RedOpType.MIN: np.minimum, RedOpType.MAX: np.maximum}[red]

        def reduce_half(inbuf, inoutbuf, _datatype, fn=fn, dt=dt):
            acc = np.frombuffer(inoutbuf, dtype=dt)
            fn(np.frombuffer(inbuf, dtype=dt), acc, out=acc)
        op = _user_ops[key] = mpi().Op.Create(reduce_half, commute=True)
    return op


_OPS = {}


def reduce_op(red, np_dtype):
    """(MPI op, divide afterwards) for a ReduceOp on ``np_dtype``; the op/dtype pair was checked
    by the caller (ember.distributed.collectives)."""
    name = np.dtype(np_dtype).name
    key = (red, name)
    got = _OPS.get(key)
    if got is None:
        got = _OPS[key] = _make_reduce_op(red, np_dtype, name)
    return got


def _make_reduce_op(red, np_dtype, name):
    MPI = mpi()
    avg = red == RedOpType.AVG
    if avg:
        red = RedOpType.SUM
    if name in _HALF:
        return _half_op(red, np_dtype), avg
    if name == "bool":
        table = {RedOpType.SUM: MPI.LOR, RedOpType.MAX: MPI.LOR, RedOpType.BOR: MPI.LOR,
                 RedOpType.PRODUCT: MPI.LAND, RedOpType.MIN: MPI.LAND, RedOpType.BAND: MPI.LAND,
                 RedOpType.BXOR: MPI.LXOR}
        return table[red], avg
    table = {RedOpType.SUM: MPI.SUM, RedOpType.PRODUCT: MPI.PROD, RedOpType.MIN: MPI.MIN,
             RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND, RedOpType.BOR: MPI.BOR,
             RedOpType.BXOR: MPI.BXOR}
    return table[red], avg


# -- staging -------------------------------------------------------------------------------------
class Staged:
    """A tensor's host buffer for one transfer. ``arr`` is flat; for CPU tensors it is the
    tensor's own memory. ``finish()`` writes the buffer back into the tensor if it was a copy
    and bumps the tensor's version (collectives are in-place ops)."""

    __slots__ = ("tensor", "arr", "copied", "write")

    def __init__(self, tensor, read=True, write=True):
        self.tensor = tensor
        self.write = write
        if tensor.device.type == "cpu" and tensor.is_contiguous():
            self.arr = tensor.numpy(force=True).reshape(-1)
            self.copied = False
        elif read:
            self.arr = np.ascontiguousarray(tensor._host()).reshape(-1)
            self.copied = True
        else:
            self.arr = np.empty(tensor.numel(), dtype=tensor.dtype.np)
            self.copied = True

    def buf(self, as_bytes=False):
        """The MPI buffer spec: [array, datatype] (raw bytes for pure data movement)."""
        if as_bytes:
            return [self.arr.view(np.uint8), mpi().BYTE]
        return [self.arr, datatype(self.arr.dtype)]

    def finish(self) -> None:
        if not self.write:
            return
        t = self.tensor
        if self.copied:
            with no_grad():
                t.copy_(from_numpy(self.arr.reshape(tuple(t.shape))))
        else:
            t._storage.version += 1


def divide_in_place(arr, n) -> None:
    """AVG: the summed buffer divided by the group size, in its own dtype."""
    np.divide(arr, arr.dtype.type(n), out=arr)


# -- communicators -------------------------------------------------------------------------------
class Backoff:
    """How a thread waits for MPI. First it tests in a tight loop, yielding the CPU every few
    hundred tests as MPICH's own blocking calls do (small transfers finish in microseconds, and
    a rank whose peer shares its core must let the peer run); then it yields after every test;
    after a while it sleeps, up to 1 ms, between tests (a long wait should not burn a core)."""

    __slots__ = ("start", "nap", "polls")
    SPIN = 5e-3
    YIELD = 5e-2
    POLLS_BEFORE_YIELD = 256

    def __init__(self):
        self.start = time.monotonic()
        self.nap = 5e-5
        self.polls = 0

    def pause(self, now: float) -> None:
        waited = now - self.start
        if waited < self.SPIN:
            self.polls += 1
            if self.polls % self.POLLS_BEFORE_YIELD == 0:
                os.sched_yield()
            return
        if waited < self.YIELD:
            os.sched_yield()
            return
        time.sleep(self.nap)
        self.nap = min(self.nap * 2, 1e-3)


def poll(request, deadline: float, what: str) -> bool:
    """Test ``request`` until done (True) or ``deadline`` (False)."""
    backoff = Backoff()
    while not request.Test():
        now = time.monotonic()
        if now >= deadline:
            return False
        backoff.pause(now)
    return True


def guarded_barrier(comm, deadline: float, what: str, describe) -> None:
    """A non-blocking barrier polled until ``deadline``: called before an MPI call that blocks
    (communicator or window creation), so that call only starts once every member is there."""
    req = comm.Ibarrier()
    if not poll(req, deadline, what):
        raise DistBackendError(describe())


def idup(comm, deadline: float, describe):
    new, req = comm.Idup()
    if not poll(req, deadline, "communicator duplication"):
        raise DistBackendError(describe())
    return new


def env_rank_check(world_rank: int, world_size: int) -> None:
    """RANK/WORLD_SIZE set by a launcher must agree with what MPI says."""
    for var, mine in (("RANK", world_rank), ("WORLD_SIZE", world_size)):
        v = os.environ.get(var)
        if v is not None and v.strip() and v.strip() != str(mine):
            raise ValueError(f"init_process_group: environment variable {var}={v} but MPI says "
                             f"{var.lower()} is {mine}; start the job with `ember-run -n N "
                             f"script.py` (mpiexec underneath) so that they agree")
