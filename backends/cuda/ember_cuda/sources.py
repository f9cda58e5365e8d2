"""Every hand-written CUDA C program of the backend, by name: what the NVRTC test compiles
(``tests/test_cuda_nvrtc.py``) and the host emulation runs."""
from __future__ import annotations

from . import kernels_indexing, kernels_random, prelude


def programs() -> dict:
    """name -> CUDA C source (each built with ``prelude.OPTIONS``)."""
    return {"random": kernels_random.source(), "ordered": kernels_indexing.source()}


OPTIONS = prelude.OPTIONS
