"""Factories: tensors from data, constants and ranges, each op with its meta; and PyTorch's
legacy constructors (``Tensor(...)``, ``FloatTensor(...)`` & co, ``Tensor.new``).

Factory ops have no tensor input; they dispatch on their ``device`` argument (``Op.on``), and
never reach autograd (``requires_grad=True`` marks the new leaf).
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import _dtype
from .._defaults import set_default_device
from .._device import as_device, device
from .._device import device as _device_cls
from .._tensor import Size, Tensor
from ..dispatch import keys as _keys
from ..dispatch.dispatcher import define
from . import _meta, _primitives
from ._util import as_shape, tensor_method, write_out
from ..runtime import determinism as _determinism
from .._layout import strided
from ..runtime.registry import registry
from ..runtime.storage import Storage
from .._warn import user_stacklevel


def _full_meta(size, fill_value, dtype, device):
    return _meta._size("full", size), dtype


def _arange_meta(start, end, step, dtype, device):
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    return (max(math.ceil((end - start) / step), 0),), dtype


def _linspace_meta(start, end, steps, dtype, device):
    return _meta._size("linspace", (steps,)), dtype


def _eye_meta(n, m, dtype, device):
    return _meta._size("eye", (n, m)), dtype


full_op = define("full(int[] size, Scalar fill_value, dtype dtype, Device device) -> Tensor",
                 meta=_full_meta)
arange_op = define("arange(Scalar start, Scalar end, Scalar step, dtype dtype, Device device) "
                   "-> Tensor", meta=_arange_meta)
linspace_op = define("linspace(Scalar start, Scalar end, int steps, dtype dtype, Device device) "
                     "-> Tensor", meta=_linspace_meta)
eye_op = define("eye(int n, int m, dtype dtype, Device device) -> Tensor", meta=_eye_meta)
_primitives.provide(full_op=full_op)


@full_op.def_onnx
def _full_onnx(b, c, size, value, dtype, device=None, *rest):
    shape = c.shape_tensor(size)
    np_dtype = np.dtype(dtype.np)
    if shape in b.initializers and not c.probe:     # a static size: the tensor itself
        return b.const(np.full(list(size), value, dtype=np_dtype), "full")
    return b.constant_of_shape(shape, value, np_dtype)


def _empty_composite(size, dtype, device):
    return registry.get(device.type).empty(size, dtype, device)


empty_op = define("empty(int[] size, dtype dtype, Device device) -> Tensor",
                  composite=_empty_composite)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    if _keys.state.inference_mode:   # made from Python data, not by an op: marked here
        t.__dict__["_inference"] = True
    return t


def _resolve(dtype, device, api):
    return (_dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype, api),
            as_device(device))


# -- from data ----------------------------------------------------------------------------------
def _infer_host_array(data, dtype):
    """numpy array for ``data`` with PyTorch's dtype inference for Python data."""
    if isinstance(data, Tensor):
        arr = data.detach()._host() if data.requires_grad else data._host()
        return arr if dtype is None else arr.astype(dtype.np)
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        arr = np.asarray(data)
        if arr.dtype not in _dtype._FROM_NP:
            raise TypeError(f"can't convert np.ndarray of type {arr.dtype}. The only supported "
                            f"types are: float64, float32, float16, complex64, complex128, "
                            f"int64, int32, int16, int8, uint8, and bool.")
        return np.array(arr, dtype=None if dtype is None else dtype.np)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], np.ndarray):
        _warn_list_of_arrays()
    try:
        try:
            # CPU tensors inside convert through __array__ (a replay buffer's lists take no walk)
            arr = np.array(data)
        except (TypeError, RuntimeError):
            # a tensor numpy cannot read where it is (another device): its host copy
            data = _unwrap_tensors(data)
            arr = np.array(data)
    except ValueError as e:
        raise ValueError(f"tensor(): expected a rectangular nested sequence of numbers ({e})") \
            from None
    if arr.dtype == object or arr.dtype.kind not in "biufc":
        bad = _first_bad(data)
        raise TypeError(f"tensor(): could not infer a dtype from element of type "
                        f"{type(bad).__name__}; expected numbers, bools or tensors")
    if dtype is None:
        kind = arr.dtype.kind
        dtype = (_dtype.bool_ if kind == "b" else _dtype.int64 if kind in "iu" else
                 _dtype.get_default_dtype() if kind == "f" else _dtype._default_complex())
    return arr.astype(dtype.np)


