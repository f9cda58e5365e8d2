"""The rules every elementwise op shares: dtype promotion, broadcasting checks, operand checks,
and the family's meta functions (output shape and dtype without reading data)."""
from __future__ import annotations

import numpy as _np

from ... import _dtype
from ..._dtype import COMPLEX, FLOATING, INTEGRAL
from ..._tensor import Tensor
from .. import _meta
from .._meta import broadcast, real_of, shape_of
from .._util import _broadcast_pair, is_scalar

# kinds of unary op: "float" computes in a floating dtype (int inputs in the default float
# dtype); "same" keeps the input dtype; "pred" returns bool
FLOAT, SAME, PRED = "float", "same", "pred"
# kinds of binary op: "arith" computes and returns the result type; "float" computes in a float
# type (atan2…); "cmp" computes in the result type and returns bool; "logical" returns bool
# from any inputs; "int" accepts integral/bool only (bitwise, shifts)
ARITH, FLOAT_BINARY, CMP, LOGICAL, INT = "arith", "float", "cmp", "logical", "int"


# -- dtype rules --------------------------------------------------------------------------------
def binary_dtype(a, b):
    """PyTorch's result_type for two operands, with fast paths for the common cases."""
    da = a.dtype if a.__class__ is Tensor or isinstance(a, Tensor) else None
    db = b.dtype if b.__class__ is Tensor or isinstance(b, Tensor) else None
    if da is not None and da is db:
        return da
    if db is None and da is not None:
        c = b.__class__
        if c is float and da.category == FLOATING or c is int and da.category in (
                INTEGRAL, FLOATING) or c is bool:
            return da
    return _dtype.result_type(a, b)


def float_dtype(d):
    """The dtype a float-only op (exp, sqrt, div…) computes in for input dtype ``d``."""
    return d if d.category >= FLOATING else _dtype.get_default_dtype()


def dtypes_of(*xs):
    return " and ".join(str(x.dtype) if isinstance(x, Tensor) else type(x).__name__ for x in xs)


# -- operand checks -----------------------------------------------------------------------------
def check_bcast(a, b, op):
    sa = a._shape if isinstance(a, Tensor) else ()
    sb = b._shape if isinstance(b, Tensor) else ()
    if sa == sb:
        return sa
    try:
        return _broadcast_pair(sa, sb)
    except RuntimeError as e:
        raise RuntimeError(f"{op}: {e} (shapes {list(sa)} and {list(sb)})") from None


def check_scalar(x, op):
    """``x`` as an operand: a Tensor or a Python number (numpy scalars become Python numbers,
    as PyTorch takes them); TypeError otherwise. Only the slow paths call this."""
    c = x.__class__
    if c is Tensor or c is float or c is int or c is bool or c is complex:
        return x
    if isinstance(x, _np.generic):
        if x.dtype.kind in "biufc":
            return x.item()
    elif isinstance(x, Tensor) or is_scalar(x):
        return x
    raise TypeError(f"{op}(): expected a Tensor or a Python number, got {type(x).__name__}")


def check_operands(input, other, op):
    """A binary op's operands: at least one Tensor, the other a Tensor or a Python number
    (``check_scalar``); TypeError naming ``op`` otherwise."""
    if not isinstance(input, Tensor):
        if not isinstance(other, Tensor):
            raise TypeError(f"{op}(): expected at least one Tensor argument, got "
                            f"{type(input).__name__} and {type(other).__name__}")
        return check_scalar(input, op), other
    return input, check_scalar(other, op)


def is_bool(x):
    return x.dtype is _dtype.bool_ if isinstance(x, Tensor) else x.__class__ is bool


def check_sub(a, b, op):
    """PyTorch refuses ``-`` with any bool operand (a bool tensor or a Python bool)."""
    ba, bb = is_bool(a), is_bool(b)
    if ba and bb:
        raise RuntimeError(f"{op}: Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError(f"{op}: Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def check_overlap(t, op):
    """In-place writes into an expanded tensor (stride 0 over a dimension of size > 1) would
    write one element several times; PyTorch refuses them. (An empty tensor writes nothing.)"""
    if 0 in t._shape:
        return
    for n, s in zip(t._shape, t._stride):
        if s == 0 and n > 1:
            raise RuntimeError(f"{op}: unsupported operation: more than one element of the "
                               f"written-to tensor refers to a single memory location. Please "
                               f"clone() the tensor before performing the operation.")


def write_in_place(op_, name, self, *args):
    """Run the in-place op ``op_`` on ``self`` (refusing an expanded self) and bump its
    version, as ``Tensor.copy_`` does."""
    if 0 in self._stride:
        check_overlap(self, name)
    op_(self, *args)
    self._storage.version += 1
    return self


def require_tensor(x, op, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(x).__name__}")
    return x


def align(a, b):
    """Put the tensor operands on one device (0-d CPU tensors and scalars follow the other)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.device is not b.device:
        if b.ndim == 0 and b.device.type == "cpu":
            b = b.to(a.device)
        elif a.ndim == 0 and a.device.type == "cpu":
            a = a.to(b.device)
    return a, b


# -- meta functions -----------------------------------------------------------------------------
def unary_meta(name: str, kind: str):
    """``name(Tensor self, dtype compute)``: predicates return bool; abs of a complex tensor is
    real; the rest return ``compute``."""
    if kind == PRED:
        return lambda x, compute: (shape_of(_meta.tensor_arg(name, x)), _dtype.bool_)
    if name == "abs":
        return lambda x, compute: (shape_of(_meta.tensor_arg(name, x)), real_of(compute))
    return lambda x, compute: (shape_of(_meta.tensor_arg(name, x)), compute)


def binary_meta(name: str, kind: str):
    """``name(self, other, [alpha | rounding_mode,] dtype compute)``: broadcast shape;
    comparisons and logical ops return bool."""
    to_bool = kind in (CMP, LOGICAL)

    def meta(a, b, *rest):
        shape = broadcast(name, a, b)
        return shape, _dtype.bool_ if to_bool else rest[-1]
    return meta


def binary_inplace_meta(name: str):
    """In-place binary ops: ``other`` must broadcast to ``self``'s shape."""
    def meta(self, other, *rest):
        return _meta.same_shape(name, _meta.tensor_arg(name, self), broadcast(name, self, other),
                                f"self and other (shape {list(shape_of(other))})")
    return meta
