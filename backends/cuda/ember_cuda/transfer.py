"""Host <-> device and device <-> device copies, pinned host memory, DLPack.

* upload (``from_numpy``): a copy on the current stream; synchronous for pageable host memory
  (the caller may reuse its array at once), queued and returning at once with
  ``non_blocking=True`` from pinned memory (``Tensor.pin_memory()``), as in PyTorch;
* download (``to_numpy``, ``.cpu()``): waits for the current stream, except
  ``.to("cpu", non_blocking=True)``, which queues the copy into pinned memory and returns a CPU
  tensor whose values are valid once the stream is synchronized (PyTorch's contract); pinned
  blocks come from ember's stream-aware pool (``pinned.py``), never reused under a running copy;
* between two GPUs: a peer copy on the source's stream, with an event barrier each way
  (``between_devices``), the source made contiguous on its own device;
* DLPack both ways without copies (``ember.from_dlpack(cupy_array or torch_cuda_tensor)``,
  ``cupy.from_dlpack(tensor)``, ``torch.from_dlpack(tensor)``).
"""
from __future__ import annotations

import numpy as np

import ember
from ember.kit import ArrayBackend
from ember.runtime import registry, shape_of

from . import devices


def upload(be, array, device, non_blocking=False):
    api = be._api
    with api.on_device(device.index):
        if non_blocking and array.flags.c_contiguous and be.is_pinned_host(array):
            stream = api.current_stream()
            arr = api.from_host(array, stream=stream)
            be._pinned.record(array, stream)   # the block is not reused before the copy ran
        else:
            arr = api.from_host(array)
        return be.wrap(arr, device)


def download(be, tensor):
    """The tensor's values on the host: one wait for its device's current stream, which also
    covers the stream's device-assert records (queued to the host just before)."""
    api = be._api
    index = tensor.device.index
    with api.on_device(index):
        token = be._asserts.prefetch(index, api.current_stream())
        values = api.to_host(be.native(tensor))
    be._raise_async(index)
    be._asserts.verify(token, str(tensor.device))
    return values


def _host_values(src):
    return registry.get(src.device.type).to_numpy(src)


def copy_into(be, dst, src, non_blocking=False):
    """``dst[...] = src`` (casting like ``Tensor.to``); ``src`` on any device."""
    api = be._api
    if src.device.type != be.name:
        host = _host_values(src)
        with api.on_device(dst.device.index):
            d = be.native(dst)
            if host.dtype.kind == "c" and d.dtype.kind != "c":
                host = host.real
            if d.flags.c_contiguous and host.dtype == d.dtype and host.flags.c_contiguous:
                if host.size:
                    api.upload_into(d, host)
            else:
                d[...] = api.from_host(np.ascontiguousarray(host))
        return dst
    if src.device.index != dst.device.index:
        between_devices(be, be.native(dst), be.native(src))
        return dst
    with api.on_device(dst.device.index):
        return ArrayBackend.copy_(be, dst, src, non_blocking)


def between_devices(be, dst, src) -> None:
    """``dst[...] = src`` for arrays on two GPUs, ordered as PyTorch orders it: the source's
    stream first waits for the destination's (nothing still uses ``dst``), makes the source
    contiguous and of ``dst``'s dtype on the source's device, copies peer to peer, and the
    destination's stream then waits for the copy -- a barrier each way, no host wait."""
    api, xp = be._api, be.xp
    sdev, ddev = api.device_of(src), api.device_of(dst)
    if not dst.size:
        return
    with api.on_device(ddev):
        target = dst if dst.flags.c_contiguous else xp.empty(dst.shape, dtype=dst.dtype)
        dst_stream = api.current_stream()
        dst_ready = api.new_event(False, False, False)
        dst_ready.record(dst_stream)
    with api.on_device(sdev):
        src_stream = api.current_stream()
        src_stream.wait_event(dst_ready)
        if src.dtype != dst.dtype:
            s = xp.ascontiguousarray(src).astype(dst.dtype)
        else:
            s = src if src.flags.c_contiguous else xp.ascontiguousarray(src)
        api.peer_copy(target, s, src_stream)
        src_ready = api.new_event(False, False, False)
        src_ready.record(src_stream)
    with api.on_device(ddev):
        dst_stream.wait_event(src_ready)
        if target is not dst:
            dst[...] = target


def to_device(be, x, device, non_blocking):
    """The ``_to_device`` kernel for a CUDA tensor: to the CPU (pinned and queued when
    ``non_blocking``), to another GPU, or through the host to any other backend."""
    api = be._api
    if device.type == "cpu":
        if not non_blocking:
            return ember.from_numpy(download(be, x))
        a = be.native(x)
        with api.on_device(x.device.index):
            stream = api.current_stream()
            host = be._pinned.empty(a.shape, a.dtype)
            api.to_host(a, out=host, stream=stream, blocking=False)
            be._pinned.record(host, stream)   # dropped early, its block still waits for the copy
        return ember.from_numpy(host)
    if device.type == be.name:
        target = be._concrete(device)
        out = be.empty(shape_of(x), x.dtype, target)
        between_devices(be, be.native(out), be.native(x))
        return out
    return registry.get(device.type).from_numpy(download(be, x), device, non_blocking)


def pinned_copy(be, tensor):
    if tensor.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{tensor.device}' tensor of dtype {tensor.dtype}: only "
                           f"dense CPU tensors can be pinned")
    values = _host_values(tensor)
    host = be._pinned.empty(values.shape, values.dtype)
    host[...] = values
    return ember.from_numpy(host)


def to_dlpack(be, tensor, stream=None, **kwargs):
    api = be._api
    with api.on_device(tensor.device.index):
        return be.native(tensor).__dlpack__(stream=stream, **kwargs)


def from_dlpack(be, obj):
    arr = be._api.from_dlpack(obj)
    index = be._api.device_of(arr)
    devices.check_index(be, index)
    if any(s < 0 for s in arr.strides):
        raise BufferError("from_dlpack: negative strides are not supported; make a copy first")
    return be.wrap(arr, ember.device(be.name, index))


TABLE = {"_to_device": to_device}
