"""The ``"nccl"`` process-group backend: ``ember.distributed`` collectives on CUDA tensors through
``cupy.cuda.nccl`` (the ``nvidia-nccl-cu12`` wheel).

Registered by this package's plugin hook for the device type ``cuda``, so
``init_process_group()`` (or ``backend="nccl"``, ``"cpu:mpi,cuda:nccl"``) runs CUDA tensors'
collectives here and everything else on MPI. Setup: rank 0 makes the NCCL unique id and the group's
MPI ``bootstrap`` broadcasts it (no sockets, no store); each rank then builds its communicator on
its current device. Each collective is queued on the tensor's device's current stream, so it is
ordered after the kernels that produced the tensor with no host wait; its ``Work`` is an event
recorded behind it. ``Work.wait`` blocks until the event completes or the group's timeout passes,
which aborts the communicator and raises ``DistBackendError`` naming the op, group and rank.

NCCL has no bitwise reductions and no int16/bool sums: those raise a clear error (use the MPI
backend for them). bool reductions map to MAX (SUM, BOR) and MIN (PRODUCT, BAND) as PyTorch's
NCCL group does; complex tensors reduce as (real, imag) pairs for SUM and AVG.
"""
from __future__ import annotations

import time

import numpy as np

from ember.distributed import Work
from ember.distributed._types import DistBackendError, RedOpType
from ember.distributed.backend import ProcessGroupBackend

_TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
          "int64": "NCCL_INT64", "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
          "float64": "NCCL_FLOAT64", "bool": "NCCL_UINT8", "complex64": "NCCL_FLOAT32",
          "complex128": "NCCL_FLOAT64"}
_OPS = {RedOpType.SUM: "NCCL_SUM", RedOpType.PRODUCT: "NCCL_PROD", RedOpType.MIN: "NCCL_MIN",
        RedOpType.MAX: "NCCL_MAX", RedOpType.AVG: "NCCL_AVG"}
_BOOL_OPS = {RedOpType.SUM: "NCCL_MAX", RedOpType.BOR: "NCCL_MAX",
             RedOpType.PRODUCT: "NCCL_MIN", RedOpType.BAND: "NCCL_MIN"}


def nccl_module():
    """``cupy.cuda.nccl``, or RuntimeError saying what is missing."""
    try:
        from cupy.cuda import nccl
    except Exception as e:
        raise RuntimeError(f"the nccl process-group backend needs cupy with NCCL: {e}") from None
    if not getattr(nccl, "available", True):
        raise RuntimeError("the nccl process-group backend needs NCCL: cupy found no NCCL "
                           "library; install it with `pip install nvidia-nccl-cu12` (part of "
                           "`pip install 'ember[cuda]'`)")
    return nccl


def datatype(nccl, dtype, op_name):
    name = _TYPES.get(dtype.name)
    if name is None:
        raise RuntimeError(f"{op_name}: NCCL has no {dtype} type; use the MPI backend "
                           f"(backend='cpu:mpi,cuda:mpi') for {dtype} tensors")
    return getattr(nccl, name)


def reduction(nccl, op, dtype, op_name):
    if dtype.name == "bool":
        name = _BOOL_OPS.get(op)
    elif dtype.is_complex and op not in (RedOpType.SUM, RedOpType.AVG):
        name = None
    else:
        name = _OPS.get(op)
    if name is None:
        raise RuntimeError(f"{op_name}: ReduceOp.{RedOpType(op).name} is not supported by NCCL "
                           f"for {dtype} tensors; use the MPI backend for it")
    return getattr(nccl, name)


def _count(t) -> int:
    return t.numel() * (2 if t.dtype.is_complex else 1)


class NCCLWork(Work):
    """A collective queued on a stream: done when the event recorded behind it is."""

    def __init__(self, group, op, event, outputs):
        super().__init__(op, outputs)
        self._group = group
        self._event = event

    def _poll(self) -> bool:
        if self._done.is_set():
            return True
        if self._event.done:
            self._complete()
            return True
        return False

    def _drive(self, deadline) -> None:
        group = self._group
        limit = group.timeout.total_seconds()
        end = time.monotonic() + limit if deadline is None else min(deadline,
                                                                    time.monotonic() + limit)
        pause = 1e-5
        while not self._poll():
            if time.monotonic() >= end:
                err = DistBackendError(
                    f"{self._op}: NCCL collective on process group '{group.context.group_name}' "
                    f"(rank {group.rank()} of {group.size()}) did not complete within "
                    f"{limit:.1f} s; the communicator was aborted")
                group.abort(err)
                self._complete(err)
                return
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)


