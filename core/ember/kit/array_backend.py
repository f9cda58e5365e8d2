"""``ArrayBackend``: a Backend whose device memory is an array module's arrays (numpy, cupy, …).

Chainer's idea: one implementation, the array module ``xp`` a parameter. A Storage's ``data`` is
the array that owns the memory; a tensor's native array (``backend.native(t)``) is a strided view
of the storage's flat byte view, made once per tensor and cached on it. Kernels return fresh
arrays that ``wrap`` turns into tensors without a copy.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _fastpath
from ..runtime import dtypes
from ..runtime.backend import Backend
from ..runtime.layout import contiguous_strides
from ..runtime.storage import Storage
from ..runtime.tensors import tensor_constructor

_HALF = frozenset(d.np for d in (dtypes.float16, dtypes.bfloat16) if d.np is not None)


def allocate(be, make, size, dt, op, *args):
    """``make(size, *args, dtype=dt)``, with the host out of memory (or past numpy's size limit)
    reported as PyTorch's CPU allocator reports it, naming the op and the request."""
    try:
        return make(size, *args, dtype=dt)
    except (MemoryError, ValueError) as e:
        if isinstance(e, ValueError) and "too big" not in str(e) and "exceeded" not in str(e):
            raise
        nbytes = math.prod(size) * dt.itemsize
        raise RuntimeError(f"{op}: not enough memory: you tried to allocate {nbytes} bytes "
                           f"({list(size)} of dtype {dt.name}) on {be.name}") from None


def ieee_caller(xp):
    """``call(f, *args)``: run a ufunc with floating-point warnings off, as PyTorch computes
    log(0) = -inf and 0/0 = nan silently. numpy 2 keeps its error state in a context variable;
    setting it directly costs ~0.4 µs where ``np.errstate`` costs ~1.2 µs on every op."""
    if xp is np:
        try:
            # probe: numpy 2's private module
            from numpy._core._ufunc_config import _extobj_contextvar as state
        except ImportError:  # numpy < 2: the public (slower) way
            state = None
        if state is not None:
            with np.errstate(all="ignore"):
                quiet = state.get()
            if _fastpath.C is not None:  # the same, compiled (csrc/tensors.c)
                _fastpath.C.install_ieee(state, quiet)
                return _fastpath.C.ieee_call

            def call(f, *args):
                token = state.set(quiet)
                try:
                    return f(*args)
                finally:
                    state.reset(token)
            return call

        def call_errstate(f, *args):
            with np.errstate(all="ignore"):
                return f(*args)
        return call_errstate
    return lambda f, *args: f(*args)  # cupy & co. do not warn on IEEE special values


def _swap_helps(a, b):
    """Whether ``(b.T @ a.T).T`` beats ``a @ b`` in the host BLAS: a few rows times a
    transposed weight (a linear layer's ``x @ W.T``) over a long inner dim. OpenBLAS runs
    that layout up to 2x slower than the swapped one, which gives the same bits (measured,
    single thread: 64x784 by 784x256 349 -> 292 us, 16x1024 by 1024x1024 926 -> 464 us;
    with fewer than 128 inner elements or over 64 rows the swap loses)."""
    m, k = a.shape
    return (m <= 64 and k >= 128 and b.shape[1] >= m and a.flags.c_contiguous and
            b.T.flags.c_contiguous and a.dtype.kind == "f")


class ArrayBackend(Backend):
    """A Backend whose memory is arrays of ``xp``; set ``xp`` (and ``special``, a
    scipy.special-like module, for the kit's special functions, and ``fft_module``, a
    scipy.fft-like module, for its FFTs) in the subclass."""

    xp = np
    fft_module = None
    #: whether ``fft_module``'s functions take scipy.fft's ``workers`` (host threads) argument
    fft_workers = True

    def __init__(self):
        super().__init__()
        self._np2dt = {d.np: d for d in dtypes.ALL_DTYPES if d.np is not None}
        self._layouts = {}
        self._new_tensor = tensor_constructor()
        #: ``ieee(f, *args)``: ``f`` with floating-point warnings off (kit kernels use it)
        self.ieee = ieee_caller(self.xp)
        if _fastpath.C is not None and self.xp is np and type(self).wrap is ArrayBackend.wrap:
            # wrap and native compiled for numpy arrays (csrc/tensors.c); everything else
            # takes the methods below
            self.wrap = _fastpath.C.array_wrapper(self._np2dt, self.wrap)
            if type(self).native is ArrayBackend.native and \
                    type(self)._view is ArrayBackend._view:
                self.native = _fastpath.C.array_native(self.native)

    # -- array-module specifics (override for cupy & co) ----------------------------------------
    def _flat_bytes(self, arr):
        """A 1-D uint8 view over all the memory ``arr`` spans (strides must be >= 0)."""
        isz = arr.itemsize
        if arr.size == 0:
            return self.xp.empty(0, dtype=np.uint8)
        if arr.flags.c_contiguous:  # a kernel's fresh result: a plain reshape, no as_strided
            return arr.reshape(-1).view(np.uint8)
        extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) // isz
        flat = np.lib.stride_tricks.as_strided(arr, shape=(extent,), strides=(isz,))
        return flat.view(np.uint8)

    def _view(self, flat, shape, np_dtype, offset_bytes, strides_bytes):
        return np.ndarray(shape, np_dtype, buffer=flat, offset=offset_bytes, strides=strides_bytes)

    def _to_host(self, arr):
        return arr

    def _from_host(self, array):
        return np.array(array, copy=True, order="K")

    # -- the Backend contract -------------------------------------------------------------------
    def wrap(self, arr, device):
        """A tensor owning the fresh array ``arr`` (a kernel's output)."""
        if arr.__class__ is not self._ndarray:
            arr = self.xp.asarray(arr)
        key = (arr.dtype, arr.strides)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layout(*key)
            if layout is None:  # negative strides: kernels should not, but never alias wrongly
                arr = self.xp.ascontiguousarray(arr)
                return self.wrap(arr, device)
        d, strides = layout
        if arr.size == 0:       # numpy gives an empty array zero strides; PyTorch contiguous ones
            strides = contiguous_strides(arr.shape)
        return self._new_tensor(Storage(arr, arr.nbytes, device), arr.shape, strides, 0, d,
                                device, arr)

    def _layout(self, np_dtype, byte_strides):
        """(ember dtype, element strides) for a dtype and byte strides; cached (few distinct)."""
        if any(s < 0 for s in byte_strides):
            return None
        d = self._np2dt[np_dtype]
        layout = (d, tuple([s // d.itemsize for s in byte_strides]))
        if len(self._layouts) < 4096:
            self._layouts[(np_dtype, byte_strides)] = layout
        return layout

    _ndarray = np.ndarray

    def native(self, t):
        """The tensor's values as an array of ``xp``: a view of its storage (cached)."""
        arr = t._native
        if arr is None:
            st = t._storage
            flat = st.cache
            if flat is None:
                flat = st.cache = self._flat_bytes(st.data)
            isz = t.dtype.itemsize
            # an empty slice may start past the end of its storage (x[5:] of a 4-element x);
            # it addresses nothing, and numpy rejects such an offset
            offset = t._offset * isz if 0 not in t._shape else 0
            arr = t._native = self._view(flat, t._shape, t.dtype.np, offset,
                                         tuple([s * isz for s in t._stride]))
        return arr

    def empty(self, shape, dtype, device):
        return self.wrap(allocate(self, self.xp.empty, shape, dtype.np, "empty"), device)

    def from_numpy(self, array, device, non_blocking=False):
        return self.wrap(self._from_host(array), device)

    def to_numpy(self, tensor):
        self.synchronize(tensor.device.index)
        return self._to_host(self.native(tensor))

    def copy_(self, dst, src, non_blocking=False):
        s = self.native(src)
        d = self.native(dst)
        if s.dtype.kind == "c" and d.dtype.kind != "c":
            s = s.real
        d[...] = s
        return dst

    def storage_nbytes(self, data) -> int:
        return data.nbytes

    # -- products -------------------------------------------------------------------------------
    #: True when ``matmul`` computes float16/bfloat16 products natively (accumulating in
    #: float32): kernels then hand it half-precision operands instead of upcasting them
    half_matmul = False

    #: bytes of im2col columns the convolution kernels materialize at once (None: the whole
    #: batch); a device backend bounds it so a large batch does not allocate them all
    conv_workspace = None

    def fft_operand(self, a):
        """``a`` as ``fft_module``'s functions accept it (a device backend copies what its FFT
        library refuses)."""
        return a

    def matmul(self, a, b):
        """``a @ b`` for two arrays of one dtype (numpy's broadcasting), in that dtype; half
        precision is computed in float32 and rounded once."""
        xp = self.xp
        if a.dtype in _HALF:
            f32 = xp.dtype(xp.float32)
            return self.matmul(a.astype(f32), b.astype(f32)).astype(a.dtype)
        if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
            # a batch of rows times one matrix is one GEMM over all the rows, not a loop of small
            # ones (numpy's matmul calls BLAS per batch element)
            rows = 1
            for n in a.shape[:-1]:
                rows *= n           # explicit: -1 is ambiguous for an empty inner dim
            return xp.matmul(a.reshape(rows, a.shape[-1]), b).reshape(a.shape[:-1] +
                                                                      b.shape[-1:])
        if a.ndim == 2 and b.ndim == 2 and self.values_on_host and _swap_helps(a, b):
            return xp.ascontiguousarray(xp.matmul(b.T, a.T).T)
        return xp.matmul(a, b)

    # -- accumulation ---------------------------------------------------------------------------
    def add_at(self, op, target, key, values):
        """``target[key] += values`` with repeated positions all added (numpy's ``add.at``, in
        index order). A device backend adds with atomics, or -- under
        ``use_deterministic_algorithms`` -- in a fixed order; ``op`` names the caller."""
        self.xp.add.at(target, key, values)

    def bincount(self, op, idx, weights, minlength):
        """``xp.bincount(idx, weights, minlength)``; every index is below ``minlength``."""
        return self.xp.bincount(idx, weights=weights, minlength=minlength)

    # -- value checks (``kit/value_checks.py``) -------------------------------------------------
    #: True when arrays are host memory, so reading a value costs no device round trip: kernels
    #: may branch on data (a NaN check) where a device backend computes both ways
    values_on_host = True

    def host_constant(self, array, dtype=None):
        """A host array the caller never changes (a table from an ``lru_cache``) as an array of
        this backend, in ``dtype`` when given. Host arrays: the array itself; a device backend
        uploads each once per device instead of on every call."""
        return array if dtype is None or array.dtype == dtype else array.astype(dtype)

    def device_assert(self, op, bad, value, exc, message):
        """Raise ``exc(message)`` (``{value}`` filled from the 0-d ``value``) when the 0-d flag
        ``bad`` is set. Host arrays: read now. A device backend overrides this to record the
        flag on the device and raise at the next synchronization."""
        if bool(bad):
            raise exc(message.format(value=None if value is None else value.item()))

    def assert_values(self, op, ok, value, exc, message):
        """``Backend.assert_values`` on arrays: the check ``device_assert`` makes."""
        v = None if value is None else self.native(value)
        self.device_assert(op, ~self.native(ok), v, exc, message)
