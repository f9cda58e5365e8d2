"""``Tensor``: a strided view of a Storage, plus autograd metadata.

The class holds metadata and the conversions; operators and methods are attached by the op
modules (``ember.ops.*``) next to the ops they call, so one module owns one family of ops.
Tensor objects are made on every op, so they are kept light: ``__slots__``, strides in elements,
autograd metadata created only for tensors that take part in autograd.
"""
from __future__ import annotations

import threading as _threading

import numpy as np

from . import _dtype, _fastpath, _memory_format, _shared_memory
from .dispatch import keys as _keys
from .runtime import tensors as _runtime_tensors
from .runtime.registry import registry as _registry
from ._tensor_str import tensor_repr


# called with a reason when Python reads a tensor's values or runs work an op graph cannot hold
# (ember.compile's capture notes a graph break there); empty, it costs one truth test
_capture_hooks: list = []
# ember.compile capturing a whole training step: the recorder that writes ``.grad`` itself
# (autograd's accumulation and ``p.grad = ...`` become graph nodes); empty otherwise. Hooks and
# recorders belong to the thread whose capture installed them (``thread``): other threads
# run as if none were installed.
_grad_recorders: list = []


def _grad_recorder():
    """This thread's training-step recorder, or None (call only when the list is non-empty)."""
    me = _threading.get_ident()
    for r in _grad_recorders:
        if r.thread == me:
            return r
    return None


def _capturing():
    """Whether a capture runs on this thread (its hooks would see this thread's reads)."""
    if not _capture_hooks:
        return False
    me = _threading.get_ident()
    return any(getattr(h, "__self__", None) is None or h.__self__.thread == me
               for h in _capture_hooks)



# the dims of a channels-last layout from innermost to outermost, per memory format
_CHANNELS_LAST_ORDER = {_memory_format.channels_last: (1, 3, 2, 0),
                        _memory_format.channels_last_3d: (1, 4, 3, 2, 0)}

