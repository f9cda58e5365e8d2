"""``OpenCLBackend``: devices, memory, streams and data movement; kernels come from ``ops_*``.

Importing this module does not import pyopencl: discovery runs on the first question asked
(``is_available``, ``device_count``...) and a device's context on its first use.
"""
from __future__ import annotations

import math
import threading

import ember
from ember.kit import gpu_common
from ember.runtime import Backend, Storage, contiguous_strides, tensor_constructor
from ember.runtime import dtypes as D

from . import (cltypes, deferred, ops_argreduce, ops_attention, ops_conv, ops_copy, ops_ctc,
               ops_distances, ops_elementwise, ops_embedding_bag, ops_factories, ops_fft,
               ops_foreach, ops_grid_sampling, ops_indexing, ops_layer_norm, ops_linalg,
               ops_linalg_decomp, ops_loss, ops_norm, ops_pool, ops_random, ops_reduction,
               ops_resampling, ops_rnn, ops_sampling, ops_scan, ops_shape, ops_softmax, ops_sort,
               ops_spatial, ops_special, ops_ternary, transfer)
from .device import Devices
from .streams import Event, Stream


# kernels that compute on complex64/complex128 natively: arithmetic, abs, conj, comparisons,
# data movement, sums and the FFTs (angle, sgn, complex, polar and the part views are
# composites of these); other ops take complex inputs through the CPU fallback
COMPLEX_KERNELS = frozenset({
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "neg_", "positive",
    "abs", "conj_physical", "conj_physical_", "square", "square_", "reciprocal", "reciprocal_",
    "exp", "exp_", "log", "log_", "sqrt", "sqrt_", "isnan", "isinf", "isfinite", "eq", "ne",
    "where", "_to_copy", "copy_", "full", "fill_", "cat", "flip", "roll", "tile", "sum", "mean",
    "_fft_c2c", "_fft_r2c", "_fft_c2r",
})


# the kernel modules, one per op family: each binds its TABLE in register(backend) (a later
# module's kernel replaces an earlier one's for the same op)
KERNEL_MODULES = (
    ops_copy, ops_elementwise, ops_factories, ops_reduction, ops_linalg, ops_shape, ops_random,
    ops_indexing, ops_argreduce, ops_softmax, ops_scan, ops_sort, ops_special, ops_linalg_decomp,
    ops_sampling, ops_attention, ops_ternary, ops_spatial, ops_resampling, ops_grid_sampling,
    ops_embedding_bag, ops_distances, ops_ctc, ops_rnn, ops_fft, ops_conv, ops_pool, ops_norm,
    ops_layer_norm, ops_foreach, ops_loss,
)


