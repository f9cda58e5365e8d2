"""Stand-ins that let the CUDA backend's code run without a GPU (and its kernels on the CPU).

* ``CupySurface``: numpy, restricted to cupy's API surface -- every function the kernels reach
  must exist in the installed cupy and accept the keywords it is called with (checked against
  cupy's own signatures), and ufunc methods cupy lacks (``multiply.at``, ``maximum.accumulate``)
  raise as they do on cupy. Computation is numpy's, so values are not cupy's: the surface, not the
  numerics, is what this checks.
* ``HostModule``: a CUDA C program of the backend compiled as host C++ with g++ (a few defines
  stand in for the CUDA qualifiers and thread indices; every kernel loops grid-stride, so one
  "thread" covers all elements) and called through ctypes as cupy calls a RawKernel.
* ``FakeCupyAPI``: ``ember_cuda.cupy_api.CupyAPI``'s interface over these, with two emulated
  devices (so device switching runs), pinned-memory bookkeeping and immediate streams/events.
* ``FakeCUDABackend``: the real ``CUDABackend`` class with that API, registered as ``fakecuda``.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import inspect
import itertools
import os
import shutil
import subprocess
import tempfile
import threading
import time
import types

import numpy as np

HOST_SHIM = r"""
#include <math.h>
#include <cmath>
struct ember_dim3 { unsigned int x, y, z; };
static const ember_dim3 threadIdx = {0u, 0u, 0u}, blockIdx = {0u, 0u, 0u};
static const ember_dim3 blockDim = {1u, 1u, 1u}, gridDim = {1u, 1u, 1u};
#define __global__
#define __device__
#define __forceinline__ inline
static inline float cospif(float x) { return cosf((float)M_PI * x); }
static inline double cospi(double x) { return cos(M_PI * x); }
"""


def have_compiler() -> bool:
    return shutil.which("g++") is not None


# -- cupy's API surface over numpy -----------------------------------------------------------------
def _probe_ufunc_method(cupy_ufunc, method) -> bool:
    """True when cupy implements ``ufunc.method``: cupy raises NotImplementedError before looking
    at its arguments when it does not (no GPU needed to ask)."""
    try:
        if method == "at":
            cupy_ufunc.at(None, None, None)
        else:
            getattr(cupy_ufunc, method)(None)
    except NotImplementedError:
        return False
    except Exception:
        return True
    return True


class _Ufunc:
    def __init__(self, name, np_ufunc, cupy_ufunc):
        self._name, self._np, self._cp = name, np_ufunc, cupy_ufunc
        self.nin, self.nout = np_ufunc.nin, np_ufunc.nout

    def __call__(self, *args, **kwargs):
        return self._np(*args, **kwargs)

    def _method(self, method):
        if not _probe_ufunc_method(self._cp, method):
            raise NotImplementedError(f"cupy.{self._name}.{method} is not supported by cupy")
        return getattr(self._np, method)

    def at(self, *args):
        return self._method("at")(*args)

    def accumulate(self, *args, **kwargs):
        return self._method("accumulate")(*args, **kwargs)

    def reduce(self, *args, **kwargs):
        return self._method("reduce")(*args, **kwargs)


def _checked(qualname, np_fn, cp_fn):
    try:
        sig = inspect.signature(cp_fn)
    except (TypeError, ValueError):
        return np_fn  # a Cython function without a signature: existence is all we can check

    def call(*args, **kwargs):
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"cupy.{qualname} would reject this call: {e}") from None
        return np_fn(*args, **kwargs)
    call.__name__ = getattr(np_fn, "__name__", qualname)
    return call


class CupySurface(types.ModuleType):
    """``numpy`` seen through ``cupy``'s names and signatures (see the module docstring)."""

    def __init__(self, np_mod, cp_mod, qualname="", extra=None):
        super().__init__(f"cupy_surface.{qualname or 'xp'}")
        self._np, self._cp, self._q = np_mod, cp_mod, qualname
        self._cache = dict(extra or {})

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        cache = self.__dict__["_cache"]
        if name in cache:
            return cache[name]
        q = f"{self._q}.{name}" if self._q else name
        if not hasattr(self._cp, name):
            raise AttributeError(f"cupy has no attribute {q!r} (a kernel uses numpy's)")
        np_attr = getattr(self._np, name)
        cp_attr = getattr(self._cp, name)
        if isinstance(np_attr, np.ufunc):
            out = _Ufunc(q, np_attr, cp_attr)
        elif isinstance(np_attr, types.ModuleType):
            out = CupySurface(np_attr, cp_attr, q)
        elif callable(np_attr) and not isinstance(np_attr, type):
            out = _checked(q, np_attr, cp_attr)
        else:
            out = np_attr
        cache[name] = out
        return out