_LIST_OF_ARRAYS_WARNED = [False]


def _warn_list_of_arrays():
    # torch's TORCH_WARN_ONCE: once per process, whichever line converts such a list first
    if not _LIST_OF_ARRAYS_WARNED[0]:
        _LIST_OF_ARRAYS_WARNED[0] = True
        warnings.warn("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
                      "consider converting the list to a single numpy.ndarray with numpy.array() "
                      "before converting to a tensor.", UserWarning, stacklevel=user_stacklevel())


def _unwrap_tensors(data):
    if isinstance(data, Tensor):
        return data._host()
    if isinstance(data, (list, tuple)):
        return [_unwrap_tensors(x) for x in data]
    return data


def _first_bad(data):
    if isinstance(data, (list, tuple)):
        for x in data:
            b = _first_bad(x)
            if b is not None:
                return b
        return None
    return None if isinstance(data, (int, float, complex, bool, np.generic, np.ndarray)) else data


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    dtype = None if dtype is None else _dtype.as_dtype(dtype, "tensor")
    dev = as_device(device) if device is not None else (
        data.device if isinstance(data, Tensor) and device is None else as_device(None))
    arr = _infer_host_array(data, dtype)
    t = registry.get(dev.type).from_numpy(arr, dev)
    return _finish(t, requires_grad)


_primitives.provide(tensor=tensor)


