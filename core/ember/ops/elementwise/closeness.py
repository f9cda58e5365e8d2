"""``isclose``, ``allclose``, ``equal``: comparisons of whole tensors, written in ember ops (as
PyTorch's are composites), so every backend runs them and none needs a kernel."""
from __future__ import annotations

from ... import _dtype
from ..._tensor import Tensor
from .._util import _dtype_title, broadcast_shapes
from ._rules import float_dtype

__all__ = ["isclose", "allclose", "equal"]


def _tensor_arg(x, fn, name, position):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, not "
                        f"{type(x).__name__}")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (both finite), or equal (so
    infinities of one sign match); NaNs match each other only with ``equal_nan``."""
    _tensor_arg(input, "isclose", "input", 1)
    _tensor_arg(other, "isclose", "other", 2)
    return _isclose(input, other, rtol, atol, equal_nan, "isclose")


def _isclose(input, other, rtol, atol, equal_nan, op):
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{op}: {_dtype_title(input.dtype)} did not match "
                           f"{_dtype_title(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"{op}: rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"{op}: atol must be greater than or equal to zero, but got {atol}")
    try:
        broadcast_shapes(input._shape, other._shape)
    except RuntimeError as e:
        raise RuntimeError(f"{op}: {e}") from None
    close = input.eq(other)
    inexact = input.dtype.category >= _dtype.FLOATING
    if equal_nan and inexact:
        close = close.logical_or(input.isnan().logical_and(other.isnan()))
    if input.dtype is _dtype.bool_ or (rtol == 0 and atol == 0):
        return close
    if not inexact:  # integers compare through the default float dtype, as in PyTorch
        d = float_dtype(input.dtype)
        input, other = input.to(d), other.to(d)
    allowed = (other * rtol).abs() + atol
    actual = (input - other).abs()
    return close.logical_or(actual.isfinite().logical_and(actual.le(allowed)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when ``isclose`` holds for every element (after broadcasting)."""
    _tensor_arg(input, "allclose", "input", 1)
    _tensor_arg(other, "allclose", "other", 2)
    return bool(_isclose(input, other, rtol, atol, equal_nan, "allclose").all().item())


def equal(input, other) -> bool:
    """True when both tensors have the same shape and the same values (NaN never equals NaN);
    values of different dtypes are compared after promotion."""
    _tensor_arg(input, "equal", "input", 1)
    _tensor_arg(other, "equal", "other", 2)
    if input.device is not other.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {input.device} and {other.device}! (in equal)")
    if input._shape != other._shape:
        return False
    return bool(input.eq(other).all().item())


Tensor.isclose = isclose
Tensor.allclose = allclose
Tensor.equal = equal
