/* C shared by ember's GPU backends: OpenCL C (ember_opencl) and CUDA C (ember_cuda, which the
   CUDA simulator of the tests also builds as host C++). ember.kit.gpu_common.source(dialect)
   puts the dialect's spellings of these names before this text:

     EMBER_FN               the qualifiers of a device function
     ember_u32, ember_u64   32- and 64-bit unsigned integers
     ember_u4               four ember_u32 words .x .y .z .w (OpenCL's uint4; a struct in CUDA)
     EMBER_FP64             defined where double is available

   Both backends build without fused multiply-add (FP_CONTRACT OFF, --fmad=false), so every
   operation below rounds on its own, as numpy's do. */

/* -- Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) ------
   Random123's constants and rounds. philox_rnd(seed, ctr): the four words of the 64-bit counter
   `ctr` (stream 0) under the 64-bit key `seed`. The high halves come from 64-bit products, not
   mul_hi/__umulhi: PoCL vectorizes those across work-items, and the text stays host C++. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
EMBER_FN ember_u4 philox_rnd(ember_u64 seed, ember_u64 ctr) {
  ember_u32 x0 = (ember_u32)ctr, x1 = (ember_u32)(ctr >> 32), x2 = 0u, x3 = 0u;
  ember_u32 k0 = (ember_u32)seed, k1 = (ember_u32)(seed >> 32);
  #pragma unroll
  for (int r = 0; r < 10; r++) {
    const ember_u64 p0 = (ember_u64)PHILOX_M0 * x0, p1 = (ember_u64)PHILOX_M1 * x2;
    x0 = (ember_u32)(p1 >> 32) ^ x1 ^ k0; x1 = (ember_u32)p1;
    x2 = (ember_u32)(p0 >> 32) ^ x3 ^ k1; x3 = (ember_u32)p0;
    k0 += PHILOX_W0; k1 += PHILOX_W1;
  }
  ember_u4 w; w.x = x0; w.y = x1; w.z = x2; w.w = x3;
  return w;
}
/* [0, 1) with `bits` (<= 24) random bits: every value is exact in a float of that many digits,
   so rounding to the output dtype never reaches 1 */
EMBER_FN float u01f(ember_u32 a, int bits) {
  return (float)(a >> (32 - bits)) * (1.0f / (float)(1u << bits));
}
#ifdef EMBER_FP64
/* [0, 1) with 53 random bits, numpy's construction from two words */
EMBER_FN double u01d(ember_u32 a, ember_u32 b) {
  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}
#endif

/* -- complex arithmetic ---------------------------------------------------------------------
   EMBER_COMPLEX_OPS(P, T) defines P##_add and P##_mul on the pair type T (.x the real part,
   .y the imaginary part): OpenCL instantiates it on float2/double2, CUDA on its structs. */
#define EMBER_COMPLEX_OPS(P, T) \
EMBER_FN T P##_add(T a, T b) { T r; r.x = a.x + b.x; r.y = a.y + b.y; return r; } \
EMBER_FN T P##_mul(T a, T b) { \
  T r; r.x = a.x * b.x - a.y * b.y; r.y = a.x * b.y + a.y * b.x; return r; }
