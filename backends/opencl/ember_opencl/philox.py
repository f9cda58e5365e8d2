"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) in OpenCL C,
and the generator state the backend hands to ``ember.Generator``.

Counter-based: the numbers are a pure function of (key, counter), so every work-item computes
its own without shared state and a launch is reproducible whatever the work-group layout. The
key is the 64-bit seed; the counter is the generator's *offset* plus the element's index, so a
call that needs ``n`` counters takes ``[offset, offset + n)`` and advances the offset by ``n``
(as PyTorch's CUDA generator advances its Philox offset). Each counter yields four 32-bit words,
enough for one float64 uniform or a Box-Muller pair's inputs.
"""
from __future__ import annotations

import threading

# Random123's constants; `RND(seed, ctr)` -> uint4 for the 64-bit counter `ctr` (stream 0)
C_PHILOX = r"""
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
inline uint4 philox4x32_10(uint4 c, uint2 k) {
  uint x0 = c.x, x1 = c.y, x2 = c.z, x3 = c.w, k0 = k.x, k1 = k.y;
  #pragma unroll
  for (int r = 0; r < 10; r++) {
    /* 64-bit products: PoCL vectorizes them across work-items, unlike mul_hi */
    const ulong p0 = (ulong)PHILOX_M0 * x0, p1 = (ulong)PHILOX_M1 * x2;
    x0 = (uint)(p1 >> 32) ^ x1 ^ k0; x1 = (uint)p1;
    x2 = (uint)(p0 >> 32) ^ x3 ^ k1; x3 = (uint)p0;
    k0 += PHILOX_W0; k1 += PHILOX_W1;
  }
  return (uint4)(x0, x1, x2, x3);
}
inline uint4 RND(long seed, long ctr) {
  const ulong s = (ulong)seed, c = (ulong)ctr;
  return philox4x32_10((uint4)((uint)c, (uint)(c >> 32), 0u, 0u), (uint2)((uint)s, (uint)(s >> 32)));
}
/* [0, 1) with `bits` (<= 24) random bits: every value is exact in a float of that many digits */
inline float U01F(uint a, int bits) { return (float)(a >> (32 - bits)) * (1.0f / (float)(1u << bits)); }
"""

C_PHILOX_F64 = r"""
/* [0, 1) with 53 random bits, numpy's construction from two words */
inline double U01D(uint a, uint b) {
  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}
"""


def source(fp64: bool) -> str:
    return C_PHILOX + (C_PHILOX_F64 if fp64 else "")


class PhiloxGenerator:
    """What ``Backend.create_generator`` returns for an OpenCL device: (seed, offset).

    ``take(n)`` reserves ``n`` counters for one launch. The state is 16 bytes (seed, offset;
    little-endian), like PyTorch's CUDA generator state.
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