class OpenCLBackend(Backend):
    name = "opencl"
    # reductions, linalg, indexing, sorting and random run on the CPU until they have kernels
    cpu_fallback = True
    Stream = Stream
    Event = Event  # Backend.__init__ binds a subclass to this backend: ember.opencl.Event()
    # bfloat16: stored as 16 bits, computed through float32 (no OpenCL device has the type)
    storage_dtypes = cltypes.STORAGE_DTYPES
    storage_native_ops = frozenset({"_to_copy", "copy_"})

    def __init__(self):
        super().__init__()
        self._devices = Devices(self)
        self._tls = threading.local()
        self._dtypes = None
        self._real_dtypes = None
        self._construct = tensor_constructor()  # every kernel output is made here: no checks
        self._fft_plan_caches = {}
        for module in KERNEL_MODULES:
            module.register(self)

    # -- availability, devices, capabilities ----------------------------------------------------
    def is_available(self) -> bool:
        return bool(self._devices.discovery.devices)

    def unavailable_reason(self):
        return self._devices.discovery.reason

    def device_count(self) -> int:
        return self._devices.count()

    def device_name(self, index: int) -> str:
        d = self._devices.discovery.devices[index]
        return f"{d.name.strip()} ({d.platform.name.strip()})"

    def skipped_devices(self) -> list:
        """``(platform: device, reason)`` for each OpenCL device seen but not used: its compiler
        cannot build a kernel here, or ``EMBER_OPENCL_DEVICE`` did not select it."""
        return list(self._devices.discovery.left_out)

    def device_details(self, index: int) -> dict:
        """Platform and driver of device ``index``, for reports."""
        d = self._devices.discovery.devices[index]
        return {"name": d.name.strip(), "platform": d.platform.name.strip(),
                "platform_version": d.platform.version.strip(), "driver": d.driver_version.strip()}

    @property
    def dtypes(self):
        """What every visible device computes in (the dispatcher checks per backend, so a
        dtype one device lacks is refused on all)."""
        if self._dtypes is None:
            devices = self._devices.discovery.devices
            if not devices:
                return cltypes.BASE_DTYPES
            common = cltypes.supported_dtypes(devices[0].extensions)
            for d in devices[1:]:
                common &= cltypes.supported_dtypes(d.extensions)
            self._dtypes = common
        return self._dtypes

    def kernel_dtypes(self, op_name):
        """Every dtype for the kernels written for complex values too (``COMPLEX_KERNELS``);
        the real dtypes for the rest, whose complex inputs run through the CPU fallback."""
        if op_name in COMPLEX_KERNELS:
            return self.dtypes
        if self._real_dtypes is None:
            self._real_dtypes = frozenset(d for d in self.dtypes if d.category != D.COMPLEX)
        return self._real_dtypes

    def _check_dtype(self, dtype, device, op):
        if dtype not in self.dtypes:
            supported = ", ".join(x.name for x in D.all_dtypes if x in self.dtypes)
            hint = ("; float64 and complex128 need the cl_khr_fp64 extension, which this "
                    "device lacks" if dtype in (D.float64, D.complex128) else "")
            raise TypeError(f"{op}: dtype {dtype} is not supported on device '{device}' "
                            f"(backend '{self.name}' supports {supported}{hint})")

    # -- the hot path helpers used by every kernel ----------------------------------------------
    def compile_pointwise(self, kernel):
        from .fusion import compile_pointwise
        return compile_pointwise(self, kernel)

    def state_queue(self, device):
        """(device state, queue of the current stream) for ``device``."""
        idx = device.index
        st = self._devices._states.get(idx)
        if st is None:
            st = self._devices.state(idx)
        cur = self._tls.__dict__.get("streams")
        s = cur.get(st.index) if cur else None
        return st, (s.queue if s is not None else st.default_queue)

    def new_tensor(self, st, shape, dtype, device):
        """A fresh C-contiguous tensor from the device's caching allocator."""
        nbytes = math.prod(shape) * dtype.itemsize
        block = st.allocator.allocate(nbytes)
        storage = Storage(block.handle, nbytes, device)
        storage.cache = block  # holding the block keeps the buffer out of the cache
        return self._construct(storage, tuple(shape), contiguous_strides(shape), 0, dtype,
                                device, None)

    # -- storage and data movement ----------------------------------------------------------------
    def empty(self, shape, dtype, device):
        self._check_dtype(dtype, device, "empty")
        return self.new_tensor(self.state_queue(device)[0], shape, dtype, self._concrete(device))

    def from_numpy(self, array, device, non_blocking=False):
        dtype = D.from_numpy_dtype(array.dtype)
        device = self._concrete(device)
        self._check_dtype(dtype, device, "to")
        st, q = self.state_queue(device)
        return transfer.upload(st, q, self.new_tensor(st, array.shape, dtype, device), array)

    def to_numpy(self, tensor):
        return transfer.download(self, tensor)

    def copy_(self, dst, src, non_blocking=False):
        return transfer.copy_(self, dst, src)

    def storage_nbytes(self, data) -> int:
        return data.size

    def _concrete(self, device):
        if device.index is None:
            return ember.device(self.name, self.current_device())
        return device

    # -- profiling --------------------------------------------------------------------------------
    def start_kernel_timing(self, owner):
        """Time every command queued from now on (``ember.profiler``'s device activity);
        ``owner()`` names the op that queues it."""
        from . import timing
        timing.start(self, owner)

    def stop_kernel_timing(self) -> list:
        from . import timing
        return timing.stop(self)
    # -- FFT plans ------------------------------------------------------------------------------
    def fft_plan_cache(self, index=None):
        """Device ``index``'s FFT plan cache (``size``, ``max_size``, ``clear()``: PyTorch's
        ``cufft_plan_cache``); the current device when None."""
        from .fft_plans import PlanCache
        if index is None:
            index = self.current_device()
        if not 0 <= index < self.device_count():
            raise RuntimeError(f"opencl: invalid device index {index} for the FFT plan cache "
                               f"({self.device_count()} device(s))")
        cache = self._fft_plan_caches.get(index)
        if cache is None:
            cache = self._fft_plan_caches.setdefault(index, PlanCache())
        return cache

    # -- random numbers: Philox on the device (ops_random) ---------------------------------------
    def create_generator(self, index: int, seed: int):
        return gpu_common.PhiloxGenerator(seed)

    # -- memory -----------------------------------------------------------------------------------
    def allocator(self, index: int):
        return self._devices.state(index).allocator

    # -- streams ----------------------------------------------------------------------------------
    def current_stream(self, index: int):
        cur = self._tls.__dict__.get("streams")
        s = cur.get(index) if cur else None
        return s if s is not None else self._devices.state(index).default_stream

    def set_stream(self, stream) -> None:
        self._tls.__dict__.setdefault("streams", {})[stream.device_index] = stream

    def synchronize(self, index=None) -> None:
        """Wait for every queue of device ``index`` (the current device when None)."""
        if index is None:
            index = self.current_device()
        st = self._devices._states.get(index)
        if st is None:
            if not 0 <= index < self.device_count():
                raise RuntimeError(f"opencl: invalid device index {index}")
            return  # never used: nothing queued
        for queue in st.queues():
            queue.finish()
        st.inflight = []
        deferred.check(st, st.default_queue)
