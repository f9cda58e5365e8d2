"""PyTorch's ``assert_close`` default tolerances, and a comparison that reports the worst error."""
from __future__ import annotations

import numpy as np

# (rtol, atol) per dtype name, from torch.testing.assert_close's documentation
DEFAULT = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}


def tolerance(dtype_name: str, override=None):
    if override and dtype_name in override:
        return override[dtype_name]
    return DEFAULT.get(dtype_name, (0.0, 0.0))


def compare(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float):
    """(ok, worst relative-to-tolerance error, message). NaNs must match NaNs."""
    if actual.shape != expected.shape:
        return False, float("inf"), f"shape {actual.shape} != expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return False, float("inf"), f"dtype {actual.dtype} != expected {expected.dtype}"
    if actual.size == 0:
        return True, 0.0, ""
    if expected.dtype.kind in "biu":
        bad = actual != expected
        n = int(bad.sum())
        return n == 0, float(n), "" if n == 0 else f"{n} of {actual.size} elements differ"
    a = actual.astype(np.complex128 if actual.dtype.kind == "c" else np.float64)
    e = expected.astype(a.dtype)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if (nan_a != nan_e).any():
        return False, float("inf"), "NaN positions differ"
    finite = ~nan_e
    same_inf = (a == e) & finite
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where both are inf
        diff = np.where(same_inf | ~finite, 0.0, np.abs(a - e))
        allowed = atol + rtol * np.abs(np.where(finite, e, 0))
        ratio = diff / np.maximum(allowed, np.finfo(np.float64).tiny)
    worst = float(np.max(ratio)) if ratio.size else 0.0
    if not np.isfinite(worst) or worst > 1.0:
        idx = int(np.argmax(np.where(np.isfinite(ratio), ratio, np.inf)))
        return False, worst, (f"max abs diff {float(diff.reshape(-1)[idx]):.3g} at flat index "
                              f"{idx} (allowed {float(allowed.reshape(-1)[idx]):.3g}; "
                              f"rtol={rtol}, atol={atol})")
    return True, worst, ""
