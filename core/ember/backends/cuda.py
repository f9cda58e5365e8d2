"""``ember.backends.cuda``: PyTorch's CUDA math switches.

``matmul.allow_tf32`` is tied to ``ember.get_float32_matmul_precision()`` as in PyTorch.
**No flag here changes results on the CPU or OpenCL backends** (they compute float32 in full
float32 and reduce float16/bfloat16 products in float32); a CUDA backend may read them.
"""
from __future__ import annotations

from ..runtime.registry import registry as _registry
from . import _precision


def is_built() -> bool:
    """True when a backend registers the ``cuda`` device type (PyTorch: built with CUDA)."""
    return _registry.is_known("cuda")


class _Matmul:
    """``ember.backends.cuda.matmul``."""

    __slots__ = ("_fp16_reduced", "_bf16_reduced")

    def __init__(self):
        self._fp16_reduced = True
        self._bf16_reduced = True

    @property
    def allow_tf32(self) -> bool:
        """Let float32 matmuls use TF32 (same as ``set_float32_matmul_precision("high")``).
        No effect on CPU and OpenCL."""
        return _precision.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                               f"{type(value).__name__}")
        _precision.set_float32_matmul_precision("high" if value else "highest")

    @property
    def allow_fp16_reduced_precision_reduction(self) -> bool:
        """Let float16 matmuls reduce in float16. No effect on CPU and OpenCL (they reduce in
        float32)."""
        return self._fp16_reduced

    @allow_fp16_reduced_precision_reduction.setter
    def allow_fp16_reduced_precision_reduction(self, value: bool) -> None:
        self._fp16_reduced = _bool(value, "allow_fp16_reduced_precision_reduction")

    @property
    def allow_bf16_reduced_precision_reduction(self) -> bool:
        """Let bfloat16 matmuls reduce in bfloat16. No effect on CPU and OpenCL."""
        return self._bf16_reduced

    @allow_bf16_reduced_precision_reduction.setter
    def allow_bf16_reduced_precision_reduction(self, value: bool) -> None:
        self._bf16_reduced = _bool(value, "allow_bf16_reduced_precision_reduction")

    def __setattr__(self, name, value):
        if name not in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                        "allow_bf16_reduced_precision_reduction", "_fp16_reduced",
                        "_bf16_reduced"):
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)


def _bool(value, name):
    if not isinstance(value, bool):
        raise RuntimeError(f"{name} expects a bool, but got {type(value).__name__}")
    return value


matmul = _Matmul()
