"""Every call the backend makes into cupy, behind one object (``CupyAPI``).

The backend's own logic (devices, memory statistics, streams, copies, kernel wiring) talks to
CUDA only through this object, so the tests can hand it a numpy-backed stand-in and run that
logic -- and the whole conformance suite -- without a GPU. Only this module names cupy APIs.
"""
from __future__ import annotations

import contextlib
import os
import types

import numpy as np


def array_module(cupy):
    """cupy as the kit's ``xp``: cupy itself plus ``errstate``, which numpy-shaped kernels use to
    silence IEEE warnings; cupy never warns on them, so it is a null context here."""
    xp = types.ModuleType("ember_cuda.xp", "cupy, as the array-module kit's xp")
    xp.__dict__.update({k: v for k, v in vars(cupy).items() if not k.startswith("__")})
    xp.errstate = _quiet
    return xp


@contextlib.contextmanager
def _quiet(**kwargs):
    yield


class _ThreadAllocator:
    __slots__ = ("_get", "_put", "_malloc", "_prev")

    def __init__(self, get, put, malloc):
        self._get, self._put, self._malloc = get, put, malloc

    def __enter__(self):
        self._prev = self._get()
        self._put(self._malloc)

    def __exit__(self, *exc):
        self._put(self._prev)


class CupyAPI:
    """cupy for a backend: arrays (``xp``), devices, memory, streams, events, NVRTC programs,
    host transfers and DLPack. ``device_count`` is fixed at construction (discovery)."""

    is_fake = False

    def __init__(self, cupy, device_count: int):
        import cupyx
        import cupyx.scipy.fft
        import cupyx.scipy.special
        self.cupy = cupy
        self.cupyx = cupyx
        self.xp = array_module(cupy)
        self.special = cupyx.scipy.special
        self.fft_module = cupyx.scipy.fft   # scipy.fft's signatures on cuFFT
        self.ndarray = cupy.ndarray
        self.device_count = device_count
        self.oom_errors = (cupy.cuda.memory.OutOfMemoryError,)
        self._runtime = cupy.cuda.runtime
        self.syncs = 0           # host synchronizations issued through this object
        self.sync_hook = None    # called with what synchronized (ember.cuda.set_sync_debug_mode)

    def _synchronizing(self, what: str) -> None:
        self.syncs += 1
        if self.sync_hook is not None:
            self.sync_hook(what)

    # -- devices ----------------------------------------------------------------------------------
    def get_device(self) -> int:
        return self._runtime.getDevice()

    def set_device(self, index: int) -> None:
        self._runtime.setDevice(index)

    def on_device(self, index: int):
        """A context in which ``index`` is the current device."""
        return self.cupy.cuda.Device(index)

    def device_properties(self, index: int) -> dict:
        return self._runtime.getDeviceProperties(index)

    def mem_get_info(self, index: int):
        """(free, total) bytes of device ``index``, as the driver reports them."""
        with self.cupy.cuda.Device(index):
            return self._runtime.memGetInfo()

    def synchronize(self, index: int) -> None:
        self._synchronizing("synchronize")
        with self.cupy.cuda.Device(index):
            self._runtime.deviceSynchronize()

    def stream_synchronize(self, stream) -> None:
        self._synchronizing("stream.synchronize")
        stream.synchronize()

    def event_synchronize(self, event) -> None:
        self._synchronizing("event.synchronize")
        event.synchronize()

    def versions(self) -> dict:
        rt = self._runtime
        return {"cupy": self.cupy.__version__, "runtime": rt.runtimeGetVersion(),
                "driver": rt.driverGetVersion()}

    # -- arrays over device memory ----------------------------------------------------------------
    def flat_bytes(self, arr):
        """A 1-D uint8 array over all the memory ``arr`` spans (strides >= 0)."""
        cp = self.cupy
        if arr.size == 0:
            return cp.empty(0, dtype=np.uint8)
        extent = arr.itemsize + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides))
        return cp.ndarray((extent,), dtype=np.uint8, memptr=arr.data)

    def view(self, flat, shape, np_dtype, offset_bytes, strides_bytes):
        return self.cupy.ndarray(shape, np_dtype, memptr=flat.data + offset_bytes,
                                 strides=strides_bytes)

    def to_host(self, arr, out=None, stream=None, blocking=True):
        """Copy ``arr`` into the host array ``out`` (a new one when None) on ``stream`` (the
        current one when None); ``blocking=False`` queues the copy and returns at once (``out``
        must then be pinned, and is valid after the stream synchronizes)."""
        if blocking:
            self._synchronizing("copy to host")
        return arr.get(stream=stream, out=out, blocking=blocking)

    def from_host(self, host, stream=None):
        """A new contiguous device array holding ``host`` (copied; queued on ``stream``)."""
        arr = self.cupy.empty(host.shape, dtype=host.dtype)
        if host.size:
            # np.ascontiguousarray makes a 0-d array 1-d, which ``set`` refuses
            arr.set(np.asarray(host, order="C"), stream=stream)
        return arr

    def pinned_alloc(self, nbytes):
        """``nbytes`` of page-locked host memory of its own (``cudaHostAlloc``; not cupy's
        pinned pool): an object with ``ptr`` that frees the memory when collected."""
        return self.cupy.cuda.PinnedMemory(nbytes)

    def is_pinned(self, host) -> bool:
        if host.size == 0:
            return False
        return bool(self.cupy.cuda.pinned_memory.is_memory_pinned(host.ctypes.data))

    def device_of(self, arr) -> int:
        return arr.device.id

    def peer_copy(self, dst, src, stream) -> None:
        """Copy the bytes of contiguous ``src`` into contiguous ``dst`` (same size, any two
        devices: peer to peer where the devices allow, staged by the driver elsewhere), queued
        on ``stream``."""
        dst.data.copy_from_device_async(src.data, src.nbytes, stream)

    def upload_into(self, dst, host) -> None:
        """Copy the contiguous host array ``host`` into contiguous ``dst`` (synchronous)."""
        dst.set(host)

    # -- memory -------------------------------------------------------------------------------------
    def memory_pool(self):
        return self.cupy.cuda.MemoryPool()

    def using_allocator(self, malloc):
        """A context in which ``malloc(nbytes) -> MemoryPointer`` serves the allocations of the
        calling thread (cupy's own arrays elsewhere keep cupy's allocator): cupy's
        ``using_allocator`` without its generator (every kernel enters one)."""
        memory = self.cupy.cuda.memory
        get = getattr(memory, "_get_thread_local_allocator", None)
        put = getattr(memory, "_set_thread_local_allocator", None)
        if get is None or put is None:
            return self.cupy.cuda.using_allocator(malloc)
        return _ThreadAllocator(get, put, malloc)

    def owner_of(self, arr):
        """The owner object a ``tracked_pointer`` gave the memory of ``arr`` (None for memory
        ember's allocator did not make)."""
        return getattr(arr.data.mem, "_owner", None)

    def tracked_pointer(self, pooled, owner):
        """A MemoryPointer to ``pooled``'s memory that keeps ``owner`` alive while it lives."""
        cuda = self.cupy.cuda
        mem = cuda.UnownedMemory(pooled.ptr, pooled.mem.size, owner, pooled.device_id)
        return cuda.MemoryPointer(mem, 0)

    # -- streams and events -------------------------------------------------------------------------
    def null_stream(self):
        return self.cupy.cuda.Stream.null

    def new_stream(self, priority=0, non_blocking=True):
        """A new stream; non-blocking (PyTorch's streams are): it does not synchronize with the
        legacy default stream, so work on it overlaps with the default stream's."""
        return self.cupy.cuda.Stream(non_blocking=non_blocking, priority=priority)

    def current_stream(self):
        return self.cupy.cuda.get_current_stream()

    def new_event(self, enable_timing, blocking, interprocess):
        return self.cupy.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                    interprocess=interprocess)

    def elapsed_ms(self, start, end) -> float:
        return self.cupy.cuda.get_elapsed_time(start, end)

    # -- cuBLAS ----------------------------------------------------------------------------------------
    def gemm(self, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
             ldc, stride_c, batch, data_type, compute_type) -> None:
        """cublasGemmStridedBatchedEx on the current stream: column-major ``C = alpha op(A)
        op(B) + beta C`` for ``batch`` matrices (strides in elements), one data type for A, B
        and C, host scalars of the compute type's precision."""
        from cupy_backends.cuda.libs import cublas
        handle = self.cupy.cuda.device.get_cublas_handle()
        scalar = np.float64 if compute_type in (70, 71) else np.float32
        al, be = np.array(alpha, dtype=scalar), np.array(beta, dtype=scalar)
        cublas.setPointerMode(handle, 0)   # CUBLAS_POINTER_MODE_HOST: the scalars above
        cublas.gemmStridedBatchedEx(
            handle, transa, transb, m, n, k, al.ctypes.data, a.data.ptr, data_type, lda,
            stride_a, b.data.ptr, data_type, ldb, stride_b, be.ctypes.data, c.data.ptr,
            data_type, ldc, stride_c, batch, compute_type, -1)   # -1: CUBLAS_GEMM_DEFAULT

    # -- cuSOLVER -------------------------------------------------------------------------------------
    @property
    def scipy_linalg(self):
        import cupyx.scipy.linalg
        return cupyx.scipy.linalg

    def potrf(self, a):
        """Cholesky of the (..., n, n) ``a``: (lower factor, int32 info per matrix), info left on
        the device (cupy's own ``cholesky`` drops it). cuSOLVER's upper fill on C-ordered
        memory is the row-major lower triangle, as in cupy."""
        from cupy_backends.cuda.libs import cublas, cusolver
        cp = self.cupy
        char = a.dtype.char
        x = a.astype(a.dtype, order="C", copy=True)
        n = x.shape[-1]
        handle = cp.cuda.device.get_cusolver_handle()
        upper = cublas.CUBLAS_FILL_MODE_UPPER
        if x.ndim == 2:
            info = cp.empty(1, dtype=np.int32)
            potrf = {"f": cusolver.spotrf, "d": cusolver.dpotrf, "F": cusolver.cpotrf,
                     "D": cusolver.zpotrf}[char]
            size = {"f": cusolver.spotrf_bufferSize, "d": cusolver.dpotrf_bufferSize,
                    "F": cusolver.cpotrf_bufferSize, "D": cusolver.zpotrf_bufferSize}[char]
            lwork = size(handle, upper, n, x.data.ptr, n)
            work = cp.empty(lwork, dtype=x.dtype)
            potrf(handle, upper, n, x.data.ptr, n, work.data.ptr, lwork, info.data.ptr)
            info = info.reshape(())
        else:
            batched = {"f": cusolver.spotrfBatched, "d": cusolver.dpotrfBatched,
                       "F": cusolver.cpotrfBatched, "D": cusolver.zpotrfBatched}[char]
            nb = int(np.prod(x.shape[:-2]))
            info = cp.empty(nb, dtype=np.int32)
            ptrs = cp._core._mat_ptrs(x)
            batched(handle, upper, n, ptrs.data.ptr, x.strides[-2] // x.itemsize,
                    info.data.ptr, nb)
            info = info.reshape(x.shape[:-2])
        return cp.tril(x), info

    def getrf(self, a):
        """LU with partial pivoting of the (..., n, n) ``a`` (cupy's batched getrf): (LU,
        1-based int32 pivots, int32 info per matrix), all on the device."""
        from cupy.linalg._decomposition import _lu_factor
        cp = self.cupy
        lu_t, piv, info = _lu_factor(cp.swapaxes(a, -1, -2), a.dtype)
        return cp.ascontiguousarray(cp.swapaxes(lu_t, -1, -2)), piv, info

    # -- NCCL ----------------------------------------------------------------------------------------
    def nccl_module(self):
        """``cupy.cuda.nccl``, or RuntimeError saying what is missing."""
        try:
            from cupy.cuda import nccl
        except Exception as e:
            raise RuntimeError(f"the nccl process-group backend needs cupy with NCCL: "
                               f"{e}") from None
        if not getattr(nccl, "available", True):
            raise RuntimeError("the nccl process-group backend needs NCCL: cupy found no NCCL "
                               "library; install the wheel matching your cupy "
                               "(nvidia-nccl-cu12 for cupy-cuda12x, nvidia-nccl-cu13 for "
                               "cupy-cuda13x)")
        return nccl

    def device_pointer(self, arr) -> int:
        return arr.data.ptr

    # -- programs and DLPack ------------------------------------------------------------------------
    def compile(self, source: str, options):
        """An NVRTC-compiled module (compiled on first use per device, cached by cupy)."""
        return self.cupy.RawModule(code=source, options=tuple(options))

    def from_dlpack(self, obj):
        return self.cupy.from_dlpack(obj)


def use_private_kernel_cache(env=None):
    """Point cupy's NVRTC cache at ember's private ``cupy`` cache directory (0700, checked; see
    ``ember.runtime.DiskCache``) unless the user chose one with ``CUPY_CACHE_DIR``."""
    from ember.runtime import CacheDirectoryError, DiskCache
    env = os.environ if env is None else env
    if "CUPY_CACHE_DIR" not in env:
        try:
            env["CUPY_CACHE_DIR"] = DiskCache("cupy").directory
        except (CacheDirectoryError, OSError):
            pass  # cupy keeps its default under the home directory


def load():
    """``CupyAPI`` for this machine, or ``discovery.Unavailable`` with the reason."""
    from . import discovery
    use_private_kernel_cache()
    count = discovery.probe()
    import cupy
    return CupyAPI(cupy, count)
