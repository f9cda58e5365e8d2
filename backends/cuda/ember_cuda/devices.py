"""Device placement: which device a kernel runs on, and device properties.

cupy runs a kernel on its *current* device (per host thread, like CUDA itself). On a machine with
one GPU nothing needs switching, so kernels run unwrapped; only the kernels that create tensors
on a named device (their op has a ``device`` argument) check its index, so ``device="cuda:1"``
on a one-GPU machine fails with a clear error instead of silently using GPU 0. With several GPUs,
every kernel makes the device of its first tensor (or its ``device`` argument) current first.
Every kernel runs with ember's pool as the thread's allocator (``backend.memory()``), so the
arrays it makes are ember's memory and a program's own cupy arrays are not.
"""
from __future__ import annotations

import inspect

from ember import Tensor, device as _device


def check_index(backend, index) -> int:
    count = backend.device_count()
    if index is None:
        return backend.current_device()
    if not 0 <= index < count:
        from .discovery import visible_devices_text
        raise RuntimeError(f"CUDA error: invalid device ordinal: {backend.name}:{index} requested, "
                           f"but {count} CUDA device(s) are visible (CUDA_VISIBLE_DEVICES "
                           f"{visible_devices_text()})")
    return index


def _index_in(args):
    """The CUDA device index an op's arguments name: its first tensor's, else its device's."""
    for a in args:
        if isinstance(a, Tensor):
            return a.device.index
        if a.__class__ is _device:
            return a.index
        if a.__class__ in (list, tuple) and a and isinstance(a[0], Tensor):
            return a[0].device.index
    return None


def creating(backend, kernel):
    """``kernel`` (which makes tensors on its ``device`` argument) after checking the index."""
    memory = backend.memory

    def run(*args):
        check_index(backend, _index_in(args))
        with memory():
            return kernel(*args)
    run.__wrapped__ = kernel
    return run


def switching(backend, kernel):
    """``kernel`` run with the device of its arguments current (several GPUs)."""
    api, memory = backend._api, backend.memory

    def run(*args):
        index = _index_in(args)
        if index is None or index == api.get_device():
            with memory():
                return kernel(*args)
        check_index(backend, index)
        with api.on_device(index), memory():
            return kernel(*args)
    run.__wrapped__ = kernel
    return run


def in_pool(backend, kernel):
    """``kernel`` allocating from ember's pool (one GPU, no device argument)."""
    memory = backend.memory

    def run(*args):
        with memory():
            return kernel(*args)
    run.__wrapped__ = kernel
    return run


def takes_device(kernel) -> bool:
    try:
        return "device" in inspect.signature(kernel).parameters
    except (TypeError, ValueError):
        return False


def place_kernels(backend) -> None:
    """Wrap the backend's kernels as the module docstring says; every kernel allocates from
    ember's pool (``memory.py``)."""
    table = backend.kernels
    several = backend._api.device_count > 1
    for name in table.names():
        fn = table.get(name)
        if several:
            table.register(name, switching(backend, fn))
        elif takes_device(fn):
            table.register(name, creating(backend, fn))
        else:
            table.register(name, in_pool(backend, fn))


class DeviceProperties:
    """``ember.cuda.get_device_properties(i)``: PyTorch's attribute names over the CUDA runtime's
    ``cudaDeviceProp``."""

    def __init__(self, props: dict):
        def text(v):
            return v.decode(errors="replace") if isinstance(v, (bytes, bytearray)) else str(v)
        self.name = text(props.get("name", "")).rstrip("\x00")
        self.major = int(props.get("major", 0))
        self.minor = int(props.get("minor", 0))
        self.total_memory = int(props.get("totalGlobalMem", 0))
        self.multi_processor_count = int(props.get("multiProcessorCount", 0))
        self.is_integrated = int(props.get("integrated", 0))
        self.is_multi_gpu_board = int(props.get("isMultiGpuBoard", 0))
        self.L2_cache_size = int(props.get("l2CacheSize", 0))
        self.warp_size = int(props.get("warpSize", 32))
        self.max_threads_per_multi_processor = int(props.get("maxThreadsPerMultiProcessor", 0))
        uuid = props.get("uuid", b"")
        self.uuid = (uuid.hex() if isinstance(uuid, (bytes, bytearray)) else text(uuid))
        self.pci_bus_id = int(props.get("pciBusID", 0))

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // (1 << 20)}MB)")