def cupy_surface():
    import cupy
    import numpy

    @contextlib.contextmanager
    def errstate(**kwargs):  # what ember_cuda.cupy_api.array_module adds
        with numpy.errstate(all="ignore"):
            yield
    return CupySurface(numpy, cupy, extra={"errstate": errstate})


def fft_surface():
    import cupyx.scipy.fft
    import scipy.fft
    return CupySurface(scipy.fft, cupyx.scipy.fft, "scipy.fft")


def special_surface():
    import cupyx.scipy.special
    import scipy.special
    return CupySurface(scipy.special, cupyx.scipy.special, "scipy.special")


# -- CUDA C on the host ------------------------------------------------------------------------------
_CT = {np.int64: ctypes.c_longlong, np.uint64: ctypes.c_ulonglong, np.int32: ctypes.c_int,
       np.float32: ctypes.c_float, np.float64: ctypes.c_double}
_BUILD_DIR = None
_BUILD_LOCK = threading.Lock()


class HostFunction:
    def __init__(self, fn, name):
        self._fn, self.name = fn, name
        self.launches = 0

    def __call__(self, grid, block, args):
        cargs = []
        for a in args:
            if isinstance(a, np.ndarray):
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            else:
                cargs.append(_CT[type(a)](a))
        self.launches += 1
        self._fn(*cargs)


class HostModule:
    """A CUDA C program compiled with g++ as host code (see the module docstring)."""

    def __init__(self, source, options=()):
        global _BUILD_DIR
        with _BUILD_LOCK:
            if _BUILD_DIR is None:
                _BUILD_DIR = tempfile.mkdtemp(prefix="ember-cuda-host-")
            digest = hashlib.sha1(source.encode()).hexdigest()[:16]
            lib = os.path.join(_BUILD_DIR, f"k{digest}.so")
            if not os.path.exists(lib):
                src = os.path.join(_BUILD_DIR, f"k{digest}.cpp")
                with open(src, "w") as f:
                    f.write(HOST_SHIM + source)
                flags = ["-ffp-contract=off"] if "--fmad=false" in options else []
                r = subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-std=c++14", *flags,
                                    "-o", lib, src], capture_output=True, text=True)
                if r.returncode:
                    raise RuntimeError(f"g++ failed on the CUDA source:\n{r.stderr[:4000]}")
        self._lib = ctypes.CDLL(lib)
        self.functions = {}

    def get_function(self, name):
        fn = getattr(self._lib, name)
        fn.restype = None
        return self.functions.setdefault(name, HostFunction(fn, name))


# -- the API stand-in --------------------------------------------------------------------------------
class _FakeMemory:
    def __init__(self, size):
        self.size = size


class FakePooled:
    """What cupy's pool hands out: ``ptr``, ``mem.size``, ``device_id``."""
    _ptrs = itertools.count(1 << 20, 4096)

    def __init__(self, size, device_id):
        self.ptr = next(self._ptrs)
        self.mem = _FakeMemory(size)
        self.device_id = device_id


