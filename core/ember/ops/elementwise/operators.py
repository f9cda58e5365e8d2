"""Python operators and protocols on Tensor (``+``, ``-=``, ``==``, ``~``, ``in``, ``reversed``…),
mapped to the elementwise ops."""
from __future__ import annotations

import numpy as _np

from ... import _dtype
from ..._tensor import Tensor
from .._util import is_scalar, tensor_method
from .binary import add, add_, binary_api, div, div_, rsub, sub, sub_
from .unary import unary_api


def _rev(fn):
    return lambda self, other: fn(other, self)


def _inplace(fn_):
    return lambda self, other: fn_(self, other)


_pow = binary_api["pow"]
_mul = binary_api["mul"]
Tensor.__add__ = add  # the API functions take the tensor first: no wrapper needed
Tensor.__radd__ = lambda self, other: add(self, other)  # + and * commute: keep the fast path
Tensor.__iadd__ = _inplace(add_)
Tensor.__sub__ = sub
# a number first is sub's number-first form (RsubBackward1); a tensor, rsub (RsubBackward0)
Tensor.__rsub__ = lambda self, other: rsub(self, other) if isinstance(other, Tensor) else \
    sub(other, self)
Tensor.__isub__ = _inplace(sub_)
Tensor.__mul__ = _mul
Tensor.__rmul__ = lambda self, other: _mul(self, other)
Tensor.__imul__ = _inplace(binary_api["mul_"])
Tensor.__truediv__ = div
# torch's __rdiv__ is self.reciprocal() * other (its values, rounding and MulBackward0 node)
Tensor.__rtruediv__ = lambda self, other: _mul(unary_api["reciprocal"](self), other)
Tensor.__itruediv__ = _inplace(div_)
Tensor.__floordiv__ = lambda self, other: binary_api["floor_divide"](self, other)
Tensor.__rfloordiv__ = _rev(binary_api["floor_divide"])
Tensor.__ifloordiv__ = _inplace(binary_api["floor_divide_"])
Tensor.__mod__ = lambda self, other: binary_api["remainder"](self, other)
Tensor.__rmod__ = _rev(binary_api["remainder"])
Tensor.__imod__ = _inplace(binary_api["remainder_"])
Tensor.__pow__ = lambda self, other: _pow(self, other)
Tensor.__rpow__ = _rev(_pow)
Tensor.__ipow__ = _inplace(binary_api["pow_"])
Tensor.__neg__ = lambda self: unary_api["neg"](self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: unary_api["abs"](self)
Tensor.__invert__ = lambda self: (unary_api["logical_not"](self) if self.dtype is _dtype.bool_
                                  else unary_api["bitwise_not"](self))
for _py, _name in [("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                   ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift")]:
    setattr(Tensor, f"__{_py}__", (lambda f: lambda self, other: f(self, other))(binary_api[_name]))
    setattr(Tensor, f"__r{_py}__", _rev(binary_api[_name]))
    setattr(Tensor, f"__i{_py}__", _inplace(binary_api[_name + "_"]))
for _py, _name in [("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"),
                   ("ge", "ge")]:
    setattr(Tensor, f"__{_py}__", (lambda f: lambda self, other: f(self, other)
                                   if isinstance(other, (Tensor, _np.generic)) or is_scalar(other)
                                   else NotImplemented)(binary_api[_name]))
Tensor.__hash__ = lambda self: id(self)
# numpy scalars and arrays defer to the Tensor's reflected operators (np.float32(2) * t is a
# Tensor, as in PyTorch)
Tensor.__array_priority__ = 1000


@tensor_method("__contains__")
def _contains(self, element):
    if isinstance(element, (Tensor, int, float, bool, complex)):
        return bool((self == element).any().item())
    raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in "
                       f"a {type(element)}.")


@tensor_method("__reversed__")
def _reversed(self):
    return self if self.ndim == 0 else self.flip(0)


# Python 2's names PyTorch keeps
Tensor.__div__, Tensor.__rdiv__, Tensor.__idiv__ = (Tensor.__truediv__, Tensor.__rtruediv__,
                                                   Tensor.__itruediv__)
Tensor.__long__ = lambda self: int(self.item())
Tensor.__nonzero__ = Tensor.__bool__
