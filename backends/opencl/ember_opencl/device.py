"""Finding OpenCL devices and the per-device state (context, default queue, allocator, caches).

Devices from every platform are listed GPUs first, then accelerators, then CPUs (platform order
kept within a kind), so ``opencl:0`` is the fastest device a machine is likely to have.
``EMBER_OPENCL_DEVICE`` restricts the list to the devices matching any of its comma-separated
entries, each an index into the full list or a case-insensitive substring of the
"platform: device" name, in the order given: ``1``, ``nvidia``, ``portable,intel``.
"""
from __future__ import annotations

import collections
import os
import threading

from ember.runtime import dtypes as D

from . import compiler_check

ENV = "EMBER_OPENCL_DEVICE"


class Discovery:
    """The outcome of looking for devices once: the devices, or why there are none."""

    def __init__(self, devices, reason=None, listing=(), left_out=()):
        self.devices = devices      # pyopencl Device objects, in ember index order
        self.reason = reason        # None when at least one device is usable
        self.listing = listing      # "platform: device" of every device seen, for messages
        self.left_out = list(left_out)  # ("platform: device", why) of devices not used


def discover() -> Discovery:
    try:
        import pyopencl as cl
    except Exception as e:  # ImportError, or a broken ICD loader raising at import
        return Discovery([], f"pyopencl can't be imported ({type(e).__name__}: {e}); install "
                             f"it with `pip install 'ember[opencl]'`")
    from .binaries import use_private_driver_cache
    use_private_driver_cache()  # before the driver reads its settings
    try:
        platforms = cl.get_platforms()
    except Exception as e:  # cl.LogicError PLATFORM_NOT_FOUND_KHR when no ICD is installed
        return Discovery([], f"no OpenCL platform found ({e}); install a driver (an ICD), e.g. "
                             f"`pip install pocl-binary-distribution` for a CPU device")
    found, broken, left_out = [], [], []
    for p_i, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except Exception:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
        for d_i, d in enumerate(devs):
            problem = compiler_check.problem(cl, p_i, d_i, d)
            if problem is not None:
                broken.append(f"{p.name.strip()}: {d.name.strip()}: {problem}")
                left_out.append((f"{p.name.strip()}: {d.name.strip()}{_driver(d)}",
                                 f"cannot compile: {problem}"))
                continue
            rank = 0 if d.type & cl.device_type.GPU else 1 if d.type & cl.device_type.ACCELERATOR \
                else 2
            found.append((rank, p_i, d_i, d, f"{p.name.strip()}: {d.name.strip()}"))
    if not found and broken:
        return Discovery([], "no OpenCL device can compile a kernel: " + "; ".join(broken)
                         + _UNKNOWN_CPU_HINT * any(sign in b for b in broken
                                                   for sign in _UNKNOWN_CPU_SIGNS))
    if not found:
        return Discovery([], "OpenCL platforms exist but none has a device ("
                             + ", ".join(p.name for p in platforms) + ")")
    found.sort(key=lambda x: x[:3])
    listing = [f"{i}: {x[4]}" for i, x in enumerate(found)]
    chosen = _select([x[4] for x in found], os.environ.get(ENV, "").strip())
    if isinstance(chosen, str):
        return Discovery([], chosen, listing, left_out)
    left_out += [(found[i][4], f"not selected by {ENV}={os.environ.get(ENV, '').strip()!r}")
                 for i in range(len(found)) if i not in chosen]
    # devices that cannot compile are left out of the device list when another one works (with
    # a second PoCL installed beside the wheel's, both list the same CPU and only one of them
    # builds); `ember info` shows them with their reason
    return Discovery([found[i][3] for i in chosen], None, listing, left_out)


_UNKNOWN_CPU_HINT = (
    " (the LLVM inside this PoCL does not know this CPU model, which happens with the PoCL 3.0 "
    "bundled with the pyopencl wheels on CPUs newer than LLVM 14: it refuses every program on "
    "AMD Zen 5 and aborts on vector code on AMD Zen 4; a newer PoCL such as Debian's "
    "`apt install pocl-opencl-icd` works)")
_UNKNOWN_CPU_SIGNS = ("unknown target CPU", "LLVM ERROR", "the compiler crashed")


