"""``ember.backends``: settings of individual backends, as ``torch.backends``.

``ember.backends.opencl`` holds the OpenCL backend's FFT plan cache (PyTorch's
``torch.backends.cuda.cufft_plan_cache``). Submodules load the backend they describe only when
a setting is read, so importing this package imports no device library.
"""
from . import opencl  # noqa: F401

__all__ = ["opencl"]
