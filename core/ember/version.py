"""``ember.version``: what PyTorch's ``torch.version`` reports, for ember. ember is pure Python
and talks to device runtimes through backend packages, so it is not "built with" CUDA or ROCm:
``cuda``, ``hip``, ``rocm`` and ``xpu`` are None (a CUDA backend reports its toolkit through
its own device module)."""
from __future__ import annotations

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

__version__ = "0.1.0"
debug = False
cuda = None
git_version = "Unknown"
hip = None
rocm = None
xpu = None
