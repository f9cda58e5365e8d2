"""``CUDABackend``: the core's ``ArrayBackend`` with ``xp = cupy``.

Every kernel of the array-module kit runs as written (Chainer's one implementation); the backend
adds what only a GPU needs -- devices, cupy's memory pool with statistics, streams and events,
host transfers (pinned, non-blocking), DLPack -- and replaces the kit kernels whose numpy-shaped
path is wrong or slow on cupy: random numbers (Philox kernels, the OpenCL backend's numbers)
and accumulating index writes (deterministic, every dtype, multiply included). ``fft_module``
is ``cupyx.scipy.fft`` (cuFFT), which the kit's ``ember.fft`` kernels call.

Nothing imports cupy until the backend is asked whether it is available (the registry does that
on first use of the device); the answer and its reason come from ``discovery``.
"""
from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from ember.kit import ArrayBackend, gpu_common, register_array_kernels
from ember.kit.binding import bind
from ember.runtime import (Backend, are_deterministic_algorithms_enabled, data_of,
                           tensor_constructor)
from ember.runtime import dtypes as D

from . import (cupy_api, devices, discovery, gemm, kernels_indexing, kernels_random, linalg,
               prelude, transfer)
from .asserts import DeviceAsserts
from .launch import Program
from .memory import PoolAllocator
from .pinned import PinnedPool
from .streams import Event, Stream

CUDA_DTYPES = frozenset(D.ALL_DTYPES)

#: ops that run on bfloat16 as stored: GEMMs (GemmEx, float32 accumulation) and copies; every
#: other op computes bfloat16 in float32 and rounds its result once (``storage_dtypes``), unless
#: EMBER_CUDA_BF16=native asks cupy's own bfloat16 kernels to run everything (cupy 14's support
#: is young: a choice to measure on a GPU, bench/gpu_check.sh runs both)
BF16_NATIVE_OPS = frozenset({"_to_copy", "copy_", "matmul", "addmm", "convolution",
                             "convolution_backward"})


def _bf16_compute():
    return {} if os.environ.get("EMBER_CUDA_BF16") == "native" else {D.bfloat16: D.float32}


def _ieee(f, *args):
    return f(*args)  # cupy never warns on IEEE special values


