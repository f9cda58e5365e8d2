"""Decompositions and solvers of ``ember.ops.linalg`` on the device, for batched small and
medium matrices: one work-group per matrix, its work-items sharing each step of the
algorithm (rows or columns each), barriers between steps. Operands are first copied into
fresh C-contiguous buffers (the outputs), which the kernels then work on in place.

* ``linalg_lu_factor_ex``: blocked right-looking LU with partial pivoting (getrf's structure:
  16-column panels, the trailing matrix updated once per panel by L21 U12; getf2's
  choices in the panel: the first largest |a| of the column, no scaling by a zero pivot,
  info = its 1-based column);
* ``_linalg_pivots_to_permutation``: the interchanges applied in order, a work-item per
  matrix;
* ``linalg_lu_solve`` / ``linalg_solve_triangular``: substitution, a work-item per right-hand
  side (a right solve ``X op(A) = B`` is ``op(A)^T X^T = B^T``: the rows of B);
* ``linalg_cholesky_ex``: left-looking, row-parallel, stopping at the first non-positive pivot
  as LAPACK potrf does (info = its order);
* ``linalg_qr``: Householder QR with LAPACK's reflectors (geqrf's beta = -sign(alpha) norm, so
  R's signs match numpy's), Q formed as orgqr does;
* ``linalg_eigh`` / ``linalg_eigvalsh``: cyclic two-sided Jacobi, the n/2 disjoint rotations of
  a round-robin step applied together; eigenvalues sorted ascending afterwards;
* ``linalg_svd``: one-sided (Hestenes) Jacobi on the columns (of A^T for a wide A), U
  re-orthonormalized (and completed for ``full_matrices`` or zero singular values) by the QR
  kernel.

Above ``JACOBI_MAX`` (min(m, n) > 128) the eigen/singular value kernels hand the matrices to
the CPU backend (LAPACK): Jacobi costs O(sweeps * n^3) in one work-group per matrix, which
for a single large matrix loses to LAPACK's divide and conquer; the other kernels run at every
size. ``linalg_solve_ex``, ``linalg_inv_ex``, ``linalg_det``, ``linalg_slogdet``,
``linalg_matrix_exp``, ``linalg_pinv`` are composites over these kernels; ``linalg_eig``,
``linalg_eigvals`` and the LDL ops have no kernel here (the CPU fallback runs them).
"""
from __future__ import annotations

import numpy as np

from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember.runtime import data_of, get_op, shape_of

from . import cltypes, progs

JACOBI_MAX = 128
_L = np.int64

