"""The ``"nccl"`` process-group backend: ``ember.distributed`` collectives on CUDA tensors through
``cupy.cuda.nccl`` (the nvidia-nccl wheel), behaving as PyTorch's ProcessGroupNCCL.

* **Device**: the group's GPU is the one the program chose (``ember.cuda.set_device``), else
  ``LOCAL_RANK`` (set by ``ember-run``/torchrun) modulo the visible GPUs, else the rank; it is
  made current, so ``device="cuda"`` means each rank's own GPU.
* **Setup**: rank 0 makes the NCCL unique id, the group's MPI ``bootstrap`` broadcasts it (no
  sockets, no store), each rank builds its communicator on its GPU. The build blocks until every
  rank joins, so it runs on a helper thread and ``init_process_group`` raises
  ``DistBackendError`` naming the rank if it has not finished within the group's timeout.
* **Streams**: each collective runs on the group's own communication stream (non-blocking, high
  priority): an event recorded on the caller's current stream makes the communication stream
  wait for the tensor's producers, the NCCL call is queued there, an end event is recorded
  behind it, and the tensors are ``record_stream``-ed onto the communication stream (their
  memory is not reused under the collective). ``Work.wait()`` makes the *current stream* wait for
  the end event -- the host does not wait -- so DDP's bucket all-reduces, issued during backward,
  overlap with the rest of backward. ``get_future()`` is completed at once, as PyTorch's CUDA
  futures are: waiting on it, reading its value or running its callbacks first makes the current
  stream wait for the collective. ``barrier()`` waits on the host (as PyTorch's does), and so
  does every ``wait()`` with ``EMBER_NCCL_BLOCKING_WAIT=1`` (TORCH_NCCL_BLOCKING_WAIT).
* **Watchdog**: a thread per group polls (without blocking) the end events of the collectives in
  flight and ``ncclCommGetAsyncError``. A collective still running after the group's timeout, or
  an asynchronous NCCL error, aborts the communicator (which stops its kernels) and breaks the
  group: the error (``DistBackendError`` naming the op, its sequence number, the rank and the
  timeout) is raised by the next ``wait()`` or collective of the group, and at the next host
  synchronization of the GPU (``.item()``, ``synchronize()``), where a program blocked on the
  collective's result is released by the abort.

NCCL has no bitwise reductions and no int16/bool sums: those raise a clear error (use the MPI
backend for them). bool reductions map to MAX (SUM, BOR) and MIN (PRODUCT, BAND) as PyTorch's
NCCL group does; complex tensors reduce as (real, imag) pairs for SUM and AVG.
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np

from ember.distributed import DistBackendError, ReduceOp, Work
from ember.distributed.backend import ProcessGroupBackend
from ember.futures import Future

_TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
          "int64": "NCCL_INT64", "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
          "float64": "NCCL_FLOAT64", "bool": "NCCL_UINT8", "complex64": "NCCL_FLOAT32",
          "complex128": "NCCL_FLOAT64", "bfloat16": "NCCL_BFLOAT16"}
RedOpType = ReduceOp.RedOpType
_OPS = {RedOpType.SUM: "NCCL_SUM", RedOpType.PRODUCT: "NCCL_PROD", RedOpType.MIN: "NCCL_MIN",
        RedOpType.MAX: "NCCL_MAX", RedOpType.AVG: "NCCL_AVG"}
_BOOL_OPS = {RedOpType.SUM: "NCCL_MAX", RedOpType.BOR: "NCCL_MAX",
             RedOpType.PRODUCT: "NCCL_MIN", RedOpType.BAND: "NCCL_MIN"}
#: seconds between the watchdog's checks (PyTorch's is 100 ms)
WATCHDOG_INTERVAL = 0.1


def datatype(nccl, dtype, op_name):
    name = _TYPES.get(dtype.name)
    if name is None or not hasattr(nccl, name):
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


def _blocking_wait() -> bool:
    return any(os.environ.get(k, "0") not in ("", "0") for k in
               ("EMBER_NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"))


class StreamFuture(Future):
    """A future completed when its collective is queued (PyTorch's CUDA future): ``wait``,
    ``value`` and callbacks first make the caller's current stream wait for the collective."""

    def __init__(self, work):
        super().__init__()
        self._work = work

    def wait(self):
        self._work.wait()
        return super().wait()

    def value(self):
        self._work.wait()
        return super().value()

    def add_done_callback(self, callback):
        def ordered(fut):
            self._work.wait()
            callback(fut)
        super().add_done_callback(ordered)


class NCCLWork(Work):
    """A collective queued on the group's communication stream; done when its end event is."""

    def __init__(self, group, op, seq, event, outputs, blocking=False):
        super().__init__(op, outputs)
        self._group, self._seq, self._event = group, seq, event
        self._issued = time.monotonic()
        self._blocking = blocking
        self._waited = False

    def describe(self) -> str:
        g = self._group
        return (f"{self._op} (collective #{self._seq} of process group "
                f"'{g.context.group_name}', rank {g.rank()} of {g.size()} on cuda:{g._device})")

    def is_completed(self) -> bool:
        return self._group._error is not None or self._event.done

    def wait(self, timeout=None) -> bool:
        group = self._group
        group._raise_if_broken(self._op)
        if self._blocking or _blocking_wait() or timeout is not None:
            self._host_wait(timeout)
        if not self._waited:
            self._waited = True
            api = group._api
            with api.on_device(group._device):
                api.current_stream().wait_event(self._event)
                self._complete()     # post steps (copies out) queue behind the wait
        if self._exc is not None:
            raise self._exc
        return True

    def _host_wait(self, timeout):
        """Block the host until the collective finished, the group broke, or ``timeout``
        (the group's when None) passed -- polling the event, as blocking wait does."""
        group = self._group
        from ember.distributed.work import as_seconds
        limit = as_seconds(timeout, "Work.wait")
        limit = group.timeout.total_seconds() if limit is None else limit
        deadline = time.monotonic() + limit
        pause = 1e-5
        while not self._event.done:
            group._raise_if_broken(self._op)
            if time.monotonic() >= deadline:
                group._fail(f"{self.describe()} did not complete within {limit:.1f} s "
                            f"(waited on the host)")
                group._raise_if_broken(self._op)
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)
        group._raise_if_broken(self._op)

    def synchronize(self) -> None:
        self.wait()

    def get_future(self):
        with self._lock:
            if self._future is None:
                self._future = StreamFuture(self)
                Future.set_result(self._future, self._outputs)
            return self._future

    def _resolve(self, fut) -> None:   # completed at issue
        pass