class Tensor:
    # _view_base: the tensor a view was made from; set only on views (unset slots cost nothing
    # at creation), so autograd can rewrite a base's history after an in-place op on a view
    __slots__ = ("_storage", "_shape", "_stride", "_offset", "dtype", "device", "_ks",
                 "_native", "_ag", "_view_base", "__weakref__", "__dict__")

    # ``ember.Tensor(...)`` as a constructor is installed by ops/factories.py (it makes data
    # through the factory ops, which this module must not import: they dispatch)

    @classmethod
    def _make(cls, storage, shape, stride, offset, dtype, device, native=None):
        t = object.__new__(cls)
        t._storage = storage
        t._shape = shape
        t._stride = stride
        t._offset = offset
        t.dtype = dtype
        t.device = device
        t._ks = device._key or _keys.device_key(device)
        t._native = native
        t._ag = None
        return t

    def as_subclass(self, cls):
        t = cls._make(self._storage, self._shape, self._stride, self._offset, self.dtype,
                      self.device, self._native)
        return t

    def _view_of(self, shape, stride, offset):
        """A new tensor sharing this one's storage (no autograd bookkeeping here)."""
        t = Tensor._make(self._storage, shape, stride, offset, self.dtype, self.device)
        t._view_base = self
        return t

    # -- metadata -------------------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim(dim, len(self._shape), "size")]

    def stride(self, dim=None):
        if dim is None:
            return self._stride
        return self._stride[_wrap_dim(dim, len(self._shape), "stride")]

    def storage_offset(self) -> int:
        return self._offset

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    ndimension = dim

    def numel(self) -> int:
        n = 1
        for s in self._shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def untyped_storage(self):
        return self._storage

    def data_ptr(self) -> int:
        """An identity for the first element: equal for tensors that start at the same memory."""
        return id(self._storage) * 4096 + self._offset * self.dtype.itemsize

    @property
    def _version(self) -> int:
        return self._storage.version

    def _bump_version(self):
        self._storage.version += 1

    def is_contiguous(self, memory_format=None) -> bool:
        order = _CHANNELS_LAST_ORDER.get(memory_format)
        if order is not None:   # channels innermost: PyTorch's is_channels_last_contiguous
            if len(self._shape) != len(order):
                return False
            expected = 1
            for d in order:
                size = self._shape[d]
                if size != 1:
                    if self._stride[d] != expected:
                        return False
                    expected *= size
            return True
        if 0 in self._shape:
            return True  # PyTorch: a tensor without elements is contiguous whatever its strides
        expected = 1
        for size, stride in zip(reversed(self._shape), reversed(self._stride)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def is_floating_point(self) -> bool:
        return self.dtype.category == _dtype.FLOATING

    def is_complex(self) -> bool:
        return self.dtype.category == _dtype.COMPLEX

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    # layouts and kinds ember has no tensors of (quantized, nested, compressed sparse)
    is_quantized = is_nested = is_sparse_csr = property(lambda self: False)

    def get_device(self) -> int:
        return -1 if self.device.type == "cpu" else self.device.index

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        return id(self)

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} elements is "
                               f"ambiguous")
        return bool(self.item())

    def __int__(self):
        return int(self._scalar_value("int"))

    def __float__(self):
        return float(self._scalar_value("float"))

    def __complex__(self):
        return complex(self._scalar_value("complex"))

    def __index__(self):
        if self.dtype.category > _dtype.INTEGRAL or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def _scalar_value(self, what):
        if self.numel() != 1:
            raise ValueError(f"only one element tensors can be converted to Python scalars "
                             f"(tried {what}() on a tensor of shape {tuple(self._shape)})")
        return self.item()

    # -- host conversions (these synchronize) ---------------------------------------------------
    def _backend(self):
        return _registry.get(self.device.type)

    def numpy(self, *, force=False):
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self.device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self.device.type} device type tensor to numpy. Use "
                            f"Tensor.cpu() to copy the tensor to host memory first.")
        if _capture_hooks:
            for hook in _capture_hooks:
                hook("Tensor.numpy() reads a tensor's values on the host")
        return self._backend().to_numpy(self)

    def _host(self):
        """Values as a numpy array, from any device (may copy)."""
        if _capture_hooks:
            for hook in _capture_hooks:
                hook("Tensor.item()/tolist()/bool() reads a tensor's value on the host "
                     "(data-dependent Python)")
        return self._backend().to_numpy(self)

    def share_memory_(self):
        """Move a CPU tensor's storage into shared memory (in place, for every tensor viewing
        it), so processes it is sent to through ``ember.multiprocessing`` write to the same
        memory. A no-op when already shared and for other devices."""
        _shared_memory.share_storage(self._storage)
        return self

    def is_shared(self) -> bool:
        """True when the tensor's storage is in shared memory (``share_memory_()``)."""
        return _shared_memory.is_shared(self._storage)

    def is_pinned(self, device=None) -> bool:
        """True when the tensor is in page-locked host memory (``pin_memory()`` with a backend
        that pins, such as CUDA)."""
        if self.device.type != "cpu" or self._storage.data is None:
            return False
        for backend in _registry.loaded_backends():
            check = getattr(backend, "is_pinned_host", None)
            if check is not None and check(self._storage.data):
                return True
        return False

    def pin_memory(self, device=None):
        """A copy in page-locked host memory from the first available backend that pins host
        memory (``device`` names one), so its ``non_blocking`` copies to that device are
        asynchronous; without one, a contiguous copy (what a device copy reads directly)."""
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.device}' tensor of dtype {self.dtype}: only "
                               f"dense CPU tensors can be pinned")
        backend = _pinning_backend(device)
        if backend is not None:
            return backend.pin_host(self.detach())
        return self.clone().contiguous()

    def record_stream(self, stream) -> None:
        """Mark this tensor's memory as used by work queued on ``stream`` (PyTorch's
        ``Tensor.record_stream``): when the tensor is freed, a stream-ordered allocator does not
        hand its memory out again before that work has finished. A no-op on backends whose
        kernels run when called."""
        hook = getattr(self._backend(), "record_stream", None)
        if hook is not None:
            hook(self, stream)

    def item(self):
        a = self._native
        if a.__class__ is np.ndarray and a.size == 1 and self.device.type == "cpu" and \
                not _capture_hooks:
            return a.item()     # the CPU's array, read in place: what to_numpy hands over
        if not getattr(self._backend(), "has_data", True):
            # PyTorch's message on meta tensors: a data-less device has no value to read
            raise RuntimeError(f"Tensor.item() cannot be called on {self.device.type} tensors")
        if self.numel() != 1:
            raise RuntimeError(f"item(): a Tensor with {self.numel()} elements cannot be converted to "
                               f"Scalar")
        return self._host().reshape(()).item()

    def tolist(self):
        a = self._host()
        if self.dtype is _dtype.bfloat16 or self.dtype is _dtype.float16:
            a = a.astype(np.float32)
        return a.tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(force=self.requires_grad and self.device.type == "cpu")
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a  # numpy 2 asks for a copy (np.array) and trusts us

    def __dlpack__(self, stream=None, **kwargs):
        if self.device.type != "cpu":
            export = getattr(self._backend(), "to_dlpack", None)
            if export is None:
                raise BufferError(f"__dlpack__: {self.device.type} tensors do not export DLPack; "
                                  f"call .cpu() first")
            return export(self, stream, **kwargs)
        return self._backend().native(self).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        if self.device.type != "cpu":
            device = getattr(self._backend(), "dlpack_device", None)
            if device is None:
                raise BufferError(f"__dlpack_device__: {self.device.type} tensors do not export "
                                  f"DLPack")
            return device(self)
        return (1, 0)  # kDLCPU

    def __repr__(self, *, tensor_contents=None):
        return tensor_repr(self, tensor_contents=tensor_contents)

    __str__ = __repr__

    def __format__(self, spec):
        # torch's rule: a 0-d plain Tensor formats as its number, with or without a spec
        # (f"{loss}" prints 0.25, not tensor(0.2500)); subclasses (Parameter) and meta tensors
        # format as their repr, and any spec on them is refused as object's
        if self.ndim == 0 and type(self) is Tensor and self.device.type != "meta":
            return self.detach().item().__format__(spec)
        return object.__format__(self, spec)

    # -- autograd metadata (filled in by ember.autograd) ----------------------------------------
    @property
    def requires_grad(self) -> bool:
        ag = self._ag
        return ag is not None and ag.requires_grad

    @property
    def is_leaf(self) -> bool:
        ag = self._ag
        return ag is None or ag.grad_fn is None

    @property
    def grad_fn(self):
        ag = self._ag
        return None if ag is None else ag.grad_fn