SOURCE = r"""
#define LS WGS
inline long lmin(long a, long b) { return a < b ? a : b; }

/* Blocked right-looking LU with partial pivoting, in place; a work-group per matrix. Each
   block of NB columns: the panel factored column by column (getf2; rows swapped whole), the
   block row of U solved with the panel's unit lower triangle, then the trailing matrix updated
   by the product L21 U12 once per block, a row per work-item (a contiguous inner loop: what
   vectorizes on CPU devices). */
#define NB 16
__kernel void lu_factor(__global T* A, __global int* piv, __global int* info, const long m,
                        const long n, const int pivot) {
  const long z = get_group_id(0);
  const int lid = get_local_id(0);
  __global T* a = A + z * m * n;
  const long k = lmin(m, n);
  __local T rv[WGS];
  __local long ri[WGS];
  int inf = 0;
  for (long j0 = 0; j0 < k; j0 += NB) {
    const long je = lmin(j0 + NB, k), jb = je - j0;
    for (long j = j0; j < je; j++) {
      long p = j;
      {  /* the search runs without pivoting too: no barrier may sit in a branch */
        T best = -1; long bi = m;
        for (long i = j + lid; i < m; i += LS) {
          const T v = fabs(a[i * n + j]);
          if (v > best) { best = v; bi = i; }
        }
        rv[lid] = best; ri[lid] = bi;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = LS / 2; s > 0; s >>= 1) {
          if (lid < s) {
            const T o = rv[lid + s]; const long oi = ri[lid + s];
            if (o > rv[lid] || (o == rv[lid] && oi < ri[lid])) { rv[lid] = o; ri[lid] = oi; }
          }
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        p = (pivot && ri[0] < m) ? ri[0] : j;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (p != j) {
          for (long c = lid; c < n; c += LS) {
            const T t = a[j * n + c]; a[j * n + c] = a[p * n + c]; a[p * n + c] = t;
          }
        }
      }
      if (lid == 0) piv[z * k + j] = (int)(p + 1);
      barrier(CLK_GLOBAL_MEM_FENCE);
      const T d = a[j * n + j];
      if (d != 0) {
        for (long i = j + 1 + lid; i < m; i += LS) a[i * n + j] /= d;
      } else if (inf == 0) {
        inf = (int)(j + 1);
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      for (long i = j + 1 + lid; i < m; i += LS) {  /* the rest of the panel */
        const T l = a[i * n + j];
        if (l != 0) for (long c = j + 1; c < je; c++) a[i * n + c] -= l * a[j * n + c];
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
    for (long c = je + lid; c < n; c += LS) {  /* U12 = L11^-1 A12 */
      for (long r = j0 + 1; r < je; r++) {
        T s = a[r * n + c];
        for (long q = j0; q < r; q++) s -= a[r * n + q] * a[q * n + c];
        a[r * n + c] = s;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (long i = je + lid; i < m; i += LS) {  /* A22 -= L21 U12, a row per work-item */
      for (long q = 0; q < jb; q++) {
        const T l = a[i * n + j0 + q];
        __global const T* u = a + (j0 + q) * n;
        if (l != 0) for (long c = je; c < n; c++) a[i * n + c] -= l * u[c];
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (lid == 0) info[z] = inf;
}

__kernel void pivots_perm(__global const int* piv, __global long* perm, const long nb,
                          const long k, const long m) {
  const long z = get_global_id(0);
  if (z >= nb) return;
  __global long* p = perm + z * m;
  for (long i = 0; i < m; i++) p[i] = i;
  for (long i = 0; i < k; i++) {
    const long j = piv[z * k + i] - 1;
    const long t = p[i]; p[i] = p[j]; p[j] = t;
  }
}

/* op(A) x = b in place for one column x (x_i at x[i * rs]), A (n x n) triangular: op(A) is A
   or (trans) A^T, its lower or (upper) upper triangle is read, its diagonal is 1 when unit */
inline void solve_triangular(__global const T* a, const long n, __global T* x, const long rs,
                             const int trans, const int upper, const int unit) {
  #define AT(i, q) (trans ? a[(q) * n + (i)] : a[(i) * n + (q)])
  if (!upper) {
    for (long i = 0; i < n; i++) {
      T s = x[i * rs];
      for (long q = 0; q < i; q++) s -= AT(i, q) * x[q * rs];
      x[i * rs] = unit ? s : s / AT(i, i);
    }
  } else {
    for (long i = n - 1; i >= 0; i--) {
      T s = x[i * rs];
      for (long q = i + 1; q < n; q++) s -= AT(i, q) * x[q * rs];
      x[i * rs] = unit ? s : s / AT(i, i);
    }
  }
  #undef AT
}

/* the row interchange of LU pivot i (1-based p[i]) applied to x */
inline void swap_pivot_row(__global const int* p, const long i, __global T* x, const long rs) {
  const long j = p[i] - 1;
  if (j != i) { const T t = x[i * rs]; x[i * rs] = x[j * rs]; x[j * rs] = t; }
}

/* op(A) x = b for the columns of X (x_i at x[i * rs]); trans: A^T */
__kernel void lu_solve(__global const T* LU, __global const int* piv, __global T* X,
                       const long nb, const long n, const long nrhs, const long rs,
                       const long cs, const int trans) {
  const long id = get_global_id(0);
  if (id >= nb * nrhs) return;
  const long z = id / nrhs, c = id % nrhs;
  __global const T* a = LU + z * n * n;
  __global const int* p = piv + z * n;
  __global T* x = X + z * n * nrhs + c * cs;
  if (!trans) {  /* P L U x = b: x = U^-1 L^-1 P^T b */
    for (long i = 0; i < n; i++) swap_pivot_row(p, i, x, rs);
    solve_triangular(a, n, x, rs, 0, 0, 1);
    solve_triangular(a, n, x, rs, 0, 1, 0);
  } else {  /* U^T L^T P^T x = b: x = P L^-T U^-T b */
    solve_triangular(a, n, x, rs, 1, 0, 0);
    solve_triangular(a, n, x, rs, 1, 1, 1);
    for (long i = n - 1; i >= 0; i--) swap_pivot_row(p, i, x, rs);
  }
}

/* op(A) x = b with A triangular: lower/upper of op(A) given by eff_upper */
__kernel void tri_solve(__global const T* A, __global T* X, const long nb, const long n,
                        const long nrhs, const long rs, const long cs, const int trans,
                        const int eff_upper, const int unit) {
  const long id = get_global_id(0);
  if (id >= nb * nrhs) return;
  const long z = id / nrhs, c = id % nrhs;
  solve_triangular(A + z * n * n, n, X + z * n * nrhs + c * cs, rs, trans, eff_upper, unit);
}

/* Cholesky (lower), in place on the lower triangle; the upper one is zeroed */
__kernel void cholesky(__global T* A, __global int* info, const long n) {
  const long z = get_group_id(0);
  const int lid = get_local_id(0);
  __global T* a = A + z * n * n;
  __local T red[WGS];
  __local int stop;
  if (lid == 0) stop = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long j = 0; j < n; j++) {  /* after a failure: no work, the barriers still met */
    const int go = !stop;
    T s = 0;
    if (go) for (long q = lid; q < j; q += LS) s += a[j * n + q] * a[j * n + q];
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = LS / 2; h > 0; h >>= 1) {
      if (lid < h) red[lid] += red[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && go) {
      const T d = a[j * n + j] - red[0];
      if (!(d > 0)) { stop = (int)(j + 1); a[j * n + j] = d; }
      else a[j * n + j] = sqrt(d);
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (!stop) {
      const T djj = a[j * n + j];
      for (long i = j + 1 + lid; i < n; i += LS) {
        T t = a[i * n + j];
        for (long q = 0; q < j; q++) t -= a[i * n + q] * a[j * n + q];
        a[i * n + j] = t / djj;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
  for (long e = lid; e < n * n; e += LS) if (e % n > e / n) a[e] = 0;
  if (lid == 0) info[z] = stop;
}

/* column c of x (m rows, row stride ldx) times the reflector H_j = I - t v v^T, v = (1,
   a[j+1:m, j]) from a (row stride lda): LAPACK's storage of geqrf's reflectors */
inline void apply_reflector(__global const T* a, const long lda, const long m, const long j,
                            const T t, __global T* x, const long ldx, const long c) {
  T w = x[j * ldx + c];
  for (long i = j + 1; i < m; i++) w += a[i * lda + j] * x[i * ldx + c];
  w *= t;
  x[j * ldx + c] -= w;
  for (long i = j + 1; i < m; i++) x[i * ldx + c] -= a[i * lda + j] * w;
}

/* Householder QR (geqrf) in place: R in the upper triangle, the reflectors below, tau */
__kernel void geqrf(__global T* A, __global T* TAU, const long m, const long n) {
  const long z = get_group_id(0);
  const int lid = get_local_id(0);
  __global T* a = A + z * m * n;
  const long k = lmin(m, n);
  __global T* tau = TAU + z * k;
  __local T red[WGS];
  __local T tj, sc;
  for (long j = 0; j < k; j++) {
    T s = 0;
    for (long i = j + 1 + lid; i < m; i += LS) s += a[i * n + j] * a[i * n + j];
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = LS / 2; h > 0; h >>= 1) {
      if (lid < h) red[lid] += red[lid + h];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
      const T alpha = a[j * n + j], xn = sqrt(red[0]);
      if (xn == 0) { tj = 0; sc = 0; }
      else {
        const T beta = -copysign(hypot(alpha, xn), alpha);
        tj = (beta - alpha) / beta;
        sc = 1 / (alpha - beta);
        a[j * n + j] = beta;
      }
      tau[j] = tj;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const T t = tj;
    if (t != 0) for (long i = j + 1 + lid; i < m; i += LS) a[i * n + j] *= sc;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (t != 0) {
      for (long c = j + 1 + lid; c < n; c += LS) apply_reflector(a, n, m, j, t, a, n, c);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

/* Q (m x qc) from geqrf's reflectors, as orgqr: H_0 ... H_{k-1} applied to I */
__kernel void orgqr(__global const T* A, __global const T* TAU, __global T* Q, const long m,
                    const long n, const long qc) {
  const long z = get_group_id(0);
  const int lid = get_local_id(0);
  __global const T* a = A + z * m * n;
  const long k = lmin(m, n);
  __global const T* tau = TAU + z * k;
  __global T* q = Q + z * m * qc;
  for (long e = lid; e < m * qc; e += LS) q[e] = (e / qc == e % qc) ? (T)1 : (T)0;
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long j = k - 1; j >= 0; j--) {
    const T t = tau[j];
    if (t != 0) {
      for (long c = j + lid; c < qc; c += LS) apply_reflector(a, n, m, j, t, q, qc, c);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

/* the round-robin pairing: step r of a sweep over N (even) indices, pair i */
inline void rr_pair(long N, long r, long i, long* p, long* q) {
  long a = (r + i) % (N - 1), b = (N - 1 - i + r) % (N - 1);
  if (i == 0) b = N - 1;
  *p = a < b ? a : b; *q = a < b ? b : a;
}

/* the rotation (c, s) that zeroes the off-diagonal of a symmetric 2x2 whose
   (a_qq - a_pp) / (2 a_pq) is th (Rutishauser's stable form: the smaller angle) */
inline void jacobi_rotation(const T th, T* c, T* s) {
  const T t = (th >= 0 ? (T)1 : (T)-1) / (fabs(th) + sqrt(th * th + 1));
  *c = 1 / sqrt(t * t + 1); *s = t * *c;
}

/* (x, y) <- (c x - s y, s x + c y): a Jacobi rotation of one element pair */
inline void rotate(__global T* x, __global T* y, const T c, const T s) {
  const T u = *x, w = *y;
  *x = c * u - s * w; *y = s * u + c * w;
}

/* what both Jacobi kernels keep per work-group: the padded size N (even) and its pair count,
   one round's rotations, and whether a sweep rotated / the matrix has converged; V (n x n)
   starts as the identity */
#define JACOBI_STATE(V_INIT) \
  const long N = n + (n & 1), npairs = N / 2; \
  __local T cs[JMAX / 2], sn[JMAX / 2]; \
  __local int rotated, done; \
  if (V_INIT) for (long e = lid; e < n * n; e += LS) v[e] = (e / n == e % n) ? (T)1 : (T)0; \
  if (lid == 0) done = 0;

/* up to 60 sweeps of N - 1 rounds r, each round's body ending at a barrier; go is 0 once a
   sweep rotated nothing: a converged matrix does no more work, but meets every barrier (none
   may sit in a branch or be skipped by a break) */
#define JACOBI_SWEEPS_BEGIN \
  for (int sweep = 0; sweep < 60; sweep++) { \
    if (lid == 0) rotated = 0; \
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE); \
    const int go = !done; \
    for (long r = 0; r < N - 1; r++) {
#define JACOBI_SWEEPS_END \
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE); \
    } \
    if (lid == 0 && !rotated) done = 1; \
    barrier(CLK_LOCAL_MEM_FENCE); \
  }

/* symmetric Jacobi: A (n x n) in place -> its diagonal; V (n x n, columns) when vecs */
__kernel void jacobi_eigh(__global T* A, __global T* V, const long n, const int vecs,
                          const T tol) {
  const long z = get_group_id(0);
  const int lid = get_local_id(0);
  __global T* a = A + z * n * n;
  __global T* v = V + z * n * n;
  JACOBI_STATE(vecs)
  JACOBI_SWEEPS_BEGIN
      for (long i = lid; i < npairs; i += LS) {
        long p, q; rr_pair(N, r, i, &p, &q);
        T c = 1, s = 0;
        if (go && q < n) {
          const T apq = a[p * n + q], app = a[p * n + p], aqq = a[q * n + q];
          if (fabs(apq) > tol * sqrt(fabs(app * aqq)) && apq != 0) {
            jacobi_rotation((aqq - app) / (2 * apq), &c, &s);
            rotated = 1;
          }
        }
        cs[i] = c; sn[i] = s;
      }
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
      for (long e = lid; e < npairs * n; e += LS) {       /* columns: A J, V J */
        const long i = e / n, row = e % n;
        long p, q; rr_pair(N, r, i, &p, &q);
        const T c = cs[i], s = sn[i];
        if (q >= n || s == 0) continue;
        rotate(a + row * n + p, a + row * n + q, c, s);
        if (vecs) rotate(v + row * n + p, v + row * n + q, c, s);
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      for (long e = lid; e < npairs * n; e += LS) {       /* rows: J^T (A J) */
        const long i = e / n, col = e % n;
        long p, q; rr_pair(N, r, i, &p, &q);
        const T c = cs[i], s = sn[i];
        if (q >= n || s == 0) continue;
        rotate(a + p * n + col, a + q * n + col, c, s);
      }
  JACOBI_SWEEPS_END
}

/* one-sided Jacobi on the n columns (rows of W, length m) of a tall matrix; V as rows */
__kernel void jacobi_svd(__global T* W, __global T* V, const long m, const long n,
                         const T tol) {
  const long z = get_group_id(0);
  const int lid = get_local_id(0);
  __global T* w = W + z * n * m;
  __global T* v = V + z * n * n;
  JACOBI_STATE(1)
  JACOBI_SWEEPS_BEGIN
      for (long i = lid; i < npairs; i += LS) {
        long p, q; rr_pair(N, r, i, &p, &q);
        T c = 1, s = 0;
        if (go && q < n) {
          __global T* x = w + p * m;
          __global T* y = w + q * m;
          T al = 0, be = 0, ga = 0;
          for (long k = 0; k < m; k++) { al += x[k] * x[k]; be += y[k] * y[k]; ga += x[k] * y[k]; }
          if (fabs(ga) > tol * sqrt(al * be) && ga != 0) {
            jacobi_rotation((be - al) / (2 * ga), &c, &s);
            rotated = 1;
          }
        }
        cs[i] = c; sn[i] = s;
      }
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
      const long len = m > n ? m : n;
      for (long e = lid; e < npairs * len; e += LS) {
        const long i = e / len, k = e % len;
        long p, q; rr_pair(N, r, i, &p, &q);
        const T c = cs[i], s = sn[i];
        if (q >= n || s == 0) continue;
        if (k < m) rotate(w + p * m + k, w + q * m + k, c, s);
        if (k < n) rotate(v + p * n + k, v + q * n + k, c, s);
      }
  JACOBI_SWEEPS_END
}
"""


