"""PyTorch's legacy constructors: ``Tensor(...)``, ``FloatTensor(...)`` & co, ``Tensor.new``.

``ember.Tensor(data)`` is *not* ``ember.tensor(data)``: it always makes the default dtype
(``Tensor([1, 2])`` is float32), an int argument is a *size* (``Tensor(3)`` is an uninitialized
tensor of 3 elements, ``Tensor(2, 3)`` and ``Tensor(ember.Size([2, 3]))`` likewise),
``Tensor()`` is empty, and ``Tensor(t)`` of a tensor is an alias of ``t`` (same dtype, shared
memory). ``FloatTensor``, ``LongTensor``… do the same with their dtype; they are not subclasses
(``type(FloatTensor([1]))`` is ``Tensor``), but ``isinstance(x, ember.FloatTensor)`` holds for a
float32 CPU tensor, as in PyTorch. Uninitialized memory follows deterministic mode
(``ember.utils.deterministic``).
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _dtype
from ._tensor import Size, Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
           "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
           "ComplexFloatTensor", "ComplexDoubleTensor", "set_default_tensor_type"]

# class name -> dtype name (PyTorch's legacy type names)
_TYPE_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
               "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8",
               "ShortTensor": "int16", "IntTensor": "int32", "LongTensor": "int64",
               "BoolTensor": "bool", "ComplexFloatTensor": "complex64",
               "ComplexDoubleTensor": "complex128"}
_NAME_OF_DTYPE = {v: k for k, v in _TYPE_NAMES.items()}

_SIGNATURES = (" * (*, ember.device device = None)\n"
               " * (Tensor other)\n"
               " * (tuple of ints size, *, ember.device device = None)\n"
               " * (object data, *, ember.device device = None)")


def _invalid(args, kwargs, fn="new"):
    got = ", ".join([type(a).__name__ for a in args] +
                    [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"{fn}() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{_SIGNATURES}")


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def legacy_new(dtype, device, args, kwargs, *, typed_name=None, fn="new"):
    """What ``Tensor(*args, device=...)`` makes in ``dtype`` (``typed_name``: the legacy class
    called, whose dtype a tensor argument must already have)."""
    from ._device import as_device
    from .ops.factories import empty, tensor

    extra = set(kwargs) - {"device"}
    if extra:
        raise _invalid(args, kwargs, fn)
    if "device" in kwargs and kwargs["device"] is not None:
        device = as_device(kwargs["device"])
    if not args:
        return empty(0, dtype=dtype, device=device)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if typed_name is not None and first.dtype is not dtype:
            raise TypeError(f"expected {typed_name} (dtype {dtype.name}) but got a tensor of "
                            f"dtype {first.dtype.name}")
        if first.device is not device and "device" in kwargs:
            raise RuntimeError(f"Attempted to make a tensor into a differing device: expected "
                               f"{device} but got {first.device}")
        return first.detach()  # an alias: same storage, outside the graph
    if len(args) == 1 and isinstance(first, Size) or all(_is_int(a) for a in args):
        size = tuple(first) if len(args) == 1 and isinstance(first, Size) else tuple(args)
        for s in size:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(size)}")
        return empty(*size, dtype=dtype, device=device)
    if len(args) > 1:
        bad = next(a for a in args if not _is_int(a))
        raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos "
                        f"{args.index(bad) + 1} with error \"type must be tuple of ints,but got "
                        f"{type(bad).__name__}\"")
    if isinstance(first, str):
        raise TypeError(f"{fn}(): invalid data type 'str'")
    if isinstance(first, (numbers.Number, np.generic)) and not isinstance(first, np.ndarray):
        raise TypeError(f"{fn}(): data must be a sequence (got {type(first).__name__})")
    return tensor(first, dtype=dtype, device=device)


class _LegacyTensorType(type):
    """The metaclass of ``FloatTensor`` & co: calling one constructs a plain Tensor of its
    dtype; ``isinstance(x, FloatTensor)`` asks for a float32 tensor on the CPU."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __subclasscheck__(cls, sub):
        return sub is cls

    def __call__(cls, *args, **kwargs):
        from ._device import device as _device_cls
        return legacy_new(cls.dtype, _device_cls("cpu"), args, kwargs, typed_name=cls.__name__,
                          fn=cls.__name__)

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def _make_type(name):
    dt = _dtype.as_dtype(_TYPE_NAMES[name])
    return _LegacyTensorType(name, (), {"dtype": dt, "is_cuda": False, "is_sparse": False,
                                        "__module__": "ember",
                                        "__doc__": f"Legacy constructor of {dt.name} CPU "
                                                   f"tensors (PyTorch's torch.{name})."})


_TYPES = {name: _make_type(name) for name in _TYPE_NAMES}
globals().update(_TYPES)


def type_name(t) -> str:
    """``Tensor.type()``: PyTorch's legacy type string, e.g. ``ember.FloatTensor`` (CPU) or
    ``ember.opencl.FloatTensor``."""
    name = _NAME_OF_DTYPE[t.dtype.name]
    return f"ember.{name}" if t.device.type == "cpu" else f"ember.{t.device.type}.{name}"


def dtype_of_type(value):
    """The dtype a ``Tensor.type(...)`` argument names: a dtype, a legacy class, or a type
    string (``"torch.IntTensor"``, ``"ember.cuda.FloatTensor"``); None when it is none of
    these."""
    if isinstance(value, _dtype.dtype):
        return value
    if isinstance(value, _LegacyTensorType):
        return value.dtype
    if isinstance(value, str):
        name = value.rsplit(".", 1)[-1]
        if name in _TYPE_NAMES:
            return _dtype.as_dtype(_TYPE_NAMES[name])
        raise ValueError(f"invalid type: '{value}'")
    return None


def tensor_new(self, *args, **kwargs):
    """``t.new(...)``: the legacy constructor with ``t``'s dtype and device."""
    return legacy_new(self.dtype, self.device, args, kwargs)


def set_default_tensor_type(t) -> None:
    """Deprecated in PyTorch 2.1: the default dtype from a legacy class or type string (only
    floating types, as in PyTorch). Use ``ember.set_default_dtype``."""
    import warnings
    warnings.warn("ember.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "ember.set_default_dtype() and ember.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    d = dtype_of_type(t) if not isinstance(t, _dtype.dtype) else None
    if d is None:
        raise TypeError(f"invalid type object: only floating-point types are supported as the "
                        f"default type (got {t!r})")
    if isinstance(t, str) and t.count(".") > 1:
        device_type = t.split(".")[1]
        from ._defaults import set_default_device
        set_default_device(device_type)
    _dtype.set_default_dtype(d)


Tensor.new = tensor_new


def _tensor_new(cls, *args, **kwargs):
    """``ember.Tensor(...)``: PyTorch's legacy constructor — the default dtype, ints are sizes
    (``Tensor(3)`` is uninitialized), a tensor argument is aliased. Installed here rather than
    in ``_tensor.py``, which must not import the factory ops (they dispatch)."""
    from ._device import as_device
    t = legacy_new(_dtype.get_default_dtype(), as_device(None), args, kwargs)
    return t if cls is Tensor else t.as_subclass(cls)


Tensor.__new__ = _tensor_new