class ProcessGroupNCCL(ProcessGroupBackend):
    name = "nccl"

    def __init__(self, context, backend, nccl):
        super().__init__(context)
        self._backend = backend
        self._nccl = nccl
        self._api = backend._api
        self._broken = None
        self._device = backend.current_device()
        mpi = context.bootstrap._mpi()
        import ember
        uid = ember.zeros(128, dtype=ember.uint8)
        if context.rank == 0:
            uid.copy_(ember.tensor(np.frombuffer(bytes(
                (x + 256) % 256 for x in nccl.get_unique_id()), dtype=np.uint8).copy()))
        mpi.broadcast(uid, 0).wait()
        raw = tuple(int(b) if b < 128 else int(b) - 256 for b in uid.numpy().tolist())
        with self._api.on_device(self._device):
            self._comm = nccl.NcclCommunicator(context.size, raw, context.rank)

    # -- issuing ----------------------------------------------------------------------------------
    def _check(self, op, tensors):
        if self._broken is not None:
            raise DistBackendError(f"{op}: process group '{self.context.group_name}' can't be "
                                   f"used any more: {self._broken}")
        for t in tensors:
            if t is not None and (t.device.type != "cuda" or t.device.index != self._device):
                raise RuntimeError(f"{op}: the nccl group of rank {self.rank()} runs on "
                                   f"cuda:{self._device}, got a tensor on {t.device}")

    def _issue(self, op, tensors, outputs, start):
        self._check(op, tensors)
        api = self._api
        with api.on_device(self._device):
            stream = api.current_stream()
            start(stream.ptr)
            event = api.new_event(False, False, False)
            event.record(stream)
        return NCCLWork(self, op, event, outputs)

    def _ptr(self, t):
        return self._backend.native(t).data.ptr

    # -- collectives ------------------------------------------------------------------------------
    def allreduce(self, tensor, op):
        n = self._nccl
        dt, rop = datatype(n, tensor.dtype, "all_reduce"), reduction(n, op, tensor.dtype,
                                                                      "all_reduce")
        p = self._ptr(tensor)
        return self._issue("all_reduce", [tensor], [tensor], lambda s: self._comm.allReduce(
            p, p, _count(tensor), dt, rop, s))

    def broadcast(self, tensor, src):
        dt = datatype(self._nccl, tensor.dtype, "broadcast")
        p = self._ptr(tensor)
        return self._issue("broadcast", [tensor], [tensor], lambda s: self._comm.broadcast(
            p, p, _count(tensor), dt, src, s))

    def reduce(self, tensor, dst, op):
        n = self._nccl
        dt, rop = datatype(n, tensor.dtype, "reduce"), reduction(n, op, tensor.dtype, "reduce")
        p = self._ptr(tensor)
        return self._issue("reduce", [tensor], [tensor], lambda s: self._comm.reduce(
            p, p, _count(tensor), dt, rop, dst, s))

    def allgather_into(self, output, input):
        dt = datatype(self._nccl, input.dtype, "all_gather")
        return self._issue("all_gather", [output, input], [output],
                           lambda s: self._comm.allGather(self._ptr(input), self._ptr(output),
                                                          _count(input), dt, s))

    def reduce_scatter_into(self, output, input, op):
        n = self._nccl
        dt = datatype(n, input.dtype, "reduce_scatter")
        rop = reduction(n, op, input.dtype, "reduce_scatter")
        return self._issue("reduce_scatter", [output, input], [output],
                           lambda s: self._comm.reduceScatter(self._ptr(input), self._ptr(output),
                                                              _count(output), dt, rop, s))

    def _grouped(self, op, tensors, outputs, pairs):
        """Point-to-point transfers issued as one NCCL group: (kind, tensor, count, peer)."""
        n = self._nccl

        def start(s):
            n.groupStart()
            try:
                for kind, t, offset, count, peer in pairs:
                    dt = datatype(n, t.dtype, op)
                    ptr = self._ptr(t) + offset * t.dtype.itemsize
                    if kind == "send":
                        self._comm.send(ptr, count, dt, peer, s)
                    else:
                        self._comm.recv(ptr, count, dt, peer, s)
            finally:
                n.groupEnd()
        return self._issue(op, tensors, outputs, start)

    def gather_into(self, output, input, dst):
        m = _count(input)
        pairs = [("send", input, 0, m, dst)]
        if self.rank() == dst:
            pairs += [("recv", output, r * input.numel(), m, r) for r in range(self.size())]
        return self._grouped("gather", [output, input], [output] if output is not None else [],
                             pairs)

    def scatter_from(self, output, input, src):
        m = _count(output)
        pairs = [("recv", output, 0, m, src)]
        if self.rank() == src:
            pairs += [("send", input, r * output.numel(), m, r) for r in range(self.size())]
        return self._grouped("scatter", [output, input], [output], pairs)

    def alltoall_into(self, output, input, output_splits, input_splits):
        mult = 2 if input.dtype.is_complex else 1
        pairs, off_in, off_out = [], 0, 0
        for r in range(self.size()):
            pairs.append(("send", input, off_in, input_splits[r] * mult, r))
            pairs.append(("recv", output, off_out, output_splits[r] * mult, r))
            off_in += input_splits[r]
            off_out += output_splits[r]
        return self._grouped("all_to_all", [output, input], [output], pairs)

    def send(self, tensor, dst, tag):
        return self._grouped("send", [tensor], [tensor], [("send", tensor, 0, _count(tensor), dst)])

    def recv(self, tensor, src, tag):
        if src is None:
            raise RuntimeError("recv: the nccl backend needs a source rank (NCCL has no receive "
                               "from any rank); use the MPI backend for src=None")
        return self._grouped("recv", [tensor], [tensor], [("recv", tensor, 0, _count(tensor), src)])

    def barrier(self):
        import ember
        with self._api.on_device(self._device):
            one = ember.ones(1, device=f"cuda:{self._device}")
        return self.allreduce(one, RedOpType.SUM)

    # -- life cycle -------------------------------------------------------------------------------
    def abort(self, err=None) -> None:
        self._broken = err or "aborted"
        try:
            self._comm.abort()
        except Exception:  # already aborted or destroyed
            pass

    def shutdown(self) -> None:
        if self._broken is None:
            self._broken = "the process group was destroyed"
            try:
                self._comm.destroy()
            except Exception:
                pass


def make_group(context):
    """The factory ``ember.distributed`` calls for ``backend="nccl"``."""
    from ember.runtime import registry
    reason = registry.unavailable_reason("cuda")
    if reason is not None:
        raise RuntimeError(f"init_process_group: the nccl backend needs CUDA, which is "
                           f"unavailable here: {reason}")
    return ProcessGroupNCCL(context, registry.get("cuda"), nccl_module())
