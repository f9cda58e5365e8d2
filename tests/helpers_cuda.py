"""Stand-ins that let the CUDA backend's code run without a GPU (and its kernels on the CPU).

* ``CupySurface``: numpy, restricted to cupy's API surface -- every function the kernels reach
  must exist in the installed cupy and accept the keywords it is called with (checked against
  cupy's own signatures), and ufunc methods cupy lacks (``multiply.at``, ``maximum.accumulate``)
  raise as they do on cupy. Computation is numpy's, so values are not cupy's: the surface, not the
  numerics, is what this checks.
* ``HostModule``: a CUDA C program of the backend compiled as host C++ with g++ (a few defines
  stand in for the CUDA qualifiers and thread indices; every kernel loops grid-stride, so one
  "thread" covers all elements) and called through ctypes as cupy calls a RawKernel.
* ``FakeCupyAPI``: ``ember_cuda.cupy_api.CupyAPI``'s interface over the stricter simulator in
  ``tests/cuda_sim`` (deferred work, two devices with affinity, cupy's index wrapping,
  asynchronous errors, counted host synchronizations) and a pool whose blocks are real memory
  reused per stream, as cupy's.
* ``FakeCUDABackend``: the real ``CUDABackend`` class with that API, registered as ``fakecuda``.
"""
from __future__ import annotations

import contextlib
import inspect
import types

import numpy as np

from cuda_sim import DeviceArray, Sim, make_checker, probe_ufunc_method
from cuda_sim.arrays import ArrayOps, Block, Memory, _arrays_in
from cuda_sim.hostcode import HostModule, have_compiler  # noqa: F401 (re-exported)
from cuda_sim.memory import FakePointer, FakePool, _PinnedBuffer  # noqa: F401
from cuda_sim.rules import host_writer

# -- cupy's API surface over numpy -----------------------------------------------------------------
class _Ufunc:
    def __init__(self, name, np_ufunc, cupy_ufunc, sim=None):
        self._name, self._np, self._cp, self._sim = name, np_ufunc, cupy_ufunc, sim
        self.nin, self.nout = np_ufunc.nin, np_ufunc.nout

    def __call__(self, *args, **kwargs):
        r = self._np(*args, **kwargs)
        if self._sim is not None and not isinstance(r, (DeviceArray, tuple)) and \
                isinstance(r, (np.ndarray, np.generic)):
            return self._sim.arrays.adopt(r, *_issue(self._sim))   # scalars in: a 0-d array out
        return r

    def _method(self, method):
        if not probe_ufunc_method(self._cp, method):
            raise NotImplementedError(f"cupy.{self._name}.{method} is not supported by cupy")
        return getattr(self._np, method)

    def at(self, *args):
        if self._name == "minimum":
            # seen on an H200 (cupy 14.2): minimum.at left its target unchanged, where
            # maximum.at gave numpy's result
            raise NotImplementedError("cupy.minimum.at gives wrong results on a GPU: take "
                                      "maximum.at of the negated values")
        return self._method("at")(*args)

    def accumulate(self, *args, **kwargs):
        return self._method("accumulate")(*args, **kwargs)

    def reduce(self, *args, **kwargs):
        return self._method("reduce")(*args, **kwargs)


def _issue(sim):
    stream = sim.current_stream()
    return stream, stream.issue()


def _device_args(args, kwargs):
    return any(True for _ in _arrays_in((args, tuple(kwargs.values()))))


def _checked(qualname, np_fn, cp_fn, sim=None):
    try:
        sig = inspect.signature(cp_fn)
    except (TypeError, ValueError):
        sig = None  # a Cython function without a signature: existence is all we can check

    def call(*args, **kwargs):
        if sig is not None:
            try:
                sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"cupy.{qualname} would reject this call: {e}") from None
        if sim is None:
            return np_fn(*args, **kwargs)
        if _device_args(args, kwargs):
            return sim.arrays.function(np_fn, args, kwargs)
        r = np_fn(*args, **kwargs)   # a creation function (or scalars in): device memory out
        if isinstance(r, (np.ndarray, np.generic)) and not isinstance(r, DeviceArray):
            return sim.arrays.adopt(r, *_issue(sim))
        if isinstance(r, tuple) and r and all(isinstance(x, np.ndarray) for x in r):
            stream, stamp = _issue(sim)
            return tuple(sim.arrays.adopt(x, stream, stamp) for x in r)
        return r
    call.__name__ = getattr(np_fn, "__name__", qualname)
    return call