def as_tensor(data, dtype=None, device=None):
    dtype = None if dtype is None else _dtype.as_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu") \
            and (dtype is None or dtype.np == data.dtype) and \
            as_device(None).type == "cpu" and data.dtype.kind in "biufc":
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    if copy:
        t = tensor(obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
    return _finish(t, requires_grad)


def from_numpy(array):
    """A CPU tensor sharing memory with ``array`` (writes show up on both sides)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    isz = array.itemsize
    strides = array.strides
    for s in strides:
        if s < 0 or s % isz:
            _refuse_strides(array)
    cpu = device("cpu")
    return Tensor._make(Storage(array, array.nbytes, cpu), array.shape,
                        tuple([s // isz for s in strides]), 0,
                        _dtype.from_numpy_dtype(array.dtype), cpu, array)


def _refuse_strides(array):
    """PyTorch's error for strides a tensor cannot have (negative ones first, as it checks)."""
    if any(s < 0 for s in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().)")
    _dtype.from_numpy_dtype(array.dtype)   # an unsupported dtype is named before the strides
    raise ValueError("from_numpy: strides that are not a multiple of the item size are not "
                     "supported; make a copy first")


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with any object implementing ``__dlpack__``: host memory becomes
    a CPU tensor; device memory goes to the backend that declares its DLPack device type
    (``Backend.dlpack_device_types``, e.g. kDLCUDA for the CUDA backend). ``device`` moves the
    result there; ``copy=True`` always copies, ``copy=False`` refuses to (torch's keywords)."""
    t = _from_dlpack(ext_tensor)
    if device is not None and as_device(device) is not t.device:
        if copy is False:
            raise BufferError(f"from_dlpack: moving the tensor from {t.device} to {device} "
                              f"needs a copy, but copy=False")
        return t.to(device)
    return t.clone() if copy else t


def _from_dlpack(ext):
    if isinstance(ext, Tensor):
        return ext
    device_type = ext.__dlpack_device__()[0] if hasattr(ext, "__dlpack_device__") else 1
    if device_type not in (1, 3):  # kDLCPU, kDLCUDAHost: numpy reads both
        reasons = []
        for name in registry.names():
            backend = registry.peek(name)
            if device_type in getattr(type(backend), "dlpack_device_types", ()):
                reason = registry.unavailable_reason(name)
                if reason is None:
                    return registry.get(name).from_dlpack(ext)
                reasons.append(f"{name}: {reason}")
        why = f" ({'; '.join(reasons)})" if reasons else ""
        raise BufferError(f"from_dlpack: no available backend imports DLPack device type "
                          f"{device_type}{why}")
    return from_numpy(np.from_dlpack(ext))


# -- constants ----------------------------------------------------------------------------------
def _size_args(args, size, op, required=False):
    """``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))`` (PyTorch's keyword) -> (2, 3). With no
    size at all: a ``required`` size is a TypeError, otherwise () (a 0-d tensor, ember's
    long-standing form for the constant factories)."""
    if size is not None:
        if args:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        args = (size,)
    elif not args:
        if required:
            raise TypeError(f"{op}() missing 1 required positional argument: 'size'")
        return ()
    return as_shape(args, op)


def _check_layout(layout, op):
    if layout is not None and layout is not _strided():
        raise RuntimeError(f"{op}(): layout {layout} is not supported for dense factories; "
                           f"make a strided tensor and call .to_sparse()")


def _strided():
    return strided


def _factory_out(t, out, op, requires_grad):
    if out is not None:
        return write_out(out, t, op)
    return _finish(t, requires_grad)


def empty(*size_args, size=None, dtype=None, layout=None, device=None, requires_grad=False,
          out=None, memory_format=None, pin_memory=False):
    shape = _size_args(size_args, size, "empty")
    _check_layout(layout, "empty")
    if out is not None and dtype is None:
        dtype = out.dtype
    d, dev = _resolve(dtype, device, "empty")
    if memory_format is not None and memory_format is not _mf.contiguous_format:
        if memory_format is _mf.preserve_format:
            raise RuntimeError("empty(): preserve memory format is unsupported by the "
                               "contiguous format; use empty_like")
        order = _mf.channels_last_order(len(shape), memory_format)
        t = empty_op.on(dev, tuple(shape[k] for k in order), d, dev)
        t = _views.permute_op(t, tuple(order.index(k) for k in range(len(order))))
        del t._view_base  # new storage: to the user (and autograd) it is no view
    else:
        t = empty_op.on(dev, shape, d, dev)
    if _determinism.fill_uninitialized_memory():
        fill_uninitialized(t)
    return _factory_out(t, out, "empty", requires_grad)


def fill_uninitialized(t):
    """What deterministic mode writes into uninitialized memory (PyTorch's rule): NaN for
    floating and complex dtypes, the largest value for integers (True for bool)."""
    if t.dtype.category >= _dtype.FLOATING:
        value = float("nan")
    elif t.dtype is _dtype.bool_:
        value = True
    else:
        value = int(np.iinfo(t.dtype.np).max)
    return t.fill_(value) if t.numel() else t


def _fill_dtype(fill_value, dtype):
    if not isinstance(fill_value, (Tensor, int, float, complex, bool, np.generic)):
        raise TypeError(f"full(): argument 'fill_value' must be a number, not "
                        f"{type(fill_value).__name__}")
    if dtype is not None:
        return _dtype.as_dtype(dtype, "full")
    if isinstance(fill_value, Tensor):
        return fill_value.dtype
    return _dtype.scalar_dtype(fill_value)


def full(size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
         out=None, pin_memory=False):
    _check_layout(layout, "full")
    if out is not None and dtype is None:
        dtype = out.dtype
    d = _fill_dtype(fill_value, dtype)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dev = as_device(device)
    return _factory_out(full_op.on(dev, as_shape((size,), "full"), fill_value, d, dev), out,
                        "full", requires_grad)


def _constant(op, value, size_args, size, dtype, layout, device, requires_grad, out):
    """``zeros`` and ``ones``: a tensor of ``value`` in the default (or ``out``'s) dtype."""
    shape = _size_args(size_args, size, op)
    _check_layout(layout, op)
    if out is not None and dtype is None:
        dtype = out.dtype
    d, dev = _resolve(dtype, device, op)
    return _factory_out(full_op.on(dev, shape, value, d, dev), out, op, requires_grad)


def zeros(*size_args, size=None, dtype=None, layout=None, device=None, requires_grad=False,
          out=None, pin_memory=False):
    return _constant("zeros", 0, size_args, size, dtype, layout, device, requires_grad, out)


def ones(*size_args, size=None, dtype=None, layout=None, device=None, requires_grad=False,
         out=None, pin_memory=False):
    return _constant("ones", 1, size_args, size, dtype, layout, device, requires_grad, out)


def in_layout(make, input, memory_format, op):
    """``make(shape)`` laid out like ``input`` under ``memory_format`` (preserve_format keeps a
    permuted dense layout, as PyTorch's *_like factories do)."""
    order = _conv.order_for(input, memory_format, op)
    if order == sorted(order):
        return make(input._shape)
    t = make(tuple(input._shape[d] for d in order))
    out = _views.permute_op(t, tuple(order.index(d) for d in range(len(order))))
    del out._view_base  # its storage is new: to the user (and autograd) it is no view
    return out


def _like(fn):
    def like(input, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False, memory_format=None):
        _check_layout(layout, like.__name__)
        if input.__class__ is not Tensor and hasattr(input, "_like_factory"):
            # ember.func.vmap: the like of a batched tensor is batched (one per example)
            return input._like_factory(like, dtype=dtype, device=device,
                                       requires_grad=requires_grad)
        t = in_layout(lambda shape: fn(shape, dtype=input.dtype if dtype is None else dtype,
                                       device=input.device if device is None else device),
                      input, memory_format, like.__name__)
        return _finish(t, requires_grad) if requires_grad else t
    like.__name__ = fn.__name__ + "_like"
    return like


empty_like = _like(empty)
zeros_like = _like(zeros)
ones_like = _like(ones)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False, memory_format=None):
    _check_layout(layout, "full_like")
    if input.__class__ is not Tensor and hasattr(input, "_like_factory"):
        return input._like_factory(full_like, fill_value, dtype=dtype, device=device,
                                   requires_grad=requires_grad)
    t = in_layout(lambda shape: full(shape, fill_value,
                                     dtype=input.dtype if dtype is None else dtype,
                                     device=input.device if device is None else device),
                  input, memory_format, "full_like")
    return _finish(t, requires_grad) if requires_grad else t


# x.new_*(...): the factory with x's dtype and device unless given (torch's keyword-only options)
def _new_sized(name, factory):
    """``Tensor.<name>(*size, ...)``: ``factory`` with the tensor's dtype and device unless
    given (``new_empty``, ``new_zeros``, ``new_ones``)."""
    def fn(self, *size, dtype=None, layout=None, device=None, pin_memory=False,
           requires_grad=False):
        _check_layout(layout, name)
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad)
    fn.__name__ = fn.__qualname__ = name
    return tensor_method()(fn)


