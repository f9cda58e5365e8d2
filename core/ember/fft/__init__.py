"""``ember.fft``: PyTorch's ``torch.fft`` (NumPy's ``numpy.fft`` conventions).

Every function is a composite of the three primitives in ``ember.ops.fft`` (``_fft_c2c``,
``_fft_r2c``, ``_fft_c2r``), written as ATen's ``SpectralOps.cpp``: the signal is trimmed
(a narrow view) or zero-padded to ``n``/``s``, real and integer inputs are promoted (integers to
the default float dtype, float32 -> complex64, float64 -> complex128; other dtypes are refused),
``norm`` picks the primitive's normalization and the direction decides which side is scaled.
So each backend needs three kernels, and autograd differentiates every function through the
primitives' derivatives.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from ..ops import fft as _prims
from ..ops._util import _dtype_title, require_tensor, write_out
from ..ops.factories import tensor

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_NONE, _BY_ROOT_N, _BY_N = _prims.NORM_NONE, _prims.NORM_BY_ROOT_N, _prims.NORM_BY_N


# -- argument handling (ATen's helpers) ---------------------------------------------------------
def _norm(fname, norm, forward) -> int:
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f"{fname}: Invalid normalization mode: \"{norm}\" (argument 'norm' must "
                       f"be \"forward\", \"backward\" or \"ortho\")")


def _tensor(fname, input):
    require_tensor(input, fname)


def _promote(fname, input, require_complex=False):
    """promote_tensor_fft: complex stays; integers go to the default float; float32/64 only."""
    d = input.dtype
    if d.category == _dtype.COMPLEX:
        return input
    if d.category != _dtype.FLOATING:
        d = _dtype.get_default_dtype()
    if d not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{fname}: Unsupported dtype {_dtype_title(d)} (FFTs compute in "
                           f"float32, float64, complex64 or complex128)")
    if require_complex:
        d = d.to_complex()
    return input if input.dtype is d else input.to(d)


def _wrap(fname, input, dim, what="dim"):
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{fname}(): argument '{what}' must be an int, got "
                        f"{type(dim).__name__}")
    n = input.ndim
    if n == 0:
        raise IndexError(f"{fname}: Dimension specified as {dim} but tensor has no dimensions "
                         f"(argument '{what}', input of shape [])")
    if not -n <= dim < n:
        raise IndexError(f"{fname}: Dimension out of range (expected to be in range of [{-n}, "
                         f"{n - 1}], but got {dim}) (argument '{what}', input of shape "
                         f"{list(input.shape)})")
    return dim % n


def _check_points(fname, n, what, input):
    if n < 1:
        raise RuntimeError(f"{fname}: Invalid number of data points ({n}) specified (argument "
                           f"'{what}', input of shape {list(input.shape)})")


def _resize(x, dims, sizes):
    """Trim (narrow) or zero-pad ``x`` to ``sizes`` along ``dims``."""
    for d, n in zip(dims, sizes):
        have = x._shape[d]
        if have > n:
            x = x.narrow(d, 0, n)
        elif have < n:
            pad = list(x._shape)
            pad[d] = n - have
            x = _shape_ops.cat([x, x.new_zeros(pad)], d)
    return x


def _seq(v):
    return None if v is None else [v] if isinstance(v, int) else list(v)


def _shape_and_dims(fname, input, s, dim):
    """canonicalize_fft_shape_and_dim_args: wrapped unique dims and the signal shape."""
    ndim = input.ndim
    s, dim = _seq(s), _seq(dim)
    if dim is not None:
        dims = [_wrap(fname, input, d) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{fname}: FFT dims must be unique (argument 'dim' = {dim})")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise RuntimeError(f"{fname}: When given, dim and shape arguments must have the same "
                               f"length (argument 's' = {s}, argument 'dim' = {dim})")
        if len(s) > ndim:
            raise RuntimeError(f"{fname}: Got shape with {len(s)} values but input tensor only "
                               f"has {ndim} dimensions (argument 's' = {s}, input of shape "
                               f"{list(input.shape)})")
        if dim is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [input._shape[d] if n == -1 else int(n) for n, d in zip(s, dims)]
    elif dim is None:
        dims, shape = list(range(ndim)), list(input._shape)
    else:
        shape = [input._shape[d] for d in dims]
    for n in shape:
        _check_points(fname, n, "s", input)
    return shape, dims


def _out(fname, out, result, kind):
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if kind == "complex" and out.dtype.category != _dtype.COMPLEX:
        raise RuntimeError(f"{fname} expects a complex output tensor, but got "
                           f"{_dtype_title(out.dtype)}")
    if kind == "real" and out.dtype.category != _dtype.FLOATING:
        raise RuntimeError(f"{fname} expects a floating point output tensor, but got "
                           f"{_dtype_title(out.dtype)}")
    return write_out(out, result, fname)


# -- the three shapes of transform (fft_c2c / fft_r2c / fft_c2r in ATen) -----------------------
def _c2c(fname, input, n, dim, norm, forward, out):
    if input.dtype.category != _dtype.COMPLEX:
        raise RuntimeError(f"{fname} expects a complex input tensor, but got "
                           f"{_dtype_title(input.dtype)}")
    d = _wrap(fname, input, dim)
    if n is not None:
        _check_points(fname, n, "n", input)
        input = _resize(input, [d], [n])
    else:
        _check_points(fname, input._shape[d], "n", input)
    r = _prims.fft_c2c_op(input, (d,), _norm(fname, norm, forward), forward)
    return _out(fname, out, r, "complex")


def _r2c(fname, input, n, dim, norm, forward, onesided, out):
    if input.dtype.category == _dtype.COMPLEX:
        raise RuntimeError(f"{fname} expects a real input tensor, but got "
                           f"{_dtype_title(input.dtype)}")
    input = _promote(fname, input)
    d = _wrap(fname, input, dim)
    if n is not None:
        _check_points(fname, n, "n", input)
        input = _resize(input, [d], [n])
    else:
        _check_points(fname, input._shape[d], "n", input)
    r = _prims.fft_r2c_op(input, (d,), _norm(fname, norm, forward), onesided)
    if not forward:
        r = r.conj()
    return _out(fname, out, r, "complex")


def _c2r(fname, input, n, dim, norm, forward, out):
    input = _promote(fname, input, require_complex=True)
    d = _wrap(fname, input, dim)
    last = n if n is not None else 2 * (input._shape[d] - 1)
    _check_points(fname, last, "n", input)
    if n is not None or input._shape[d] != last // 2 + 1:
        input = _resize(input, [d], [last // 2 + 1])
    if forward:
        input = input.conj()
    r = _prims.fft_c2r_op(input, (d,), _norm(fname, norm, forward), last)
    return _out(fname, out, r, "real")


# -- 1-D ----------------------------------------------------------------------------------------
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """One-dimensional discrete Fourier transform of ``input``."""
    _tensor("fft", input)
    if input.dtype.category == _dtype.COMPLEX:
        return _c2c("fft", input, n, dim, norm, True, out)
    return _r2c("fft", input, n, dim, norm, True, False, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """One-dimensional inverse discrete Fourier transform of ``input``."""
    _tensor("ifft", input)
    if input.dtype.category == _dtype.COMPLEX:
        return _c2c("ifft", input, n, dim, norm, False, out)
    return _r2c("ifft", input, n, dim, norm, False, False, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """FFT of real ``input``: the n // 2 + 1 non-negative frequencies."""
    _tensor("rfft", input)
    return _r2c("rfft", input, n, dim, norm, True, True, out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of ``rfft``: a real signal of ``n`` points (default 2 * (m - 1))."""
    _tensor("irfft", input)
    return _c2r("irfft", input, n, dim, norm, False, out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """FFT of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    _tensor("hfft", input)
    return _c2r("hfft", input, n, dim, norm, True, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of ``hfft``: the first half of the Hermitian signal of a real ``input``."""
    _tensor("ihfft", input)
    return _r2c("ihfft", input, n, dim, norm, False, True, out)


# -- n-D ----------------------------------------------------------------------------------------
def _fftn(fname, input, s, dim, norm, forward, out):
    _tensor(fname, input)
    shape, dims = _shape_and_dims(fname, input, s, dim)
    x = _promote(fname, input, require_complex=True)
    x = _resize(x, dims, shape)
    r = _prims.fft_c2c_op(x, tuple(dims), _norm(fname, norm, forward), forward)
    return _out(fname, out, r, "complex")


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional discrete Fourier transform over ``dim`` (all dims by default)."""
    return _fftn("fftn", input, s, dim, norm, True, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional inverse discrete Fourier transform."""
    return _fftn("ifftn", input, s, dim, norm, False, out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional discrete Fourier transform (``fftn`` over the last two dims)."""
    return _fftn("fft2", input, s, dim, norm, True, out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional inverse discrete Fourier transform."""
    return _fftn("ifft2", input, s, dim, norm, False, out)


def _real_signal(fname, input, s, dim):
    """(x, dims): the real input of an r2c transform (rfftn, ihfftn) resized to ``s``."""
    _tensor(fname, input)
    if input.dtype.category == _dtype.COMPLEX:
        raise RuntimeError(f"{fname} expects a real-valued input tensor, but got "
                           f"{_dtype_title(input.dtype)}")
    shape, dims = _shape_and_dims(fname, input, s, dim)
    if not shape:
        raise RuntimeError(f"{fname} must transform at least one axis")
    return _resize(_promote(fname, input), dims, shape), dims


def _rfftn(fname, input, s, dim, norm, out):
    x, dims = _real_signal(fname, input, s, dim)
    r = _prims.fft_r2c_op(x, tuple(dims), _norm(fname, norm, True), True)
    return _out(fname, out, r, "complex")


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional FFT of real ``input``; the last transformed dim is halved."""
    return _rfftn("rfftn", input, s, dim, norm, out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional FFT of real ``input``."""
    return _rfftn("rfft2", input, s, dim, norm, out)


def _half_spectrum(fname, input, s, dim):
    """(x, dims, last): the complex half spectrum a c2r transform (irfftn, hfftn) reads,
    resized to ``s``, and the length ``last`` of the real signal's last transformed dim."""
    _tensor(fname, input)
    shape, dims = _shape_and_dims(fname, input, s, dim)
    if not shape:
        raise RuntimeError(f"{fname} must transform at least one axis")
    s = _seq(s)
    last = 2 * (input._shape[dims[-1]] - 1) if s is None or s[-1] == -1 else shape[-1]
    _check_points(fname, last, "s", input)
    shape[-1] = last // 2 + 1
    return _resize(_promote(fname, input, require_complex=True), dims, shape), dims, last


def _irfftn(fname, input, s, dim, norm, out):
    x, dims, last = _half_spectrum(fname, input, s, dim)
    r = _prims.fft_c2r_op(x, tuple(dims), _norm(fname, norm, False), last)
    return _out(fname, out, r, "real")


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of ``rfftn``."""
    return _irfftn("irfftn", input, s, dim, norm, out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Inverse of ``rfft2``."""
    return _irfftn("irfft2", input, s, dim, norm, out)


def _hfftn(fname, input, s, dim, norm, out):
    x, dims, last = _half_spectrum(fname, input, s, dim)
    mode = _norm(fname, norm, True)
    if len(dims) > 1:
        x = _prims.fft_c2c_op(x, tuple(dims[:-1]), mode, True)
    r = _prims.fft_c2r_op(x.conj(), (dims[-1],), mode, last)
    return _out(fname, out, r, "real")


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional FFT of a Hermitian-symmetric signal given by its half."""
    return _hfftn("hfftn", input, s, dim, norm, out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional ``hfftn``."""
    return _hfftn("hfft2", input, s, dim, norm, out)


def _ihfftn(fname, input, s, dim, norm, out):
    x, dims = _real_signal(fname, input, s, dim)
    mode = _norm(fname, norm, False)
    r = _prims.fft_r2c_op(x, (dims[-1],), mode, True).conj()
    if len(dims) > 1:
        r = _prims.fft_c2c_op(r, tuple(dims[:-1]), mode, False)
    return _out(fname, out, r, "complex")


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of ``hfftn``: real ``input`` to the half of a Hermitian signal."""
    return _ihfftn("ihfftn", input, s, dim, norm, out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Two-dimensional ``ihfftn``."""
    return _ihfftn("ihfft2", input, s, dim, norm, out)


# -- helpers ------------------------------------------------------------------------------------
def _freq(fname, values, n, d, out, dtype, device, requires_grad):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{fname}(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{fname}: Trying to create tensor with negative dimension {n}: "
                           f"[{n}] (argument 'n')")
    if out is not None:
        dtype = out.dtype if dtype is None else dtype
        device = out.device if device is None else device
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if dt.category not in (_dtype.FLOATING, _dtype.COMPLEX):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype, got {dt}")
    r = tensor(values, dtype=dt, device=device) * (1.0 / (n * d)) if n else \
        tensor([], dtype=dt, device=device)
    if requires_grad:
        r.requires_grad_(True)
    return r if out is None else write_out(out, r, fname)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
            requires_grad=False):
    """Sample frequencies of an ``n``-point FFT with spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    values = list(range((n + 1) // 2)) + list(range(-(n // 2), 0)) if isinstance(n, int) else []
    return _freq("fftfreq", values, n, d, out, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    """Sample frequencies of ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``."""
    values = list(range(n // 2 + 1)) if isinstance(n, int) else []
    return _freq("rfftfreq", values, n, d, out, dtype, device, requires_grad)


def _shift_dims(fname, input, dim):
    _tensor(fname, input)
    if dim is None:
        return list(range(input.ndim))
    return [_wrap(fname, input, d) for d in _seq(dim)]


def fftshift(input, dim=None):
    """Move the zero-frequency bin to the centre (``roll`` by n // 2 along each dim)."""
    dims = _shift_dims("fftshift", input, dim)
    if not dims:
        return input.clone()
    return _shape_ops.roll(input, [input._shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """Inverse of ``fftshift`` (``roll`` by (n + 1) // 2)."""
    dims = _shift_dims("ifftshift", input, dim)
    if not dims:
        return input.clone()
    return _shape_ops.roll(input, [(input._shape[d] + 1) // 2 for d in dims], dims)


from ..ops import shape as _shape_ops  # noqa: E402
from . import _stft  # noqa: E402,F401 - ember.stft / istft and the Tensor methods
