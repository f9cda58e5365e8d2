"""What the GPU backends (OpenCL, CUDA) share: one C text, ``gpu_common.h`` (Philox4x32-10 and
complex arithmetic), and the host side of its random-number scheme, ``PhiloxGenerator``.

``source(dialect)`` returns the C text for ``"opencl"`` (OpenCL C) or ``"cuda"`` (NVRTC's CUDA
C++, also valid host C++ with the CUDA qualifiers defined away): the dialect's spellings of the
header's few names, then the header. A backend puts it at the top of its programs, so a seed
draws the same numbers on every GPU backend.

The random scheme is counter-based, as PyTorch's CUDA generator: the numbers are a pure function
of (key, counter), so every thread computes its own without shared state and a launch is
reproducible whatever its work-group layout. The key is the generator's 64-bit seed; element
``i`` of a launch uses counter ``offset + i``, where the launch reserved ``[offset, offset + n)``
with ``PhiloxGenerator.take(n)``. Each counter yields four 32-bit words: one float64 uniform, or
a Box-Muller pair's inputs.
"""
from __future__ import annotations

import threading
from importlib import resources

#: each dialect's spelling of the names gpu_common.h uses
DIALECTS = {
    "opencl": "#define EMBER_FN inline\n"
              "typedef uint ember_u32;\ntypedef ulong ember_u64;\ntypedef uint4 ember_u4;\n",
    "cuda": "#define EMBER_FN __device__ __forceinline__\n"
            "typedef unsigned int ember_u32;\ntypedef unsigned long long ember_u64;\n"
            "struct ember_u4 { unsigned int x, y, z, w; };\n",
}

_HEADER = None


def source(dialect: str, fp64: bool = True) -> str:
    """``gpu_common.h`` for ``dialect`` (``"opencl"`` or ``"cuda"``); ``fp64=False`` leaves out
    what needs double (an OpenCL device without cl_khr_fp64)."""
    global _HEADER
    if _HEADER is None:
        _HEADER = resources.files(__package__).joinpath("gpu_common.h").read_text()
    try:
        names = DIALECTS[dialect]
    except KeyError:
        raise ValueError(f"gpu_common.source: unknown dialect {dialect!r} (expected one of "
                         f"{sorted(DIALECTS)})") from None
    # guarded: bodies that each need the text may share one program
    return ("#ifndef EMBER_GPU_COMMON\n#define EMBER_GPU_COMMON\n" + names
            + ("#define EMBER_FP64 1\n" if fp64 else "") + _HEADER + "#endif\n")


class PhiloxGenerator:
    """A GPU device's generator state for ``ember.Generator``: (seed, offset).

    ``take(n)`` reserves ``n`` counters for one launch and advances the offset, as PyTorch's
    CUDA generator advances its Philox offset. The state is 16 bytes (seed, offset;
    little-endian), the size of PyTorch's CUDA generator state.
    """

    state_size = 16

    def __init__(self, seed: int):
        self._lock = threading.Lock()
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.seed = int(seed) & (2 ** 64 - 1)
        self.offset = 0

    def take(self, n: int):
        """(seed, first counter) for a launch using ``n`` counters; advances the offset."""
        with self._lock:
            start = self.offset
            self.offset = (start + int(n)) & (2 ** 64 - 1)
        return self.seed, start

    def state_bytes(self) -> bytes:
        return self.seed.to_bytes(8, "little") + self.offset.to_bytes(8, "little")

    def load_state(self, data: bytes) -> None:
        data = bytes(data)
        if len(data) != self.state_size:
            raise RuntimeError(f"Expected a Philox generator state of size {self.state_size} but "
                               f"found the input RNG state size to be {len(data)}")
        with self._lock:
            self.seed = int.from_bytes(data[:8], "little")
            self.offset = int.from_bytes(data[8:], "little")
