"""Window functions: ``ember.signal.windows`` (torch.signal.windows, scipy's definitions) and
torch's native factories ``ember.hann_window`` & co (issue #30).

Each window is a composition of ember ops (``arange``/``linspace``, ``cos``, ``i0``…) made
on the requested device in the requested dtype, as torch computes them, so every backend makes
them. The two families differ as torch's do: the ``*_window`` factories take ``periodic``
(a window of N + 1 points with the last dropped) and accept any floating dtype; the
``signal.windows`` functions take ``sym`` and only float32/float64, raising ``ValueError``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
import ember

from .. import _dtype
from .._layout import strided

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _ember():
    return ember


# -- torch.signal.windows -------------------------------------------------------------------------
def _checks(name, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_dtype.float32, _dtype.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _options(dtype, device, requires_grad):
    return dict(dtype=dtype, device=device, requires_grad=requires_grad)


def _trivial(M, dtype, device, requires_grad):
    """The window of 0 or 1 points, or None."""
    em = _ember()
    if M == 0:
        return em.empty((0,), **_options(dtype, device, requires_grad))
    if M == 1:
        return em.ones((1,), **_options(dtype, device, requires_grad))
    return None


def _linspace(start, end, M, dtype, device, requires_grad):
    return _ember().linspace(start, end, M, **_options(dtype, device, requires_grad))


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    dtype = dtype or _dtype.get_default_dtype()
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _ember().empty((0,), **_options(dtype, device, requires_grad))
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    c = 1 / tau
    k = _linspace(-center * c, (-center + (M - 1)) * c, M, dtype, device, requires_grad)
    return (-k.abs()).exp()


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    dtype = dtype or _dtype.get_default_dtype()
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _ember().empty((0,), **_options(dtype, device, requires_grad))
    c = math.pi / (M + 1 if not sym and M > 1 else M)
    return _linspace(0.5 * c, (0.5 + (M - 1)) * c, M, dtype, device, requires_grad).sin()


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None,
             requires_grad=False):
    dtype = dtype or _dtype.get_default_dtype()
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _ember().empty((0,), **_options(dtype, device, requires_grad))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    c = 1 / (std * math.sqrt(2))
    k = _linspace(start * c, (start + (M - 1)) * c, M, dtype, device, requires_grad)
    return (-(k ** 2)).exp()


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None,
           requires_grad=False):
    dtype = dtype or _dtype.get_default_dtype()
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    em = _ember()
    # the end points in the window's dtype, as torch computes them from beta as a tensor of
    # that dtype (so k**2 never exceeds beta**2 and the square root sees no negative number)
    b = dtype.np.type(beta)
    c = b * dtype.np.type(2.0) / dtype.np.type(M if not sym else M - 1)
    end = min(b, -b + dtype.np.type(M - 1) * c)
    k = em.linspace(float(-b), float(end), M, **_options(dtype, device, requires_grad))
    beta_t = em.tensor(beta, dtype=dtype, device=device)
    return em.i0((beta_t * beta_t - k ** 2).sqrt()) / em.i0(beta_t)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None,
                   requires_grad=False):
    dtype = dtype or _dtype.get_default_dtype()
    _checks("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    em = _ember()
    c = 2 * math.pi / (M if not sym else M - 1)
    k = _linspace(0, (M - 1) * c, M, dtype, device, requires_grad)
    a_i = em.tensor([(-1) ** i * w for i, w in enumerate(a)], **_options(dtype, device,
                                                                        requires_grad))
    i = em.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device,
                  requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None,
                    requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    dtype = dtype or _dtype.get_default_dtype()
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    dtype = dtype or _dtype.get_default_dtype()
    _checks("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    c = 2 / (M if not sym else M - 1)
    return 1 - _linspace(-1, -1 + (M - 1) * c, M, dtype, device, requires_grad).abs()


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


# -- torch.*_window: the native factories -----------------------------------------------------------
def _factory_checks(name, window_length, dtype, layout):
    if layout is not None and layout is not strided:
        raise RuntimeError(f"{name} is not implemented for sparse types, got: {layout}")
    if dtype.category < _dtype.FLOATING:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")


def _native(name, window_length, periodic, dtype, layout, device, requires_grad, body):
    """torch's recipe for every ``*_window``: 0 and 1 points are trivial; a periodic window is
    the symmetric one of N + 1 points without its last; ``body(n, N)`` computes the window
    from ``n = arange(N)`` in ``dtype``."""
    em = _ember()
    dtype = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    _factory_checks(name, window_length, dtype, layout)
    if window_length <= 1:
        make = em.empty if window_length == 0 else em.ones
        return make((window_length,), dtype=dtype, device=device, requires_grad=requires_grad)
    n = window_length + 1 if periodic else window_length
    window = body(em.arange(n, dtype=dtype, device=device), n)
    if periodic:
        window = window.narrow(0, 0, n - 1)
    return window.detach().requires_grad_(requires_grad) if requires_grad else window


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    return _native("hamming_window", window_length, periodic, dtype, layout, device,
                   requires_grad,
                   lambda x, n: (x * (2 * math.pi / (n - 1))).cos() * -beta + alpha)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    return _native("hann_window", window_length, periodic, dtype, layout, device,
                   requires_grad,
                   lambda x, n: (x * (2 * math.pi / (n - 1))).cos() * -0.5 + 0.5)


def _bartlett(x, n):
    w = x * (2.0 / (n - 1))
    first = ((n - 1) >> 1) + 1
    return _ember().cat([w.narrow(0, 0, first), 2 - w.narrow(0, first, n - first)])


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    return _native("bartlett_window", window_length, periodic, dtype, layout, device,
                   requires_grad, _bartlett)


def _blackman(x, n):
    w = x * (math.pi / (n - 1))
    return (w * 4).cos() * 0.08 - (w * 2).cos() * 0.5 + 0.42


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    return _native("blackman_window", window_length, periodic, dtype, layout, device,
                   requires_grad, _blackman)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    def body(x, n):
        em = _ember()
        alpha = (n - 1) / 2.0
        return em.i0(beta * (1 - ((x - alpha) / alpha) ** 2).sqrt()) / \
            em.i0(em.tensor(beta, dtype=x.dtype, device=x.device))
    return _native("kaiser_window", window_length, periodic, dtype, layout, device,
                   requires_grad, body)


FACTORIES = ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
             "kaiser_window"]