def _driver(device) -> str:
    """The " (driver X)" suffix of a listing; empty when a device that already failed to build
    will not even report its driver version."""
    try:
        return f" (driver {device.driver_version.strip()})"
    except Exception:
        return ""


def _select(names, spec):
    """Indices of ``names`` chosen by ``spec`` (see the module doc), or an error message."""
    if not spec:
        return list(range(len(names)))
    chosen = []
    for part in (s.strip() for s in spec.split(",")):
        if part.isdigit():
            hits = [int(part)] if int(part) < len(names) else []
        else:
            hits = [i for i, n in enumerate(names) if part and part.lower() in n.lower()]
        chosen.extend(i for i in hits if i not in chosen)
    if not chosen:
        return (f"{ENV}={spec!r} matches no device; devices: "
                + "; ".join(f"{i}: {n}" for i, n in enumerate(names)))
    return chosen


class DeviceState:
    """Everything ember keeps for one OpenCL device; made on the device's first use."""

    def __init__(self, backend, index, cl_device):
        import pyopencl as cl

        from . import cltypes
        from .memory import DeviceAllocator
        from .streams import Stream
        self.backend = backend
        self.index = index
        self.device = cl_device
        self.context = cl.Context([cl_device])
        self.dtypes = cltypes.supported_dtypes(cl_device.extensions)
        self.fp64 = "cl_khr_fp64" in cl_device.extensions
        self.wide = D.float64 if self.fp64 else D.float32
        self.max_alloc = cl_device.max_mem_alloc_size
        self.max_wg = cl_device.max_work_group_size
        # a fixed work-group size: left to the runtime, PoCL picks one per global size and
        # compiles the kernel again for each (~0.1 s every time a new size shows up)
        self.local_size = 64 if self.max_wg >= 64 else 1 << (self.max_wg.bit_length() - 1)
        self.local_sizes = (self.local_size,)
        self.compute_units = cl_device.max_compute_units
        self.name = f"opencl:{index}"
        # every queue this device has, default first; the allocator reads it to decide whether a
        # freed block may still be in use on another queue
        self.streams = []
        self.pool_next = 0      # the pool queue the next ember.opencl.Stream() shares
        self.lock = threading.Lock()
        self.launch_lock = threading.Lock()
        self.default_stream = Stream(backend, index, 0, _state=self)
        self.default_queue = self.default_stream.queue
        self.inflight = []      # host->device copies not known to be done (see transfer)
        self.last = {}          # queue -> event of the last command queued on it (Stream.query)
        self.allocator = DeviceAllocator(self)
        self.kernels = {}       # key -> compiled kernel (see codegen)
        self.meta = {}          # layout key -> (rank, int64 metadata buffer)
        self.packed = collections.OrderedDict()   # GEMM operand packs (ops_linalg._packed)
        self._err = None        # error-flag buffer, made on first use

    @property
    def err_buffer(self):
        if self._err is None:
            import numpy as np
            import pyopencl as cl
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
            self._err = cl.Buffer(self.context, flags, hostbuf=np.zeros(1, np.int32))
        return self._err

    def queues(self):
        return [s.queue for s in self.streams]

    def describe(self) -> str:
        d = self.device
        return f"{d.name.strip()} ({d.platform.name.strip()})"


class Devices:
    """Lazy discovery plus per-index state, shared by the backend's methods."""

    def __init__(self, backend):
        self.backend = backend
        self._discovery = None
        self._states = {}
        self._lock = threading.Lock()

    @property
    def discovery(self) -> Discovery:
        if self._discovery is None:
            with self._lock:
                if self._discovery is None:
                    self._discovery = discover()
        return self._discovery

    def count(self) -> int:
        return len(self.discovery.devices)

    def state(self, index) -> DeviceState:
        st = self._states.get(index)
        if st is None:
            devices = self.discovery.devices
            if index is None:
                index = self.backend.current_device()
                st = self._states.get(index)
                if st is not None:
                    return st
            if not 0 <= index < len(devices):
                raise RuntimeError(f"opencl: invalid device index {index}; this machine has "
                                   f"{len(devices)} OpenCL device(s)")
            with self._lock:
                st = self._states.get(index)
                if st is None:
                    st = self._states[index] = DeviceState(self.backend, index, devices[index])
        return st

    def started(self):
        """States of the devices used so far."""
        return list(self._states.values())