new_empty = _new_sized("new_empty", empty)
new_zeros = _new_sized("new_zeros", zeros)
new_ones = _new_sized("new_ones", ones)


@tensor_method()
def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    _check_layout(layout, "new_full")
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@tensor_method()
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
    _check_layout(layout, "new_tensor")
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


# -- ranges -------------------------------------------------------------------------------------
def _num(x):
    return x.item() if isinstance(x, Tensor) else x


def arange(start=None, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    """``arange(end)``, ``arange(start, end, step=1)`` (``end=`` alone too, as torch)."""
    _check_layout(layout, "arange")
    dtype, device = _like_out(out, dtype, device)
    if end is None:
        if start is None:
            raise TypeError('arange() missing 1 required positional arguments: "end"')
        start, end = 0, start
    elif start is None:
        start = 0
    start, end, step = _num(start), _num(end), _num(step)
    if dtype is None:
        dtype = (_dtype.get_default_dtype()
                 if any(isinstance(v, float) for v in (start, end, step)) else _dtype.int64)
    dtype = _dtype.as_dtype(dtype, "arange")
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if any(isinstance(v, float) and not math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"arange: unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dtype.category == _dtype.INTEGRAL and any(isinstance(v, float) for v in (start, end, step)):
        start, end, step = _integer_range(start, end, step, dtype)
    dev = as_device(device)
    return _factory_out(arange_op.on(dev, start, end, step, dtype, dev), out, "arange",
                        requires_grad)


_primitives.provide(arange=arange)


def _integer_range(start, end, step, dtype):
    """PyTorch's integer arange of float bounds: start, end and step are truncated to integers
    (its int64 accumulator); the length is counted from those for int64 and from the float
    bounds for the smaller integer types. Returns integer (start, end, step) of that length."""
    xs, xe, xt = int(start), int(end), int(step)
    if xt == 0:
        raise RuntimeError("arange: step must be nonzero")
    if dtype is _dtype.int64:
        n = -((xe - xs) // -xt)               # ceil division, exact
    else:
        n = math.ceil((end - start) / step)
    return xs, xs + max(n, 0) * xt, xt


def _range_ends(start, end, dtype):
    """PyTorch converts the ends of an integer linspace/logspace to the integer type first
    (``linspace(0, 1.9, 2, dtype=int64)`` runs from 0 to 1, so its steps are whole)."""
    start, end = _num(start), _num(end)
    if dtype.category <= _dtype.INTEGRAL and dtype is not _dtype.bool_:
        start, end = (int(v.real if isinstance(v, complex) else v) for v in (start, end))
    return start, end


def _like_out(out, dtype, device):
    """A factory given ``out=`` makes out's dtype on out's device unless told otherwise."""
    if out is None:
        return dtype, device
    return (out.dtype if dtype is None else dtype), (out.device if device is None else device)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             pin_memory=False, requires_grad=False):
    _check_layout(layout, "linspace")
    if steps < 0:
        raise RuntimeError("linspace: number of steps must be non-negative")
    d, dev = _resolve(*_like_out(out, dtype, device), "linspace")
    start, end = _range_ends(start, end, d)
    return _factory_out(linspace_op.on(dev, start, end, int(steps), d, dev), out, "linspace",
                        requires_grad)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             pin_memory=False, requires_grad=False):
    _check_layout(layout, "logspace")
    d, dev = _resolve(*_like_out(out, dtype, device), "logspace")
    start, end = _range_ends(start, end, d)
    exps = linspace(start, end, steps, dtype=_dtype.float64, device=dev)
    return _factory_out((float(base) ** exps).to(d), out, "logspace", requires_grad)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
        requires_grad=False):
    _check_layout(layout, "eye")
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"eye: n and m must be non-negative, got n={n}, m={m}")
    d, dev = _resolve(*_like_out(out, dtype, device), "eye")
    return _factory_out(eye_op.on(dev, int(n), int(n if m is None else m), d, dev), out, "eye",
                        requires_grad)


