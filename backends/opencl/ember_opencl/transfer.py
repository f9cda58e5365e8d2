"""Host <-> device copies and device copies with conversion.

Nothing here waits for the device except ``to_numpy`` (the host needs the values). Host-to-device
writes are queued without blocking from a private host copy; pyopencl ties that copy's lifetime
to the transfer's event, and its event waits for the transfer when it is collected, so the
events are kept in ``state.inflight`` until they are known to be done.
"""
from __future__ import annotations

import numpy as np

from ember.runtime import (data_of, get_op, layout_of, offset_of, registry, shape_of,
                           storage_of)

from . import deferred
from .codegen import Body, run

COPY = Body("copy", "r = x0;", kinds="fibc", any_output=True)
_INFLIGHT_MAX = 64


def _keep(state, event):
    """Hold ``event`` until done; drop finished ones now and then (never blocks)."""
    import pyopencl as cl
    lst = state.inflight
    lst.append(event)
    if len(lst) > _INFLIGHT_MAX:
        done = cl.command_execution_status.COMPLETE
        state.inflight = [e for e in lst if e.command_execution_status != done]


def upload(state, queue, dst, array):
    """Write the host ``array`` (any strides) into the contiguous tensor ``dst``."""
    import pyopencl as cl
    if array.size == 0:
        return dst
    host = np.array(array, dtype=array.dtype, order="C", copy=True)  # private: caller may reuse
    ev = cl.enqueue_copy(queue, data_of(dst), host, dst_offset=offset_of(dst) * host.itemsize,
                         is_blocking=False)
    _keep(state, ev)
    state.last[queue] = ev
    return dst


def download(backend, tensor):
    """The tensor's values in a fresh host array; blocks until they are computed."""
    import pyopencl as cl
    host = np.empty(shape_of(tensor), dtype=tensor.dtype.np)
    if host.size == 0:
        return host
    st, q = backend.state_queue(tensor.device)
    src = tensor
    if not tensor.is_contiguous():
        src = backend.new_tensor(st, shape_of(tensor), tensor.dtype, tensor.device)
        run(st, q, COPY, src, (tensor,), (tensor.dtype,), tensor.dtype, tensor.dtype)
    cl.enqueue_copy(q, host, data_of(src), src_offset=offset_of(src) * host.itemsize,
                    is_blocking=True)
    deferred.check(st, q)  # errors found by earlier kernels surface where the host waits
    return host


def copy_into(backend, st, q, dst, src):
    """dst[...] = src for two tensors of this device (any strides, dtypes may differ)."""
    import pyopencl as cl
    shared = storage_of(src) is storage_of(dst)
    if shared and layout_of(src) != layout_of(dst):
        snapshot = backend.new_tensor(st, shape_of(src), src.dtype, src.device)
        src = copy_into(backend, st, q, snapshot, src)  # overlapping layouts: read a snapshot
        shared = False
    n = dst.numel()
    if n and src.dtype is dst.dtype and not shared and dst.is_contiguous() and \
            src.is_contiguous():
        isz = dst.dtype.itemsize
        st.last[q] = cl.enqueue_copy(q, data_of(dst), data_of(src),
                                     byte_count=n * isz, src_offset=offset_of(src) * isz,
                                     dst_offset=offset_of(dst) * isz)
        return dst
    return run(st, q, COPY, dst, (src,), (src.dtype,), src.dtype, src.dtype)


def copy_(backend, dst, src):
    """``dst.copy_(src)``; ``src`` may live on another device or backend (the CPU fallback
    writes results back this way)."""
    st, q = backend.state_queue(dst.device)
    if src.device is not dst.device:
        host = registry.get(src.device.type).to_numpy(src)
        if host.dtype != dst.dtype.np:  # convert on the host: src's dtype may not exist here
            host = (host.real if host.dtype.kind == "c" else host).astype(dst.dtype.np)
        src = upload(st, q, backend.new_tensor(st, host.shape, dst.dtype, dst.device), host)
    if shape_of(src) != shape_of(dst):
        src = get_op("expand")(src, shape_of(dst))
    return copy_into(backend, st, q, dst, src)