class CupySurface(types.ModuleType):
    """``numpy`` seen through ``cupy``'s names and signatures (see the module docstring); with a
    simulator (``sim``), every call runs on its device arrays."""

    def __init__(self, np_mod, cp_mod, qualname="", extra=None, sim=None):
        super().__init__(f"cupy_surface.{qualname or 'xp'}")
        self._np, self._cp, self._q, self._sim = np_mod, cp_mod, qualname, sim
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
        if name == "ndarray" and self._sim is not None:
            out = DeviceArray
        elif isinstance(np_attr, np.ufunc):
            out = _Ufunc(q, np_attr, cp_attr, self._sim)
        elif isinstance(np_attr, types.ModuleType):
            out = CupySurface(np_attr, cp_attr, q, sim=self._sim)
        elif callable(np_attr) and not isinstance(np_attr, type):
            out = _checked(q, np_attr, cp_attr, self._sim)
        else:
            out = np_attr
        cache[name] = out
        return out


def cupy_surface(sim=None):
    import cupy
    import numpy

    from cuda_sim import solver

    @contextlib.contextmanager
    def errstate(**kwargs):  # what ember_cuda.cupy_api.array_module adds
        with numpy.errstate(all="ignore"):
            yield
    # cupy.linalg answers a singular matrix with non-finite values, never LinAlgError
    emulated = {name: _checked(f"linalg.{name}", solver.no_raise(fn, shape),
                               getattr(cupy.linalg, name), sim)
                for name, (fn, shape) in solver.EMULATED.items()}
    linalg = CupySurface(numpy.linalg, cupy.linalg, "linalg", extra=emulated, sim=sim)
    return CupySurface(numpy, cupy, extra={"errstate": errstate, "linalg": linalg}, sim=sim)


class _CupyxLinalgSignatures:
    """cupyx.scipy.linalg's signatures of the functions the backend calls (cupy 14), for
    machines where importing it fails because cuBLAS/cuSOLVER libraries are absent."""

    def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True): ...

    def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                         check_finite=False): ...


def scipy_linalg_surface(sim=None):
    import scipy.linalg
    try:
        import cupyx.scipy.linalg as cupyx_linalg
    except ImportError:   # no libcublas/libcusolver here: check against the recorded API
        cupyx_linalg = _CupyxLinalgSignatures
    return CupySurface(scipy.linalg, cupyx_linalg, "scipy.linalg", sim=sim)


def fft_surface(sim=None):
    import cupyx.scipy.fft
    import scipy.fft
    return CupySurface(scipy.fft, cupyx.scipy.fft, "scipy.fft", sim=sim)


def special_surface(sim=None):
    import cupyx.scipy.special
    import scipy.special
    return CupySurface(scipy.special, cupyx.scipy.special, "scipy.special", sim=sim)