class CUDABackend(ArrayBackend):
    name = "cuda"
    # ops that third-party libraries define with only a CPU kernel still run (with a warning)
    cpu_fallback = True
    dtypes = CUDA_DTYPES
    storage_native_ops = BF16_NATIVE_OPS
    half_matmul = True       # GemmEx multiplies float16/bfloat16 natively (gemm.py)
    #: im2col columns of at most this many bytes at once (EMBER_CUDA_CONV_WORKSPACE_MB, 1024 by
    #: default): chunks of the batch beyond it. A larger budget means fewer, larger GEMMs; the
    #: right value is a GPU measurement (bench/gpu_check.sh leaves it at the default)
    conv_workspace = int(os.environ.get("EMBER_CUDA_CONV_WORKSPACE_MB", "1024")) << 20
    Stream = Stream
    Event = Event  # Backend.__init__ binds a subclass to this backend: ember.cuda.Event()
    #: DLPack device types this backend imports (kDLCUDA)
    dlpack_device_types = (2,)
    xp = None        # the cupy namespace, set when the backend starts
    values_on_host = False   # reading a value waits for the GPU: kernels must not branch on data
    special = None   # cupyx.scipy.special
    fft_module = None   # cupyx.scipy.fft: cuFFT behind scipy.fft's signatures, for ember.fft
    fft_workers = False  # cuFFT takes no host-thread count

    def __init__(self, load_api=None):
        # ArrayBackend.__init__ reads xp; cupy is imported only when the backend starts
        Backend.__init__(self)
        self._load_api = load_api if load_api is not None else cupy_api.load
        self._api = None
        self._reason = None
        # re-entrant: registering kernels publishes events whose subscribers may ask back
        self._start_lock = threading.RLock()
        self._started = False
        self._programs = {}
        self._memories = {}
        self._streams = weakref.WeakValueDictionary()   # (device, cudaStream_t) -> Stream

    # -- start-up ---------------------------------------------------------------------------------
    def _start(self) -> None:
        if self._started or self._api is not None:
            return
        with self._start_lock:
            if self._started or self._api is not None:
                return
            try:
                api = self._load_api()
            except discovery.Unavailable as e:
                self._reason = str(e)
                self._started = True
                return
            self._use(api)
            self._started = True

    def _use(self, api) -> None:
        """Adopt ``api`` (a ``CupyAPI`` or a test's stand-in): array module, allocator, kernels."""
        self._api = api
        self.xp = api.xp
        self.special = api.special
        self.fft_module = api.fft_module
        self._ndarray = api.ndarray
        self._np2dt = {d.np: d for d in D.ALL_DTYPES if d.np is not None}
        self._layouts = {}
        self._new_tensor = tensor_constructor()
        self.ieee = _ieee
        self._asserts = DeviceAsserts(self)
        self._async_errors = {}
        self._constants = {}
        self._sync_mode = 0
        self._allocator = PoolAllocator(api)
        self._pinned = PinnedPool(api)
        self.storage_dtypes = _bf16_compute()
        register_array_kernels(self)
        for table in (kernels_random.TABLE, kernels_indexing.TABLE, transfer.TABLE, gemm.TABLE,
                      linalg.TABLE):
            bind(self, table)
        devices.place_kernels(self)

    def is_available(self) -> bool:
        self._start()
        return self._api is not None

    def unavailable_reason(self):
        self._start()
        return self._reason

    # -- devices ------------------------------------------------------------------------------------
    def device_count(self) -> int:
        self._start()
        return self._api.device_count if self._api is not None else 0

    def current_device(self) -> int:
        return self._api.get_device() if self._api is not None else 0

    #: True once the program chose a device (``set_device``): the NCCL group then keeps it
    #: instead of taking LOCAL_RANK's
    device_chosen = False

    def set_device(self, index: int) -> None:
        self._api.set_device(devices.check_index(self, index))
        self.device_chosen = True

    def device_name(self, index: int) -> str:
        return self.device_properties(index).name

    def device_properties(self, index: int):
        return devices.DeviceProperties(
            self._api.device_properties(devices.check_index(self, index)))

    def device_capability(self, index: int):
        p = self.device_properties(index)
        return p.major, p.minor

    def mem_get_info(self, index: int):
        return self._api.mem_get_info(devices.check_index(self, index))

    def device_details(self, index: int) -> dict:
        """Name, compute capability, memory and versions of device ``index``, for reports."""
        p = self.device_properties(index)
        v = self._api.versions()
        return {"name": p.name, "capability": f"{p.major}.{p.minor}",
                "memory": f"{p.total_memory // (1 << 20)} MiB", "cupy": v["cupy"],
                "cuda runtime": str(v["runtime"]), "driver": str(v["driver"])}

    def _concrete(self, device):
        if device.index is None:
            import ember
            return ember.device(self.name, self.current_device())
        devices.check_index(self, device.index)
        return device

    # -- the array-module specifics ---------------------------------------------------------------
    def _flat_bytes(self, arr):
        return self._api.flat_bytes(arr)

    def _view(self, flat, shape, np_dtype, offset_bytes, strides_bytes):
        return self._api.view(flat, shape, np_dtype, offset_bytes, strides_bytes)

    def matmul(self, a, b):
        """``a @ b`` of two arrays of one dtype: cuBLAS GemmEx for float16, bfloat16 and float32
        (``gemm.py``), cupy's matmul otherwise."""
        if gemm.native(a) and a.dtype == b.dtype:
            return gemm.product(self, a, b)
        return self.xp.matmul(a, b)

    def fft_operand(self, a):
        """cuFFT refuses an input not aligned to its complex type (CUFFT_INVALID_VALUE, seen on
        an H200 for a float32 row at a 60-byte offset: one example of a batch, as vmap passes
        it): such an input is copied."""
        return a if self._api.device_pointer(a) % 16 == 0 else a.copy()

    # -- accumulation: atomics, or a fixed order under use_deterministic_algorithms ----------------
    def add_at(self, op, target, key, values):
        """cupy's ``add.at`` (atomics: the order of the additions, and so the rounding, varies
        from run to run) -- or, under ``use_deterministic_algorithms``, the ordered kernel of
        ``kernels_indexing`` (the CPU's result, no atomics)."""
        if are_deterministic_algorithms_enabled():
            kernels_indexing.accumulate(self, target, key if isinstance(key, tuple) else (key,),
                                        values, "add")
        else:
            self.xp.add.at(target, key, values)

    def bincount(self, op, idx, weights, minlength):
        """cupy's ``bincount`` reads the largest index back to size its result: here the size is
        the caller's ``minlength`` and the counts go through ``add_at`` (no host read)."""
        xp = self.xp
        out = xp.zeros(minlength, dtype=np.float64 if weights is not None else np.int64)
        self.add_at(op, out, (idx,), weights if weights is not None else 1)
        return out

    def compile_pointwise(self, kernel):
        from .fusion import compile_pointwise
        return compile_pointwise(self, kernel)

    def program(self, key, source_fn) -> Program:
        """The compiled program ``key`` (``source_fn()`` is its CUDA C), built once."""
        prog = self._programs.get(key)
        if prog is None:
            prog = self._programs[key] = Program(self._api.compile(source_fn(), prelude.OPTIONS))
        return prog

    # -- storage and data movement ----------------------------------------------------------------
    def _check_dtype(self, dtype, device, op):
        if dtype not in self.dtypes:
            supported = ", ".join(x.name for x in D.ALL_DTYPES if x in self.dtypes)
            raise TypeError(f"{op}: dtype {dtype} is not supported on device '{device}' "
                            f"(backend 'cuda' computes in {supported})")

    def memory(self):
        """The context in which cupy allocates from ember's pool (every kernel runs in it)."""
        return self._api.using_allocator(self._allocator.malloc)

    def empty(self, shape, dtype, device):
        device = self._concrete(device)
        self._check_dtype(dtype, device, "empty")
        with self._api.on_device(device.index), self.memory():
            return self.wrap(self.xp.empty(shape, dtype=dtype.np), device)

    def from_numpy(self, array, device, non_blocking=False):
        device = self._concrete(device)
        self._check_dtype(D.from_numpy_dtype(array.dtype), device, "to")
        with self.memory():
            return transfer.upload(self, array, device, non_blocking)

    def to_numpy(self, tensor):
        return transfer.download(self, tensor)

    # a kit kernel computing on the host (scipy's Airy function) moves arrays of the current
    # device through these, as the CPU backend's identity versions
    def _to_host(self, arr):
        return self._api.to_host(arr)

    def _from_host(self, array):
        return self._api.from_host(array)

    def copy_(self, dst, src, non_blocking=False):
        with self.memory():
            return transfer.copy_into(self, dst, src, non_blocking)

    def record_stream(self, tensor, stream) -> None:
        """``Tensor.record_stream``: the tensor's memory is used by work queued on ``stream``;
        when the tensor is freed its block is not reused before that work has finished."""
        if tensor.device.type != self.name or stream is None:
            return
        owner = self._api.owner_of(data_of(tensor))
        if owner is not None and getattr(owner, "allocator", None) is self._allocator:
            self._allocator.record_stream(owner, stream._stream)

    def storage_nbytes(self, data) -> int:
        return data.nbytes

    # -- pinned host memory and DLPack ------------------------------------------------------------
    def pin_host(self, tensor):
        """A CPU tensor holding ``tensor``'s values in page-locked memory (``pin_memory``)."""
        return transfer.pinned_copy(self, tensor)

    def is_pinned_host(self, array) -> bool:
        return self._pinned.is_pinned(array) or self._api.is_pinned(array)

    def to_dlpack(self, tensor, stream=None, **kwargs):
        return transfer.to_dlpack(self, tensor, stream, **kwargs)

    def dlpack_device(self, tensor):
        return (2, tensor.device.index)

    def from_dlpack(self, obj):
        return transfer.from_dlpack(self, obj)

    # -- memory -------------------------------------------------------------------------------------
    def allocator(self, index: int):
        mem = self._memories.get(index)
        if mem is None:
            mem = self._memories[index] = self._allocator.device(devices.check_index(self, index))
        return mem

    # -- streams ------------------------------------------------------------------------------------
    def _wrap_stream(self, index, cupy_stream):
        key = (index, cupy_stream.ptr)
        s = self._streams.get(key)
        if s is None or s._stream is not cupy_stream:
            s = Stream(self, index, 0, _cupy_stream=cupy_stream)
            self._streams[key] = s
            if cupy_stream.ptr == 0:  # keep the default streams' wrappers
                self.__dict__.setdefault("_default_streams", {})[index] = s
        return s

    def current_stream(self, index: int):
        api = self._api
        with api.on_device(index):
            return self._wrap_stream(index, api.current_stream())

    def default_stream(self, index: int):
        return self._wrap_stream(index, self._api.null_stream())

    def set_stream(self, stream) -> None:
        with self._api.on_device(stream.device_index):
            stream._stream.use()

    def synchronize(self, index=None) -> None:
        index = self.current_device() if index is None else devices.check_index(self, index)
        token = self._asserts.prefetch(index)
        self._api.synchronize(index)
        self._raise_async(index)
        self._asserts.verify(token, f"{self.name}:{index}")

    # -- asynchronous errors ----------------------------------------------------------------------
    def report_async_error(self, index, exc) -> None:
        """An error found off the calling thread (the NCCL watchdog): raised at device
        ``index``'s next host synchronization, as CUDA reports its asynchronous errors."""
        self._async_errors.setdefault(index, exc)

    def _raise_async(self, index) -> None:
        exc = self._async_errors.pop(index, None)
        if exc is not None:
            raise exc

    # -- value checks and host synchronizations ---------------------------------------------------
    def host_constant(self, array, dtype=None):
        """A constant host table (pooling windows, divisors) uploaded once per device and
        dtype. The first upload waits for its copy (once), so that work on any stream may read
        the table afterwards without ordering against the stream that uploaded it."""
        api = self._api
        key = (id(array), None if dtype is None else np.dtype(dtype).str, api.get_device())
        hit = self._constants.get(key)
        if hit is not None and hit[0] is array:
            return hit[1]
        with self.memory():
            arr = self.xp.asarray(array if dtype is None else array.astype(dtype))
        api.stream_synchronize(api.current_stream())
        if len(self._constants) >= 1024:
            self._constants.clear()
        self._constants[key] = (array, arr)   # the host array kept: its id stays its own
        return arr

    def device_assert(self, op, bad, value, exc, message):
        """Record a kernel's value check on the device; raised at the next synchronization
        (``asserts.py``)."""
        with self.memory():
            self._asserts.record(op, bad, value, exc, message)

    def host_sync_count(self) -> int:
        """How many times the host has waited for the GPU through this backend (value reads,
        synchronizations, device-assert reads); on the simulated GPU every value read counts."""
        return self._api.syncs

    def set_sync_debug_mode(self, debug_mode) -> None:
        """PyTorch's ``torch.cuda.set_sync_debug_mode``: "default"/0 nothing, "warn"/1 a
        warning, "error"/2 an error at every host synchronization."""
        modes = {"default": 0, "warn": 1, "error": 2}
        mode = modes.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
        if mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        self._sync_mode = mode
        self._api.sync_hook = None if mode == 0 else self._synchronizing

    def get_sync_debug_mode(self) -> int:
        return self._sync_mode

    def _synchronizing(self, what):
        message = f"called a synchronizing CUDA operation ({what})"
        if self._sync_mode == 2:
            raise RuntimeError(message)
        import warnings
        warnings.warn(message, UserWarning, stacklevel=3)

    # -- random numbers -----------------------------------------------------------------------------
    def create_generator(self, index: int, seed: int):
        return gpu_common.PhiloxGenerator(seed)