# -- the legacy constructors --------------------------------------------------------------------
# PyTorch's legacy constructors: ``Tensor(...)``, ``FloatTensor(...)`` & co, ``Tensor.new``.
# 
# ``ember.Tensor(data)`` is *not* ``ember.tensor(data)``: it always makes the default dtype
# (``Tensor([1, 2])`` is float32), an int argument is a *size* (``Tensor(3)`` is an uninitialized
# tensor of 3 elements, ``Tensor(2, 3)`` and ``Tensor(ember.Size([2, 3]))`` likewise),
# ``Tensor()`` is empty, and ``Tensor(t)`` of a tensor is an alias of ``t`` (same dtype, shared
# memory). ``FloatTensor``, ``LongTensor``… do the same with their dtype; they are not subclasses
# (``type(FloatTensor([1]))`` is ``Tensor``), but ``isinstance(x, ember.FloatTensor)`` holds for a
# float32 CPU tensor, as in PyTorch. Uninitialized memory follows deterministic mode
# (``ember.utils.deterministic``).
LEGACY_TENSOR_NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
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
    warnings.warn("ember.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "ember.set_default_dtype() and ember.set_default_device() as alternatives.",
                  UserWarning, stacklevel=user_stacklevel())
    d = dtype_of_type(t) if not isinstance(t, _dtype.dtype) else None
    if d is None:
        raise TypeError(f"invalid type object: only floating-point types are supported as the "
                        f"default type (got {t!r})")
    if isinstance(t, str) and t.count(".") > 1:
        device_type = t.split(".")[1]
        set_default_device(device_type)
    _dtype.set_default_dtype(d)


Tensor.new = tensor_new


def _tensor_new(cls, *args, **kwargs):
    """``ember.Tensor(...)``: PyTorch's legacy constructor — the default dtype, ints are sizes
    (``Tensor(3)`` is uninitialized), a tensor argument is aliased. Installed here rather than
    in ``_tensor.py``, which must not import the factory ops (they dispatch)."""
    t = legacy_new(_dtype.get_default_dtype(), as_device(None), args, kwargs)
    return t if cls is Tensor else t.as_subclass(cls)


Tensor.__new__ = _tensor_new


# last: these families import this module (their functions are only called, never read here)
from . import conversion as _conv  # noqa: E402
from . import views as _views  # noqa: E402
from .. import _memory_format as _mf  # noqa: E402