if _fastpath.C is not None:  # csrc/tensors.c: the same construction, compiled
    from .runtime.devices import device as _device_cls
    from .runtime.storage import Storage as _Storage
    _fastpath.C.install_tensors(Tensor, _Storage, _device_cls, _dtype.dtype, _keys.device_key)
    _fastpath.C.make_tensor.__module__ = __name__   # it stands for the method above (stubs)
    Tensor._make = classmethod(_fastpath.C.make_tensor)

# backends build tensors through ember.runtime.make_tensor, which calls Tensor._make
_runtime_tensors.install_tensor_class(
    Tensor, _fastpath.C.new_tensor if _fastpath.C is not None else None)


class Size(tuple):
    """``tensor.shape``: a tuple that prints like PyTorch's ``torch.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


def _pinning_backend(device=None):
    """The backend that pins host memory for ``pin_memory``: ``device``'s, else the first
    available backend with a ``pin_host`` method (None when there is none)."""
    if device is not None:
        name = str(device).split(":")[0]
        backend = _registry.get(name)
        if getattr(backend, "pin_host", None) is None:
            raise RuntimeError(f"pin_memory: the {name} backend does not pin host memory")
        return backend
    for name in _registry.names():
        if name in ("cpu", "meta"):
            continue
        backend = _registry.peek(name)
        if getattr(type(backend), "pin_host", None) is not None and \
                _registry.unavailable_reason(name) is None:
            return backend
    return None


def _wrap_dim(dim, ndim, op="op"):
    """PyTorch's dim wrapping: -1 is the last dim; a 0-d tensor accepts 0 and -1."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}")
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim
