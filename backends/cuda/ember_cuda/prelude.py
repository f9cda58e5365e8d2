"""The start of every CUDA C program of the backend, and the NVRTC options they build with.

First the C the GPU backends share (``ember.kit.gpu_common``: Philox4x32-10 and complex
arithmetic), so one seed draws the same numbers on the CUDA and OpenCL devices: bit for bit where
the arithmetic is exact (uniforms, integers, bernoulli, multinomial), to the last few ulps where
a transcendental function is involved (normal, exponential). Then what only CUDA needs.

The text is plain C++ with CUDA qualifiers and no header, so it compiles with NVRTC (the
``nvidia-cuda-nvrtc-cu12`` wheel, no GPU needed) and, with a few defines, as host C++ (the tests
run the kernels on the CPU that way and compare with the OpenCL backend).
"""
from __future__ import annotations

from ember.kit import gpu_common

C_PRELUDE = gpu_common.source("cuda") + r"""
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
