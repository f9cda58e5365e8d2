"""Shared helpers for op definitions: shape rules, argument checks, Tensor method binding."""
from __future__ import annotations

import ember

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
# shape rules every backend needs live in the runtime, below the ops
from ..runtime.layout import broadcast_pair as _broadcast_pair  # noqa: F401
from ..runtime.layout import broadcast_shapes, contiguous_strides  # noqa: F401

SCALAR_TYPES = (int, float, bool, complex)


def is_scalar(x) -> bool:
    return x.__class__ in SCALAR_TYPES or (not isinstance(x, Tensor) and
                                           isinstance(x, (int, float, complex)))


def tensor_method(*names):
    """Attach the decorated function to Tensor under each name (the first is its own name)."""
    def attach(fn):
        for name in names or (fn.__name__,):
            setattr(Tensor, name, fn)
        return fn
    return attach


def require_tensor(x, fn: str, name: str = "input") -> None:
    """PyTorch's message for a non-tensor where a function takes a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def ember_namespace():
    """The public ``ember`` namespace, for compositions written with its functions (bound while
    ``ember`` itself is still importing: read its attributes when called, not at import)."""
    return ember


def scalar_beside(other, input):
    """``other`` as a Tensor: a Python scalar becomes a 0-d tensor on ``input``'s device."""
    if isinstance(other, Tensor):
        return other
    return ember_namespace().tensor(other, device=input.device)


#: ``ember.<name>`` functions defined away from the op families ``ember/__init__`` star-imports
#: (the ``torch.*`` native forms of nn functions): filled by ``torch_function``
TORCH_FUNCTIONS: dict = {}


def torch_function(name: str):
    """Register the decorated function as ``ember.<name>`` (PyTorch's ``torch.<name>``), named
    so in tracebacks and reprs; for a native form whose signature differs from the
    ``nn.functional`` function of the same name that its module also defines."""
    def register(fn):
        fn.__name__ = fn.__qualname__ = name
        TORCH_FUNCTIONS[name] = fn
        return fn
    return register


def shape_of(x) -> tuple:
    return x._shape if isinstance(x, Tensor) else ()


def normalize_dims(dim, ndim: int, op: str) -> tuple:
    """``dim`` (None, int, or a sequence) -> sorted tuple of non-negative dims; None = all."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        out = tuple(_wrap_dim(d, ndim, op) for d in dim)
        if len(set(out)) != len(out):
            repeated = next(d for i, d in enumerate(out) if d in out[:i])
            raise RuntimeError(f"{op}: dim {repeated} appears multiple times in the list of dims")
        return tuple(sorted(out))
    return (_wrap_dim(dim, ndim, op),)


def as_shape(args, op="op") -> tuple:
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(ember.Size(...))`` -> (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    out = []
    for s in args:
        if isinstance(s, Tensor):
            s = int(s)
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}(): size must be a sequence of ints, got "
                            f"{type(s).__name__}")
        s = s.__index__()
        if s < 0:
            raise RuntimeError(f"{op}(): trying to create tensor with negative dimension {s}: "
                               f"{list(args)}")
        out.append(s)
    n = 1
    for s in out:
        n *= s
    if n > _INT64_MAX:
        raise RuntimeError(f"{op}(): Storage size calculation overflowed with sizes={out}")
    return tuple(out)


_INT64_MAX = (1 << 63) - 1


def check_inplace(op: str, self, result_dtype, result_shape) -> None:
    if not _dtype.can_cast(result_dtype, self.dtype):
        raise RuntimeError(f"{op}: result type {_dtype_title(result_dtype)} can't be cast to the "
                           f"desired output type {_dtype_title(self.dtype)}")
    if result_shape != self._shape:
        raise RuntimeError(f"{op}: output with shape {list(self._shape)} doesn't match the "
                           f"broadcast shape {list(result_shape)}")


_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
              "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
              "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def cpp_dtype_name(d) -> str:
    """The C++ spelling of a dtype in PyTorch's kernel messages (``c10::Half``, ``long int``)."""
    return _CPP_NAMES[d.name]


def _dtype_title(d) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


def _resize_empty_(t, shape):
    """Give an empty tensor a fresh storage of ``shape`` (used by ``out=``)."""
    fresh = t._backend().empty(tuple(shape), t.dtype, t.device)
    t._storage, t._shape, t._stride, t._offset = (fresh._storage, fresh._shape, fresh._stride,
                                                  fresh._offset)
    t._native = None


def write_out(out, result, op: str):
    """Honor ``out=``: copy the result into ``out`` (resized when empty, like PyTorch)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._shape != result._shape:
        if out.numel() != 0:
            raise RuntimeError(f"{op}: out= has shape {list(out._shape)} but the result has "
                               f"shape {list(result._shape)}")
        _resize_empty_(out, result._shape)
    if not _dtype.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{op}: result type {_dtype_title(result.dtype)} can't be cast to the "
                           f"desired output type {_dtype_title(out.dtype)}")
    out.copy_(result)
    return out


def every_example(t):
    """``t`` with any ``vmap`` batching undone: a plain tensor holding every example. For
    argument checks that read values (index bounds), which hold or fail for the whole batch
    (PyTorch checks these in its kernels, where the batch is physical)."""
    while getattr(t, "_value", None) is not None:
        t = t._value
    return t