def _wgs(st):
    return 64 if st.max_wg >= 64 else 1 << (st.max_wg.bit_length() - 1)


def _source(st, dt):
    return "\n".join(["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(st.dtypes),
                      f"typedef {cltypes.CTYPE[dt]} T;", f"#define WGS {_wgs(st)}",
                      f"#define JMAX {JACOBI_MAX}", SOURCE])


def _kernels(st, dt):
    T = cltypes.np_type(dt)
    types = {"lu_factor": [None, None, None, _L, _L, np.int32],
             "pivots_perm": [None, None, _L, _L, _L],
             "lu_solve": [None, None, None, _L, _L, _L, _L, _L, np.int32],
             "tri_solve": [None, None, _L, _L, _L, _L, _L, np.int32, np.int32, np.int32],
             "cholesky": [None, None, _L], "geqrf": [None, None, _L, _L],
             "orgqr": [None, None, None, _L, _L, _L],
             "jacobi_eigh": [None, None, _L, np.int32, T],
             "jacobi_svd": [None, None, _L, _L, T]}
    return progs.program(st, ("linalg_decomp", dt), lambda: _source(st, dt), types,
                         "the linear algebra program")


class _Ctx:
    """The device state, queue and kernels for one call."""

    def __init__(self, backend, t, kernel_dtype=None):
        self.be = backend
        self.st, self.q = backend.state_queue(t.device)
        self.dev = t.device
        self.dt = t.dtype
        self.k = _kernels(self.st, kernel_dtype or t.dtype)
        self.wg = _wgs(self.st)

    def new(self, shape, dtype=None):
        return self.be.new_tensor(self.st, tuple(shape), dtype or self.dt, self.dev)

    def copy(self, t):
        """A fresh C-contiguous copy of ``t``."""
        out = self.new(shape_of(t), t.dtype)
        if out.numel():
            self.be.copy_(out, t)
        return out

    def groups(self, name, nb, *args):
        """``nb`` work-groups of the kernel ``name``."""
        if nb:
            with self.st.launch_lock:
                self.st.last[self.q] = self.k[name](self.q, (nb * self.wg,), (self.wg,), *args)

    def items(self, name, n, *args):
        if n:
            ls = self.st.local_size
            with self.st.launch_lock:
                self.st.last[self.q] = self.k[name](self.q, ((n + ls - 1) // ls * ls,),
                                                    (ls,), *args)


def _nb(t):
    n = 1
    for s in shape_of(t)[:-2]:
        n *= s
    return n


def _eps(dt):
    return float(np.finfo(dt.np).eps)


# -- LU -----------------------------------------------------------------------------------------
def lu_factor_ex(backend, A, pivot):
    c = _Ctx(backend, A)
    m, n = shape_of(A)[-2:]
    k = min(m, n)
    batch = shape_of(A)[:-2]
    LU = c.copy(A)
    piv = c.new(batch + (k,), D.int32)
    info = c.new(batch, D.int32)
    nb = _nb(A)
    if m == 0 or n == 0:
        backend.copy_(info, _zeros(backend, batch, D.int32, A.device)) if nb else None
        return LU, piv, info
    c.groups("lu_factor", nb, data_of(LU), data_of(piv), data_of(info), m, n,
             int(bool(pivot)))
    return LU, piv, info


def _zeros(backend, shape, dtype, device):
    return get_op("full").on(device, tuple(shape), 0, dtype, device)


def pivots_to_permutation(backend, pivots, m):
    c = _Ctx(backend, pivots, D.float32)  # the program of any float dtype has the kernel
    p = c.copy(pivots)
    batch = shape_of(pivots)[:-1]
    perm = c.new(batch + (m,), D.int64)
    nb = 1
    for s in batch:
        nb *= s
    if m:
        c.items("pivots_perm", nb, data_of(p), data_of(perm), nb, shape_of(pivots)[-1], m)
    return perm


def _solve_layout(B, left):
    """(nrhs, row stride, column stride) of the right-hand sides in a contiguous B."""
    r, cl = shape_of(B)[-2:]
    if left:
        return cl, cl, 1   # columns of an (n, k) matrix
    return r, 1, cl        # rows of a (k, n) matrix


def lu_solve(backend, LU, pivots, B, left, adjoint):
    c = _Ctx(backend, LU)
    lu, p, X = c.copy(LU), c.copy(pivots), c.copy(B)
    n = shape_of(LU)[-1]
    nrhs, rs, cs = _solve_layout(B, left)
    nb = _nb(B)
    trans = bool(adjoint) != (not left)  # real dtypes: A^H = A^T
    c.items("lu_solve", nb * nrhs, data_of(lu), data_of(p), data_of(X), nb, n,
            nrhs, rs, cs, int(trans))
    return X


def solve_triangular(backend, A, B, upper, left, unitriangular):
    c = _Ctx(backend, A)
    a, X = c.copy(A), c.copy(B)
    n = shape_of(A)[-1]
    nrhs, rs, cs = _solve_layout(B, left)
    nb = _nb(B)
    trans = not left
    eff_upper = bool(upper) != trans
    c.items("tri_solve", nb * nrhs, data_of(a), data_of(X), nb, n, nrhs, rs, cs,
            int(trans), int(eff_upper), int(bool(unitriangular)))
    return X


# -- Cholesky, QR ---------------------------------------------------------------------------------
def cholesky_ex(backend, A, upper):
    c = _Ctx(backend, A)
    n = shape_of(A)[-1]
    L = c.copy(A.mT if upper else A)  # the upper triangle of A is the lower one of A^T
    info = c.new(shape_of(A)[:-2], D.int32)
    nb = _nb(A)
    if n == 0:
        if nb:
            backend.copy_(info, _zeros(backend, shape_of(A)[:-2], D.int32, A.device))
        return L, info
    c.groups("cholesky", nb, data_of(L), data_of(info), n)
    return (c.copy(L.mT) if upper else L), info


def _geqrf(c, A):
    """(the factored copy of A, tau)."""
    m, n = shape_of(A)[-2:]
    a = c.copy(A)
    tau = c.new(shape_of(A)[:-2] + (min(m, n),))
    c.groups("geqrf", _nb(A), data_of(a), data_of(tau), m, n)
    return a, tau


def _orgqr(c, a, tau, qc):
    m, n = shape_of(a)[-2:]
    Q = c.new(shape_of(a)[:-2] + (m, qc))
    c.groups("orgqr", _nb(a), data_of(a), data_of(tau), data_of(Q), m, n, qc)
    return Q


def qr(backend, A, mode):
    c = _Ctx(backend, A)
    m, n = shape_of(A)[-2:]
    k = min(m, n)
    if A.numel() == 0:
        return _qr_empty(c, A, mode)
    a, tau = _geqrf(c, A)
    rows = m if mode == "complete" else k
    R = c.copy(a.narrow(-2, 0, rows).triu())
    if mode == "r":
        return c.new((0,)), R
    return _orgqr(c, a, tau, m if mode == "complete" else k), R


def _qr_empty(c, A, mode):
    m, n = shape_of(A)[-2:]
    k = min(m, n)
    batch = shape_of(A)[:-2]
    full = get_op("full")
    rows = m if mode == "complete" else k
    R = full.on(c.dev, batch + (rows, n), 0, c.dt, c.dev)
    if mode == "r":
        return c.new((0,)), R
    qc = m if mode == "complete" else k
    Q = get_op("eye").on(c.dev, m, qc, c.dt, c.dev).expand(*batch, m, qc).contiguous() \
        if m and qc else full.on(c.dev, batch + (m, qc), 0, c.dt, c.dev)
    return Q, R


# -- Jacobi eigen/singular values -----------------------------------------------------------------
def _on_cpu(name, *args):
    """Run the CPU backend's kernel of ``name`` (LAPACK) on copies, results back here."""
    from ember.runtime.registry import registry
    kernel = registry.get("cpu").kernels.get(name)
    dev = next(a.device for a in args if hasattr(a, "device"))
    moved = [a.cpu() if hasattr(a, "device") else a for a in args]
    out = kernel(*moved)
    if isinstance(out, tuple):
        return tuple(o.to(dev) for o in out)
    return out.to(dev)


def _symmetric(A, UPLO):
    """The Hermitian matrix whose UPLO triangle A holds."""
    T = A.tril() if UPLO == "L" else A.triu()
    return T + (T.tril(-1) if UPLO == "L" else T.triu(1)).mT


def _eigh(backend, A, UPLO, vecs):
    c = _Ctx(backend, A)
    n = shape_of(A)[-1]
    a = c.copy(_symmetric(A, UPLO))
    V = c.new(shape_of(A) if vecs else (1,))
    c.groups("jacobi_eigh", _nb(A), data_of(a), data_of(V), n, int(vecs),
             _eps(A.dtype))
    w = a.diagonal(0, -2, -1)
    w, idx = get_op("sort")(w, w.ndim - 1, False, True)
    if not vecs:
        return w.contiguous(), None
    V = V.gather(-1, idx.unsqueeze(-2).expand(*shape_of(A)))
    return w.contiguous(), V.contiguous()


def eigh(backend, A, UPLO):
    if shape_of(A)[-1] > JACOBI_MAX:
        return _on_cpu("linalg_eigh", A, UPLO)
    if A.numel() == 0:
        return (_zeros(backend, shape_of(A)[:-1], A.dtype, A.device),
                _zeros(backend, shape_of(A), A.dtype, A.device))
    return _eigh(backend, A, UPLO, True)


def eigvalsh(backend, A, UPLO):
    if shape_of(A)[-1] > JACOBI_MAX:
        return _on_cpu("linalg_eigvalsh", A, UPLO)
    if A.numel() == 0:
        return _zeros(backend, shape_of(A)[:-1], A.dtype, A.device)
    return _eigh(backend, A, UPLO, False)[0]


def _orthonormal_columns(c, U, qc):
    """U's orthonormal columns kept (up to rounding), zero columns and the completion to
    ``qc`` columns filled from a Householder QR of U."""
    a, tau = _geqrf(c, U)
    Q = _orgqr(c, a, tau, qc)
    k = shape_of(U)[-1]
    d = a.diagonal(0, -2, -1)                      # R's diagonal: +-1 for unit columns
    sign = get_op("where")(d.eq(0), 1.0, d.sign(), c.dt)
    head = Q.narrow(-1, 0, k) * sign.unsqueeze(-2)
    if qc == k:
        return head.contiguous()
    from ember.ops.shape import cat
    return cat([head, Q.narrow(-1, k, qc - k)], -1).contiguous()


def svd(backend, A, full_matrices):
    m, n = shape_of(A)[-2:]
    if min(m, n) > JACOBI_MAX:
        return _on_cpu("linalg_svd", A, full_matrices)
    c = _Ctx(backend, A)
    k = min(m, n)
    batch = shape_of(A)[:-2]
    if A.numel() == 0:
        full = get_op("full")
        um, vn = (m, n) if full_matrices else (k, k)
        eye = get_op("eye")
        U = eye.on(c.dev, m, um, c.dt, c.dev).expand(*batch, m, um).contiguous() if m and um \
            else full.on(c.dev, batch + (m, um), 0, c.dt, c.dev)
        Vh = eye.on(c.dev, vn, n, c.dt, c.dev).expand(*batch, vn, n).contiguous() if vn and n \
            else full.on(c.dev, batch + (vn, n), 0, c.dt, c.dev)
        return U, full.on(c.dev, batch + (k,), 0, c.dt, c.dev), Vh
    tall = m >= n
    M, N = (m, n) if tall else (n, m)              # work on a tall matrix: A or A^T
    W = c.copy(A.mT if tall else A)                 # (N, M): the columns of the tall matrix
    V = c.new(batch + (N, N))
    c.groups("jacobi_svd", _nb(A), data_of(W), data_of(V), M, N, _eps(A.dtype))
    norms = (W * W).sum(-1).sqrt()                  # (..., N) singular values, unsorted
    S, idx = get_op("sort")(norms, norms.ndim - 1, True, True)
    W = W.gather(-2, idx.unsqueeze(-1).expand(*shape_of(W)))
    V = V.gather(-2, idx.unsqueeze(-1).expand(*shape_of(V)))
    safe = get_op("where")(S.eq(0), 1.0, S, c.dt)
    Ut = W / safe.unsqueeze(-1)                     # (N, M) rows: left singular vectors
    Y = _orthonormal_columns(c, Ut.mT.contiguous(), M if full_matrices else N)
    if tall:
        U, Vh = Y, V.contiguous()
    else:  # A^T = Y S V^T  =>  A = V S Y^T
        U, Vh = V.mT.contiguous(), Y.mT.contiguous()
    return U, S.contiguous(), Vh


TABLE = {
    "linalg_lu_factor_ex": lu_factor_ex, "_linalg_pivots_to_permutation": pivots_to_permutation,
    "linalg_lu_solve": lu_solve, "linalg_solve_triangular": solve_triangular,
    "linalg_cholesky_ex": cholesky_ex, "linalg_qr": qr, "linalg_eigh": eigh,
    "linalg_eigvalsh": eigvalsh, "linalg_svd": svd,
}


def register(backend):
    bind(backend, TABLE)