class FakePool:
    """cupy.cuda.MemoryPool's interface: 512-byte rounding, per-device totals, a device size
    limit (raises ``oom`` when exceeded), cached free blocks."""

    def __init__(self, api, capacity=1 << 30, oom=MemoryError):
        self._api, self.capacity, self._oom = api, capacity, oom
        self.total = {}
        self.cached = {}   # device -> [sizes]
        self.fail_next = 0

    def malloc(self, nbytes):
        dev = self._api.get_device()
        size = max(512, (nbytes + 511) // 512 * 512)
        cached = self.cached.setdefault(dev, [])
        if size in cached:
            cached.remove(size)
            return FakePooled(size, dev)
        if self.fail_next or self.total.get(dev, 0) + size > self.capacity:
            self.fail_next = max(0, self.fail_next - 1)
            raise self._oom(f"out of memory allocating {nbytes} bytes")
        self.total[dev] = self.total.get(dev, 0) + size
        return FakePooled(size, dev)

    def give_back(self, size, dev):
        self.cached.setdefault(dev, []).append(size)

    def free_all_blocks(self):
        dev = self._api.get_device()
        for size in self.cached.pop(dev, []):
            self.total[dev] -= size

    def total_bytes(self):
        return self.total.get(self._api.get_device(), 0)

    def free_bytes(self):
        return sum(self.cached.get(self._api.get_device(), []))


class FakeStream:
    _ptrs = itertools.count(0x1000, 0x10)

    def __init__(self, null=False):
        self.ptr = 0 if null else next(self._ptrs)
        self.waited = []
        self.done = True

    def synchronize(self):
        pass

    def wait_event(self, event):
        self.waited.append(event)

    def use(self):
        state = FakeCupyAPI._state
        state.streams[state.device] = self


class FakeEvent:
    def __init__(self, timing):
        self.timing, self.time, self.stream = timing, None, None
        self.done = True

    def record(self, stream):
        self.time, self.stream = time.perf_counter(), stream

    def synchronize(self):
        pass


class _ThreadState(threading.local):
    def __init__(self):
        self.device = 0
        self.streams = {}


class FakeCupyAPI:
    """``CupyAPI``'s interface over numpy and g++ (see the module docstring)."""

    is_fake = True
    _state = _ThreadState()
    NULL = FakeStream(null=True)

    def __init__(self, device_count=2):
        import scipy.special  # noqa: F401 (special_surface needs it loaded)
        self.xp = cupy_surface()
        self.special = special_surface()
        self.fft_module = fft_surface()
        self.ndarray = np.ndarray
        self.device_count = device_count
        self.oom_errors = (MemoryError,)
        self.pinned = []
        self.allocator = None
        self.device_switches = 0

    # devices
    def get_device(self):
        return self._state.device

    def set_device(self, index):
        self._state.device = index

    @contextlib.contextmanager
    def on_device(self, index):
        prev = self._state.device
        if index != prev:
            self.device_switches += 1
        self._state.device = index
        try:
            yield
        finally:
            self._state.device = prev

    def device_properties(self, index):
        return {"name": f"Fake GPU {index}".encode(), "major": 9, "minor": 0,
                "totalGlobalMem": 80 << 30, "multiProcessorCount": 132, "l2CacheSize": 50 << 20,
                "uuid": bytes(range(16)), "warpSize": 32}

    def mem_get_info(self, index):
        return (70 << 30, 80 << 30)

    def synchronize(self, index):
        pass

    def versions(self):
        return {"cupy": "fake", "runtime": 12090, "driver": 12090}

    # arrays
    def flat_bytes(self, arr):
        if arr.size == 0:
            return np.empty(0, dtype=np.uint8)
        extent = arr.itemsize + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides))
        return np.lib.stride_tricks.as_strided(arr, shape=(extent // arr.itemsize,),
                                               strides=(arr.itemsize,)).view(np.uint8)

    def view(self, flat, shape, np_dtype, offset_bytes, strides_bytes):
        return np.ndarray(shape, np_dtype, buffer=flat, offset=offset_bytes,
                          strides=strides_bytes)

    def to_host(self, arr, out=None, stream=None, blocking=True):
        if out is None:
            return np.array(arr, copy=True, order="C")
        out[...] = arr
        return out

    def from_host(self, host, stream=None):
        return np.array(host, copy=True, order="C")

    def pinned_empty(self, shape, np_dtype):
        a = np.empty(shape, dtype=np_dtype)
        self.pinned.append((a.ctypes.data, max(a.nbytes, 1), a))
        return a

    def is_pinned(self, host):
        p = host.ctypes.data
        return any(lo <= p < lo + n for lo, n, _ in self.pinned)

    def device_of(self, arr):
        return 0

    def copy_between_devices(self, dst, src):
        dst[...] = src

    # memory
    def memory_pool(self):
        return FakePool(self)

    def install_allocator(self, malloc):
        self.allocator = malloc

    def tracked_pointer(self, pooled, owner):
        return types.SimpleNamespace(ptr=pooled.ptr, owner=owner)

    # streams, events
    def null_stream(self):
        return self.NULL

    def new_stream(self, priority=0):
        return FakeStream()

    def current_stream(self):
        return self._state.streams.get(self._state.device, self.NULL)

    def new_event(self, enable_timing, blocking, interprocess):
        return FakeEvent(enable_timing)

    def elapsed_ms(self, start, end):
        return (end.time - start.time) * 1e3

    # programs, DLPack
    def compile(self, source, options):
        return HostModule(source, options)

    def from_dlpack(self, obj):
        return np.from_dlpack(obj)


def make_fake_backend(name="fakecuda", device_count=2):
    """A ``CUDABackend`` over ``FakeCupyAPI`` named ``name`` (not registered)."""
    from ember_cuda.backend import CUDABackend

    class FakeCUDABackend(CUDABackend):
        pass
    FakeCUDABackend.name = name
    return FakeCUDABackend(load_api=lambda: FakeCupyAPI(device_count))
