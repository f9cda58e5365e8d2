"""``ember.set_float32_matmul_precision`` / ``get_float32_matmul_precision``.

The setting is kept and reported as PyTorch does, and ``ember.backends.cuda.matmul.allow_tf32``
is tied to it the same way ("high"/"medium" allow TF32). **It has no effect on the CPU and
OpenCL backends**: they multiply float32 in full float32 (numpy/BLAS, and OpenCL's float
arithmetic), as the "highest" setting asks. A backend with reduced-precision matrix units may
read it.
"""
from __future__ import annotations

import warnings
from .._warn import user_stacklevel

_PRECISIONS = ("highest", "high", "medium")
_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """"highest" (full float32), "high" (TF32 or a bfloat16x3 split allowed), "medium"
    (bfloat16 allowed). No effect on CPU and OpenCL (always full float32)."""
    global _precision
    if precision not in _PRECISIONS:
        # PyTorch warns and keeps the old setting
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=user_stacklevel())
        return
    _precision = precision


def get_float32_matmul_precision() -> str:
    return _precision
