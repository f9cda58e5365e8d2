"""Philox4x32-10 in CUDA C, and the generator state ``ember.Generator`` holds for a CUDA device.

The same counter-based scheme as the OpenCL backend (``ember_opencl/philox.py``), written for
NVRTC: key = the 64-bit seed, counter = the generator's *offset* plus the element's index, four
32-bit words per counter, Random123's constants and rounds; so for one seed the CUDA and OpenCL
devices draw the same numbers (bit for bit where the arithmetic is exact: uniforms, integers,
bernoulli, permutations, multinomial; to the last few ulps where a transcendental function is
involved: normal, exponential). A call needing ``n`` counters takes ``[offset, offset + n)`` and
advances the offset by ``n`` (PyTorch's CUDA generator advances its Philox offset the same way).

The source is plain C++ with CUDA qualifiers and no header, so it compiles with NVRTC (the
``nvidia-cuda-nvrtc-cu12`` wheel, no GPU needed) and, with a few defines, as host C++ (the tests
run the kernels on the CPU that way and compare with the OpenCL backend).
"""
from __future__ import annotations

import threading

# `philox_rnd(seed, ctr)`: the four words for the 64-bit counter `ctr` (stream 0). 64-bit
# products instead of __umulhi keep the text identical in host C++.
C_PHILOX = r"""
struct ember_u4 { unsigned int x, y, z, w; };
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
__device__ __forceinline__ ember_u4 philox_rnd(unsigned long long seed, unsigned long long ctr) {
  unsigned int x0 = (unsigned int)ctr, x1 = (unsigned int)(ctr >> 32), x2 = 0u, x3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    const unsigned long long p0 = (unsigned long long)PHILOX_M0 * x0;
    const unsigned long long p1 = (unsigned long long)PHILOX_M1 * x2;
    x0 = (unsigned int)(p1 >> 32) ^ x1 ^ k0; x1 = (unsigned int)p1;
    x2 = (unsigned int)(p0 >> 32) ^ x3 ^ k1; x3 = (unsigned int)p0;
    k0 += PHILOX_W0; k1 += PHILOX_W1;
  }
  ember_u4 w; w.x = x0; w.y = x1; w.z = x2; w.w = x3;
  return w;
}
/* [0, 1) with `bits` (<= 24) random bits: every value is exact in a float of that many digits */
__device__ __forceinline__ float u01f(unsigned int a, int bits) {
  return (float)(a >> (32 - bits)) * (1.0f / (float)(1u << bits));
}
/* [0, 1) with 53 random bits, numpy's construction from two words */
__device__ __forceinline__ double u01d(unsigned int a, unsigned int b) {
  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}
/* +inf without math headers (NVRTC has no INFINITY macro) */
__device__ __forceinline__ double ember_inf() {
  union { unsigned long long u; double d; } v; v.u = 0x7ff0000000000000ull; return v.d;
}
/* the grid-stride loop every kernel of the backend uses: any launch shape covers [0, n) */
#define EMBER_LOOP(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)
"""

#: NVRTC options for every program of the backend: no fused multiply-add, so `u * a + b`
#: rounds twice like numpy and the OpenCL kernels (built with FP_CONTRACT OFF)
OPTIONS = ("--std=c++14", "--fmad=false")


class PhiloxGenerator:
    """What ``Backend.create_generator`` returns for a CUDA device: (seed, offset).

    ``take(n)`` reserves ``n`` counters for one launch. The state is 16 bytes (seed, offset;
    little-endian), as the OpenCL backend's and PyTorch's CUDA generator state.
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
