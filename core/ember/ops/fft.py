"""The FFT primitives every ``ember.fft`` function is made of (PyTorch's ATen ops):

``_fft_c2c(Tensor self, int[] dim, int normalization, bool forward)``  complex -> complex
``_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided)`` real -> complex (forward)
``_fft_c2r(Tensor self, int[] dim, int normalization, int last_dim_size)`` complex -> real
(inverse, the Hermitian half along ``dim[-1]`` in, ``last_dim_size`` points out)

``normalization`` scales the result: 0 none, 1 by 1/sqrt(n), 2 by 1/n, with n the number of
points of the transformed signal (PyTorch's ``fft_norm_mode``). Kernels get ``dim`` sorted
as the caller gave it (the last entry is the halved one), unique and wrapped.

The derivatives are PyTorch's (``derivatives.yaml``, ``FunctionsManual.cpp``): the adjoint of a
transform is the opposite transform with the same normalization; r2c's adjoint zero-fills the
missing half before the inverse c2c and keeps the real part; c2r's adjoint is a onesided r2c
whose entries that stand for two conjugate bins are doubled.
"""
from __future__ import annotations

import math

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import _grad
from . import _meta
from . import views as _views

NORM_NONE, NORM_BY_ROOT_N, NORM_BY_N = 0, 1, 2
_REAL_FFT_DTYPES = (_dtype.float32, _dtype.float64)


def norm_scale(normalization: int, n: int) -> float:
    """The factor a kernel multiplies its result by."""
    if normalization == NORM_BY_ROOT_N:
        return 1.0 / math.sqrt(n) if n else 1.0
    if normalization == NORM_BY_N:
        return 1.0 / n if n else 1.0
    return 1.0


# -- metas --------------------------------------------------------------------------------------
def _check_dims(op, self, dim):
    _meta.tensor_arg(op, self)
    for d in dim:
        if not 0 <= d < self.ndim:
            raise IndexError(f"{op}: dim {d} out of range for a tensor of {self.ndim} dims "
                             f"(shape {list(self._shape)}); dims must be wrapped")
    if len(set(dim)) != len(dim):
        raise RuntimeError(f"{op}: FFT dims must be unique, got {list(dim)}")
    return tuple(self._shape)


def _check_normalization(op, normalization):
    if normalization not in (NORM_NONE, NORM_BY_ROOT_N, NORM_BY_N):
        raise ValueError(f"{op}: normalization must be 0, 1 or 2, got {normalization!r}")


def _c2c_meta(self, dim, normalization, forward):
    shape = _check_dims("_fft_c2c", self, dim)
    _check_normalization("_fft_c2c", normalization)
    if self.dtype.category != _dtype.COMPLEX:
        raise RuntimeError(f"_fft_c2c: expects a complex input tensor, but got {self.dtype}")
    return shape, self.dtype


def _r2c_meta(self, dim, normalization, onesided):
    shape = list(_check_dims("_fft_r2c", self, dim))
    _check_normalization("_fft_r2c", normalization)
    if self.dtype not in _REAL_FFT_DTYPES:
        raise RuntimeError(f"_fft_r2c: expects a float32 or float64 input tensor, but got "
                           f"{self.dtype}")
    if onesided and dim:
        shape[dim[-1]] = shape[dim[-1]] // 2 + 1
    return tuple(shape), self.dtype.to_complex()


def _c2r_meta(self, dim, normalization, last_dim_size):
    shape = list(_check_dims("_fft_c2r", self, dim))
    _check_normalization("_fft_c2r", normalization)
    if self.dtype.category != _dtype.COMPLEX:
        raise RuntimeError(f"_fft_c2r: expects a complex input tensor, but got {self.dtype}")
    if not dim:
        raise RuntimeError("_fft_c2r: must transform at least one dim")
    if last_dim_size < 1:
        raise RuntimeError(f"_fft_c2r: Invalid number of data points ({last_dim_size}) "
                           f"specified")
    half = last_dim_size // 2 + 1
    if shape[dim[-1]] != half:
        raise RuntimeError(f"_fft_c2r: input of shape {shape} has {shape[dim[-1]]} points in dim "
                           f"{dim[-1]}, expected last_dim_size // 2 + 1 = {half}")
    shape[dim[-1]] = last_dim_size
    return tuple(shape), self.dtype.to_real()


# -- derivatives --------------------------------------------------------------------------------
def _c2c_backward(ctx, g, self, dim, normalization, forward):
    return (fft_c2c_op(_grad.cast(g, ctx.meta(0)[1]), dim, normalization, not forward),)


def _r2c_backward(ctx, g, self, dim, normalization, onesided):
    in_shape = ctx.meta(0)[0]
    if onesided and dim:
        last = dim[-1]
        missing = in_shape[last] - g._shape[last]
        if missing > 0:
            pad_shape = list(g._shape)
            pad_shape[last] = missing
            g = _shape_ops.cat([g, _grad.zeros(pad_shape, g)], last)
    return (_views.real(fft_c2c_op(g, dim, normalization, False)),)


def _c2r_backward(ctx, g, self, dim, normalization, last_dim_size):
    gi = fft_r2c_op(g, dim, normalization, True)
    last = dim[-1]
    half = gi._shape[last]
    doubled = last_dim_size - half
    if doubled > 0:
        # bins 1..doubled stand for themselves and their mirrored conjugates
        weight = [1.0] + [2.0] * doubled + [1.0] * (half - 1 - doubled)
        shape = [1] * gi.ndim
        shape[last] = half
        w = _factories.tensor(weight, dtype=gi.dtype.to_real(), device=gi.device).view(shape)
        gi = gi * w
    return (gi,)


fft_c2c_op = define("_fft_c2c(Tensor self, int[] dim, int normalization, bool forward) -> Tensor",
                    meta=_c2c_meta,
                    derivative=Derivative(_c2c_backward, name="FftC2CBackward0",
                                          complex_ok=True),
                    doc="n-dim complex FFT over the wrapped, unique dims; forward = exp(-i...).")
fft_r2c_op = define("_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor",
                    meta=_r2c_meta,
                    derivative=Derivative(_r2c_backward, name="FftR2CBackward0",
                                          complex_ok=True),
                    doc="Forward FFT of a real tensor; onesided keeps n//2+1 bins of dim[-1].")
fft_c2r_op = define("_fft_c2r(Tensor self, int[] dim, int normalization, int last_dim_size) -> "
                    "Tensor", meta=_c2r_meta,
                    derivative=Derivative(_c2r_backward, name="FftC2RBackward0",
                                          complex_ok=True),
                    doc="Inverse FFT of a Hermitian half spectrum to a real tensor.")


def _fft_c2c(input, dim, normalization, forward):
    """``torch._fft_c2c``: the primitive, for code written against ATen's names."""
    return fft_c2c_op(input, _wrapped(input, dim), int(normalization), bool(forward))


def _fft_r2c(input, dim, normalization, onesided):
    return fft_r2c_op(input, _wrapped(input, dim), int(normalization), bool(onesided))


def _fft_c2r(input, dim, normalization, last_dim_size):
    return fft_c2r_op(input, _wrapped(input, dim), int(normalization), int(last_dim_size))


def _wrapped(input, dim):
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor, got {type(input).__name__}")
    dims = [dim] if isinstance(dim, int) else list(dim)
    n = input.ndim
    out = []
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {d})")
        out.append(d % n)
    return tuple(out)


__all__ = ["_fft_c2c", "_fft_r2c", "_fft_c2r"]

# last: these families may import this module's siblings in turn
from . import factories as _factories  # noqa: E402
from . import shape as _shape_ops  # noqa: E402
