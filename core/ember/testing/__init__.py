"""``ember.testing``: ``assert_close`` (PyTorch's comparison with its default tolerances), its
deprecated form ``assert_allclose``, and ``make_tensor``."""
from __future__ import annotations

import warnings

import numpy as np

from .._tensor import Tensor
from ..ops.factories import tensor
from ._creation import make_tensor  # noqa: F401

# (rtol, atol) per dtype name, from torch.testing.assert_close's documentation
DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}


def tolerance(dtype_name: str, override=None) -> tuple:
    if override and dtype_name in override:
        return override[dtype_name]
    return DEFAULT_TOLERANCES.get(dtype_name, (0.0, 0.0))


def compare(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float):
    """(ok, worst error as a multiple of the allowed tolerance, message). NaN matches NaN."""
    if actual.shape != expected.shape:
        return False, float("inf"), f"shape {actual.shape} != expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return False, float("inf"), f"dtype {actual.dtype} != expected {expected.dtype}"
    if actual.size == 0:
        return True, 0.0, ""
    if expected.dtype.kind in "biu":
        n = int((actual != expected).sum())
        return n == 0, float(n), "" if n == 0 else f"{n} of {actual.size} elements differ"
    a = actual.astype(np.complex128 if actual.dtype.kind == "c" else np.float64)
    e = expected.astype(a.dtype)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if (nan_a != nan_e).any():
        return False, float("inf"), "NaN positions differ"
    finite = ~nan_e
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where both are inf
        diff = np.where(((a == e) & finite) | ~finite, 0.0, np.abs(a - e))
        allowed = atol + rtol * np.abs(np.where(finite, e, 0))
        ratio = diff / np.maximum(allowed, np.finfo(np.float64).tiny)
    worst = float(np.max(ratio))
    if not np.isfinite(worst) or worst > 1.0:
        idx = int(np.argmax(np.where(np.isfinite(ratio), ratio, np.inf)))
        return False, worst, (f"max abs diff {float(diff.reshape(-1)[idx]):.3g} at flat index "
                              f"{idx} (allowed {float(allowed.reshape(-1)[idx]):.3g}; "
                              f"rtol={rtol}, atol={atol})")
    return True, worst, ""


def _host(x):
    if isinstance(x, Tensor):
        return x.detach()._host() if x.requires_grad else x._host()
    return np.asarray(x)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` are close (PyTorch's rules and
    defaults: NaN is equal to NaN only with ``equal_nan=True``; ``msg`` may be a string or a
    callable that turns the generated message into the one raised)."""
    if isinstance(actual, (list, tuple)):
        assert len(actual) == len(expected), f"length {len(actual)} != {len(expected)}"
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, check_device=check_device,
                         check_layout=check_layout, check_stride=check_stride, msg=msg)
        return
    both = isinstance(actual, Tensor) and isinstance(expected, Tensor)
    if check_device and both and actual.device is not expected.device:
        _fail(msg, f"device {actual.device} != expected {expected.device}")
    if check_layout and both and actual.layout != expected.layout:
        _fail(msg, f"layout {actual.layout} != expected {expected.layout}")
    if check_stride and both and actual.stride() != expected.stride() and actual.numel() > 1:
        _fail(msg, f"stride {actual.stride()} != expected {expected.stride()}")
    a, e = _host(actual), _host(expected)
    if not check_dtype and a.dtype != e.dtype:
        a = a.astype(np.result_type(a.dtype, e.dtype))
        e = e.astype(a.dtype)
    if (rtol is None) != (atol is None):
        raise ValueError("assert_close: give both rtol and atol, or neither")
    if rtol is None:
        rtol, atol = tolerance(e.dtype.name)
    ok, _worst, detail = compare(a, e, rtol, atol)
    if ok and not equal_nan and a.dtype.kind in "fc" and np.isnan(a).any():
        ok, detail = False, "NaN in both at the same positions, but equal_nan=False"
    if not ok:
        _fail(msg, f"Tensor-likes are not close! {detail}")


def _fail(msg, generated):
    raise AssertionError(msg(generated) if callable(msg) else (msg or generated))


# torch.testing.assert_allclose's own defaults (looser than assert_close's)
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (torch 1.12) form of ``assert_close``: values need not be tensors, dtypes
    may differ, and the default tolerances are the looser of the two dtypes' in its own
    table."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_TOLERANCES.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False,
                 check_device=True, msg=msg or None)
