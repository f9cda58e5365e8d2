"""``ember.backends``: PyTorch's ``torch.backends`` switches, one module per entry.

* ``cudnn``    benchmark, deterministic, enabled, allow_tf32, flags(): kept, no effect (no cuDNN)
* ``cuda``     matmul.allow_tf32 (tied to ``ember.set_float32_matmul_precision``), is_built()
* ``mps``      is_available(), is_built(): False unless a backend provides ``mps``
* ``cpu``      get_cpu_capability()
* ``opencl``   ember's OpenCL backend: is_available(), is_built(), supported_dtypes(), the
               FFT plan cache (``fft_plan_cache``); what determinism means there
* ``mkldnn``, ``openmp``: not used by ember (is_available() False)

Each flag's docstring says what it changes in ember, or that it changes nothing and why.
"""
from . import cpu, cuda, cudnn, mkldnn, mps, opencl, openmp  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "opencl", "openmp"]