# -- the API stand-in --------------------------------------------------------------------------------
class FakeCupyAPI:
    """``CupyAPI``'s interface over the simulator (``cuda_sim``) and g++ (see the module
    docstring)."""

    is_fake = True

    def __init__(self, device_count=2):
        import cupy
        import scipy.special  # noqa: F401 (special_surface needs it loaded)
        self.sim = sim = Sim(device_count)
        sim.api = self
        sim.arrays = ArrayOps(sim, self, make_checker(cupy))
        self.xp = cupy_surface(sim)
        self.special = special_surface(sim)
        self.fft_module = fft_surface(sim)
        self._scipy_linalg = None
        self.ndarray = DeviceArray
        self.device_count = device_count
        self.oom_errors = (MemoryError,)
        self.pinned = []
        self.device_switches = 0
        self.NULL = sim.nulls[0]
        self._nccl = None
        self._pointers = []

    @property
    def _state(self):
        return self.sim.state

    @property
    def scipy_linalg(self):
        if self._scipy_linalg is None:
            self._scipy_linalg = scipy_linalg_surface(self.sim)
        return self._scipy_linalg

    @property
    def syncs(self) -> int:
        return self.sim.syncs

    @property
    def sync_hook(self):
        return self.sim.sync_hook

    @sync_hook.setter
    def sync_hook(self, fn):
        self.sim.sync_hook = fn

    def stream_synchronize(self, stream) -> None:
        stream.synchronize()

    def event_synchronize(self, event) -> None:
        event.synchronize()

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
        self.sim.synchronize_device(index)

    def versions(self):
        return {"cupy": "fake", "runtime": 12090, "driver": 12090}

    # arrays
    def _share(self, view, arr):
        view = view.view(DeviceArray)
        view._blk = self.sim.arrays.block(arr)
        return view

    def flat_bytes(self, arr):
        if arr.size == 0:
            return self._share(np.empty(0, dtype=np.uint8), arr)
        extent = arr.itemsize + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides))
        plain = arr.view(np.ndarray)
        flat = np.lib.stride_tricks.as_strided(plain, shape=(extent // arr.itemsize,),
                                               strides=(arr.itemsize,)).view(np.uint8)
        return self._share(flat, arr)

    def view(self, flat, shape, np_dtype, offset_bytes, strides_bytes):
        v = np.ndarray(shape, np_dtype, buffer=flat.view(np.ndarray), offset=offset_bytes,
                       strides=strides_bytes)
        return self._share(v, flat)

    def to_host(self, arr, out=None, stream=None, blocking=True):
        sim = self.sim
        dev = sim.arrays.block(arr).device
        stream = stream if stream is not None else sim.current_stream(dev)
        if blocking:
            with self.on_device(dev):
                values = sim.arrays.to_host_on(arr, stream, "copy to host")
            if out is None:
                return values
            out[...] = values
            return out
        # queued: the values are taken in stream order now and land in ``out`` once the host
        # knows the copy ran
        with self.on_device(dev):
            stamp = stream.issue()
            values = sim.arrays.readable(arr, stream).copy()
        write = host_writer(out)     # the DMA holds the address, not the array
        stream.host_effects.append((stamp[1], lambda: write(values)))
        return out

    def from_host(self, host, stream=None):
        sim = self.sim
        s = stream if stream is not None else sim.current_stream()
        stamp = s.issue()
        return sim.arrays.upload(np.asarray(host), s, stamp, late=stream is not None)

    def pinned_alloc(self, nbytes):
        """Page-locked host memory of ``nbytes``: an object with ``ptr`` and ``array`` (bytes)."""
        return _PinnedBuffer(self, nbytes)

    def is_pinned(self, host):
        p = host.ctypes.data
        return any(lo <= p < lo + n for lo, n, _ in self.pinned)

    def device_of(self, arr):
        return self.sim.arrays.block(arr).device

    def peer_copy(self, dst, src, stream):
        """cudaMemcpyAsync between devices on ``stream``: bytes of contiguous arrays, no device
        affinity (peer access)."""
        if not (dst.flags.c_contiguous and src.flags.c_contiguous) or dst.nbytes != src.nbytes:
            raise ValueError("a peer copy takes two contiguous arrays of one size")
        sim = self.sim
        stamp = stream.issue()
        values = sim.arrays.readable(src, stream, affine=False)
        np.copyto(sim.arrays.writable(dst, stream, stamp, affine=False).reshape(-1)
                  .view(np.uint8), values.reshape(-1).view(np.uint8))

    def upload_into(self, dst, host):
        """ndarray.set: a synchronous copy from the host on the current stream."""
        sim = self.sim
        stream = sim.current_stream()
        stamp = stream.issue()
        np.copyto(sim.arrays.writable(dst, stream, stamp), host)

    # memory
    def memory_pool(self):
        return FakePool(self)

    def using_allocator(self, malloc):
        """cupy.cuda.using_allocator: ``malloc`` serves this thread's allocations inside."""
        return _UsingAllocator(self._state, malloc)

    def tracked_pointer(self, pooled, owner):
        return FakePointer(pooled, owner)

    def owner_of(self, arr):
        o = arr
        while o is not None:
            if isinstance(o, Memory):
                return o.pointer.owner
            o = getattr(o, "base", None)
        return None

    # streams, events
    def null_stream(self):
        return self.sim.nulls[self._state.device]

    def new_stream(self, priority=0, non_blocking=True):
        from cuda_sim import SimStream
        return SimStream(self.sim, self._state.device, non_blocking=non_blocking,
                         priority=priority)

    def current_stream(self):
        return self.sim.current_stream()

    def new_event(self, enable_timing, blocking, interprocess):
        from cuda_sim import SimEvent
        return SimEvent(self.sim, enable_timing, blocking)

    def elapsed_ms(self, start, end):
        return (end.time - start.time) * 1e3

    # cuBLAS, cuSOLVER
    def gemm(self, *args):
        from cuda_sim import blas
        blas.gemm(self.sim, *args)

    def potrf(self, a):
        from cuda_sim import solver
        return solver.potrf(self.sim, a)

    def getrf(self, a):
        from cuda_sim import solver
        return solver.getrf(self.sim, a)

    # NCCL
    def nccl_module(self):
        if self._nccl is None:
            from cuda_sim.nccl import FakeNccl
            self._nccl = FakeNccl(self)
        return self._nccl

    def device_pointer(self, arr):
        """A device pointer for NCCL: the array's address, remembered so that the simulated
        NCCL finds the array (and its memory record) again."""
        address = arr.ctypes.data
        self._pointers.append((address, arr.nbytes, arr))
        del self._pointers[:-256]
        return address

    def array_at(self, address, nbytes):
        """The bytes at ``address`` as a view of a remembered device array."""
        for start, n, arr in reversed(self._pointers):
            if start <= address and address + nbytes <= start + n:
                flat = self.flat_bytes(arr)
                return flat[address - start:address - start + nbytes]
        raise RuntimeError(f"the simulated NCCL got an unknown pointer {address:#x}")

    # programs, DLPack
    def compile(self, source, options):
        return HostModule(source, options, self.sim)

    def from_dlpack(self, obj):
        arr = np.from_dlpack(obj).view(DeviceArray)
        arr._blk = Block(self.sim, 0)
        return arr


class _UsingAllocator:
    def __init__(self, state, malloc):
        self._state, self._malloc = state, malloc

    def __enter__(self):
        self._prev = self._state.allocator
        self._state.allocator = self._malloc

    def __exit__(self, *exc):
        self._state.allocator = self._prev


def make_fake_backend(name="fakecuda", device_count=2):
    """A ``CUDABackend`` over ``FakeCupyAPI`` named ``name`` (not registered)."""
    from ember_cuda.backend import CUDABackend

    class FakeCUDABackend(CUDABackend):
        pass
    FakeCUDABackend.name = name
    return FakeCUDABackend(load_api=lambda: FakeCupyAPI(device_count))


def require_simulator():
    """Skip the calling test module where the simulated GPU cannot run: cupy (whose API it
    checks calls against) or g++ (which builds the backend's CUDA C for the host) missing."""
    import pytest
    pytest.importorskip("cupy", reason="the simulator checks calls against cupy's API "
                                       "(the dev extra installs cupy-cuda12x)")
    if not have_compiler():
        pytest.skip("g++ is needed to run the CUDA kernels on the host",
                    allow_module_level=True)


@contextlib.contextmanager
def simulated_backend(name, device_count=2):
    """A fake CUDA backend registered as device type ``name`` while the block runs."""
    import ember
    from ember.runtime.registry import registry
    backend = make_fake_backend(name, device_count)
    registry.add(backend)
    assert getattr(ember, name).is_available()
    try:
        yield backend
    finally:
        registry.remove(name)