class ProcessGroupNCCL(ProcessGroupBackend):
    name = "nccl"

    def __init__(self, context, backend, nccl):
        super().__init__(context)
        self.backend = backend
        self._nccl = nccl
        self._api = api = backend._api
        self._broken = None
        self._error = None
        self._seq = 0
        self._inflight = []
        self._lock = threading.Lock()
        self._device = choose_device(backend, context.rank)
        self._comm = self._communicator(context)
        with api.on_device(self._device):
            self._stream = api.new_stream(priority=-1, non_blocking=True)
        self._stream_wrapper = backend._wrap_stream(self._device, self._stream)
        self._stop = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, daemon=True,
                                          name=f"ember-nccl-watchdog-{context.group_name}")
        self._watchdog.start()

    # -- setup ------------------------------------------------------------------------------------
    def _communicator(self, context):
        import ember
        nccl, api = self._nccl, self._api
        data = None
        if context.rank == 0:
            raw = nccl.get_unique_id()
            data = bytes(raw) if isinstance(raw, (bytes, bytearray)) else \
                bytes((int(x) + 256) % 256 for x in raw)
        if context.size > 1:   # a world of one needs no exchange (nor MPI)
            uid = ember.zeros(128, dtype=ember.uint8)
            if data is not None:
                uid.copy_(ember.tensor(np.frombuffer(data, dtype=np.uint8).copy()))
            context.bootstrap._mpi().broadcast(uid, 0).wait()
            data = bytes(uid.numpy().tolist())
        result = {}
        done = threading.Event()

        def build():
            try:
                with api.on_device(self._device):
                    try:   # cupy 14 takes the id as bytes
                        comm = nccl.NcclCommunicator(context.size, data, context.rank)
                    except TypeError:   # cupy 13: a tuple of signed chars
                        comm = nccl.NcclCommunicator(
                            context.size, tuple(b if b < 128 else b - 256 for b in data),
                            context.rank)
                    result["comm"] = comm
            except BaseException as e:   # delivered to the caller below
                result["error"] = e
            finally:
                done.set()
        threading.Thread(target=build, daemon=True, name="ember-nccl-init").start()
        limit = self.timeout.total_seconds()
        if not done.wait(limit):
            raise DistBackendError(
                f"init_process_group: the NCCL communicator of process group "
                f"'{context.group_name}' was not built within {limit:.1f} s on rank "
                f"{context.rank} of {context.size} (cuda:{self._device}); a rank that did "
                f"not start or cannot reach the others keeps every rank waiting")
        if "error" in result:
            e = result["error"]
            raise DistBackendError(f"init_process_group: building the NCCL communicator failed "
                                   f"on rank {context.rank} of {context.size} "
                                   f"(cuda:{self._device}): {type(e).__name__}: {e}") from e
        return result["comm"]

    # -- failure ------------------------------------------------------------------------------------
    def _raise_if_broken(self, op) -> None:
        if self._error is not None:
            raise DistBackendError(f"{op}: process group '{self.context.group_name}' can't be "
                                   f"used any more: {self._error}")
        if self._broken is not None:
            raise DistBackendError(f"{op}: process group '{self.context.group_name}' can't be "
                                   f"used any more: {self._broken}")

    def _fail(self, message) -> None:
        """Break the group: abort the communicator (its kernels stop), remember the error for
        the next collective and the GPU's next synchronization."""
        with self._lock:
            if self._error is not None:
                return
            self._error = DistBackendError(message)
            inflight, self._inflight = self._inflight, []
        try:
            self._comm.abort()
        except Exception:   # already aborted or destroyed
            pass
        self.backend.report_async_error(self._device, self._error)
        for work in inflight:
            if not work._done.is_set():
                work._complete(self._error)

    def _watch(self) -> None:
        while not self._stop.wait(min(WATCHDOG_INTERVAL, self.timeout.total_seconds() / 4)):
            if self._error is not None or self._broken is not None:
                return
            self.check()

    def check(self) -> None:
        """One watchdog round: retire finished collectives, fail on a timed-out one or an
        asynchronous NCCL error."""
        now = time.monotonic()
        limit = self.timeout.total_seconds()
        with self._lock:
            inflight = list(self._inflight)
        finished = []
        for work in inflight:
            if work._event.done:
                finished.append(work)
            elif now - work._issued > limit:
                self._fail(f"{work.describe()} did not complete within {limit:.1f} s (the "
                           f"watchdog aborted the communicator; a rank failed or stopped "
                           f"calling collectives)")
                return
        with self._lock:
            self._inflight = [w for w in self._inflight if w not in finished]
        try:
            self._comm.check_async_error()
        except Exception as e:
            running = ", ".join(w.describe() for w in inflight if w not in finished) or \
                "no collective in flight"
            self._fail(f"NCCL reported an asynchronous error on rank {self.rank()} of "
                       f"{self.size()} (cuda:{self._device}): {type(e).__name__}: {e}; in "
                       f"flight: {running}")

    # -- issuing ----------------------------------------------------------------------------------
    def _check(self, op, tensors):
        self._raise_if_broken(op)
        for t in tensors:
            if t is not None and (t.device.type != self.backend.name or
                                  t.device.index != self._device):
                raise RuntimeError(f"{op}: the nccl group of rank {self.rank()} runs on "
                                   f"cuda:{self._device}, got a tensor on {t.device}")

    def _issue(self, op, tensors, outputs, start, blocking=False):
        self._check(op, tensors)
        api = self._api
        with api.on_device(self._device):
            ready = api.new_event(False, False, False)
            ready.record(api.current_stream())
            self._stream.wait_event(ready)
            start(self._stream.ptr)
            end = api.new_event(False, False, False)
            end.record(self._stream)
        for t in tensors:
            if t is not None:
                self.backend.record_stream(t, self._stream_wrapper)
        with self._lock:
            self._seq += 1
            work = NCCLWork(self, op, self._seq, end, outputs, blocking)
            self._inflight.append(work)
        return work

    def _ptr(self, t):
        return self._api.device_pointer(self.backend.native(t))

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
        """An all-reduce of one element whose ``wait()`` blocks the host, as PyTorch's does."""
        import ember
        with self._api.on_device(self._device):
            one = ember.ones(1, device=f"{self.backend.name}:{self._device}")
        n = self._nccl
        p = self._ptr(one)
        return self._issue("barrier", [one], [one], lambda s: self._comm.allReduce(
            p, p, 1, n.NCCL_FLOAT32, n.NCCL_SUM, s), blocking=True)

    # -- life cycle -------------------------------------------------------------------------------
    def abort(self, err=None) -> None:
        self._broken = err or "aborted"
        self._stop.set()
        try:
            self._comm.abort()
        except Exception:  # already aborted or destroyed
            pass

    def shutdown(self) -> None:
        self._stop.set()
        if self._broken is None:
            self._broken = "the process group was destroyed"
            try:
                self._comm.destroy()
            except Exception:
                pass


def choose_device(backend, rank) -> int:
    """The GPU of this rank: the program's choice (``ember.cuda.set_device``), else LOCAL_RANK,
    else the rank, modulo the visible GPUs; made current."""
    if backend.device_chosen:
        return backend.current_device()
    local = os.environ.get("LOCAL_RANK")
    index = (int(local) if local not in (None, "") else rank) % max(backend.device_count(), 1)
    backend.set_device(index)
    return index


def make_group(context):
    """The factory ``ember.distributed`` calls for ``backend="nccl"``."""
    from ember.runtime import registry
    reason = registry.unavailable_reason("cuda")
    if reason is not None:
        raise RuntimeError(f"init_process_group: the nccl backend needs CUDA, which is "
                           f"unavailable here: {reason}")
    backend = registry.get("cuda")
    return ProcessGroupNCCL(context, backend, backend._api.nccl_module())
