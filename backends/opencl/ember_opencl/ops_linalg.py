"""``matmul`` (the product primitive of ``ember.ops.linalg``) as a tiled GEMM.

numpy's matmul rules: 1-D operands become a row (left) or a column (right) and that dim is
dropped from the result; batch dims broadcast. Operands are read through their strides
(transposed and expanded views need no copy); batch dims are collapsed and decomposed in the
kernel from an int64 metadata buffer, like the elementwise template. Each work-group computes a
TS x TS tile of C, staging TS x TS tiles of A and B in local memory.

float32/float64 products big enough to fill a register tile take the *fast* path instead: each
work-item keeps an RM x RN tile of C in RM vector registers (RN floats wide: one AVX-512
register on a CPU device) and streams a row of B per step of k, so PoCL's code is plain SIMD
FMAs (about numpy's BLAS speed on the PoCL CPU device, 50x the local-memory kernel there). It
reads row-major operands whose sizes are whole tiles; other operands are first packed into
such a buffer (an O(n^2) copy beside the O(n^3) product).

``einsum`` runs on the device too, as views, sums and this GEMM: repeated labels of an operand
become a diagonal view (``as_strided``), labels needed by nothing later are summed away, and
each pair of operands (left to right) becomes one batched ``matmul`` after a permute/reshape
to (batch..., free, contracted) x (batch..., contracted, free). The fused composites (addmm &
co) come from matmul and the elementwise kernels.

``linalg_svdvals`` is a one-sided (Hestenes) Jacobi SVD, a work-item per matrix: the matrix is
copied column by column into scratch (transposed when it is wide, so it has k = min(m, n)
columns), pairs of columns are rotated until every pair is orthogonal to working precision,
and the singular values are the column norms, sorted descending. Jacobi is accurate to the
last bits (more than bidiagonal QR) but serial per matrix: fine for the small and batched
matrices nuclear norms see, slow for one large matrix.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from ember.kit.binding import bind
from ember.runtime import (broadcast_shapes, data_of, get_op, layout_of, offset_of, shape_of,
                           storage_of, strides_of, tensor_constructor)
from ember.runtime import dtypes as D

from . import cltypes
from .codegen import collapse, compile_program, remember


def _tile(state):
    return 16 if state.max_wg >= 256 else 8


def source(state, key):
    dt, at, br, ts = key
    c, a = cltypes.CTYPE[dt], cltypes.CTYPE[at]
    L = ["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(state.dtypes),
         f"typedef {a} AT;",
         f"__kernel void gemm(__global {c}* C, __global const {c}* A, __global const {c}* B, "
         f"__global const long* meta, const long M, const long N, const long K)\n{{",
         "  const int lx = get_local_id(0), ly = get_local_id(1);",
         f"  const long col = get_group_id(0) * {ts} + lx;",
         f"  const long row = get_group_id(1) * {ts} + ly;",
         "  long q = get_group_id(2), e;"]
    # meta: batch sizes [br]; C, A, B: offset, batch strides [br]; sam, sak, sbk, sbn
    off = [br + t * (br + 1) for t in range(3)]
    L.append(f"  long oc = meta[{off[0]}], oa = meta[{off[1]}], ob = meta[{off[2]}];")
    for d in range(br - 1, -1, -1):
        L.append(f"  e = q % meta[{d}]; q /= meta[{d}];")
        L.append(f"  oc += e * meta[{off[0] + 1 + d}]; oa += e * meta[{off[1] + 1 + d}]; "
                 f"ob += e * meta[{off[2] + 1 + d}];")
    m = br + 3 * (br + 1)
    L.append(f"  const long sam = meta[{m}], sak = meta[{m + 1}], sbk = meta[{m + 2}], "
             f"sbn = meta[{m + 3}];")
    L.append(f"  __local AT As[{ts}][{ts + 1}];")
    L.append(f"  __local AT Bs[{ts}][{ts + 1}];")
    L.append("  AT acc = 0;")
    L.append(f"  for (long t = 0; t < K; t += {ts}) {{")
    L.append("    const long ka = t + lx, kb = t + ly;")
    L.append(f"    As[ly][lx] = (row < M && ka < K) ? "
             f"{cltypes.cvt('A[oa + row * sam + ka * sak]', dt, at)} : (AT)0;")
    L.append(f"    Bs[ly][lx] = (kb < K && col < N) ? "
             f"{cltypes.cvt('B[ob + kb * sbk + col * sbn]', dt, at)} : (AT)0;")
    L.append("    barrier(CLK_LOCAL_MEM_FENCE);")
    L.append(f"    for (int k = 0; k < {ts}; ++k) acc += As[ly][k] * Bs[k][lx];")
    L.append("    barrier(CLK_LOCAL_MEM_FENCE);")
    L.append("  }")
    store = "(acc != 0)" if dt is D.bool_ else "acc"
    L.append(f"  if (row < M && col < N) C[oc + row * N + col] = "
             f"{cltypes.cvt(store, at if dt is not D.bool_ else D.bool_, dt)};")
    L.append("}")
    return "\n".join(L)


def _kernel(state, key):
    knl = state.kernels.get(key)
    if knl is None:
        knl = compile_program(state, source(state, key), "gemm").gemm
        knl.set_scalar_arg_dtypes([None, None, None, None, np.int64, np.int64, np.int64])
        state.kernels[key] = knl
    return knl


def _as_matrix(t, left):
    """(batch shape, batch strides, rows, cols, row stride, col stride) of an operand."""
    shape, stride, _ = layout_of(t)
    if len(shape) == 1:
        if left:
            return (), (), 1, shape[0], 0, stride[0]
        return (), (), shape[0], 1, stride[0], 0
    return shape[:-2], stride[:-2], shape[-2], shape[-1], stride[-2], stride[-1]


def _batch_strides(bshape, shape, stride):
    pad = len(bshape) - len(shape)
    return tuple([0] * pad + [0 if s == 1 else st for s, st in zip(shape, stride)])


# -- the fast path ------------------------------------------------------------------------------
RM, LX, LY = 8, 4, 4          # rows per work-item, work-group shape (cols, rows)
_VEC = {D.float32: 16, D.float64: 8}  # RN: one 512-bit register of the dtype

FAST_SRC = r"""
#pragma OPENCL FP_CONTRACT OFF
__kernel void gemm_fast(__global T* C, __global const T* A, __global const T* B,
    const long oa, const long ob, const long bsa, const long bsb, const long lda,
    const long ldb, const long M, const long N, const long K) {
  const long c0 = get_global_id(0) * RN, r0 = get_global_id(1) * RM, z = get_global_id(2);
  __global const T* a = A + oa + z * bsa + r0 * lda;
  __global const T* b = B + ob + z * bsb + c0;
  VT acc[RM];
  for (int i = 0; i < RM; ++i) acc[i] = (VT)0;
  for (long k = 0; k < K; ++k, b += ldb) {
    const VT v = VLOAD(0, b);
    #pragma unroll
    for (int i = 0; i < RM; ++i) acc[i] = fma((VT)a[i * lda + k], v, acc[i]);
  }
  __global T* c = C + z * M * N + c0;
  for (int i = 0; i < RM && r0 + i < M; ++i) {
    if (c0 + RN <= N) { VSTORE(acc[i], 0, c + (r0 + i) * N); continue; }
    T tmp[RN];
    VSTORE(acc[i], 0, tmp);
    for (int j = 0; j < RN && c0 + j < N; ++j) c[(r0 + i) * N + j] = tmp[j];
  }
}
"""


def _fast_kernel(state, dt):
    key = ("gemm_fast", dt)
    knl = state.kernels.get(key)
    if knl is None:
        rn, c = _VEC[dt], cltypes.CTYPE[dt]
        src = (cltypes.extensions_pragmas(state.dtypes) + f"\ntypedef {c} T;\n#define RM {RM}\n"
               f"#define RN {rn}\n#define VT {c}{rn}\n#define VLOAD vload{rn}\n"
               f"#define VSTORE vstore{rn}\n" + FAST_SRC)
        knl = compile_program(state, src, "gemm_fast").gemm_fast
        knl.set_scalar_arg_dtypes([None] * 3 + [np.int64] * 9)
        state.kernels[key] = knl
    return knl


#: packed copies of small operands are kept (least recently used out) for the next product
#: that reads the same storage, unchanged (its version counter), in the same layout and queue:
#: an RNN's weight is packed once per step instead of once per time step and direction
PACK_CACHE_ENTRIES = 32
PACK_CACHE_BYTES = 1 << 20


def _packed(backend, st, t, batch, rows, cols, bstrides, rs, cs, rows_p, cols_p):
    """(tensor, offset, batch stride, row stride) of a row-major operand whose rows x cols
    matrices (padded to rows_p x cols_p) follow each other: ``t`` itself when it already is
    one, else a packed copy (a cached one while ``t``'s storage is unchanged)."""
    if batch and not any(bstrides):  # one matrix broadcast over the batch: pack it once
        t, off, _, ld = _packed(backend, st, t, (), rows, cols, (), rs, cs, rows_p, cols_p)
        return t, off, 0, ld
    nb = math.prod(batch)
    sizes, (bs,) = collapse(batch, [(batch, bstrides)])
    if cs == 1 and rows == rows_p and cols == cols_p and (rs == cols or rows == 1) and \
            (nb == 1 or (len(sizes) == 1 and bs[0] == rows * cols)):
        return t, offset_of(t), rows * cols, cols
    size = nb * rows_p * cols_p
    full = tuple(batch) + (rows, cols)
    storage = storage_of(t)
    key = (id(storage), storage.version, offset_of(t), full, tuple(bstrides), rs, cs, rows_p,
           cols_p, t.dtype, id(backend.state_queue(t.device)[1]))
    packs = st.packed
    hit = packs.get(key)
    if hit is not None and hit[0]() is storage:
        packs.move_to_end(key)
        return hit[1], 0, rows_p * cols_p, cols_p
    p = backend.new_tensor(st, (size,), t.dtype, t.device)
    new = tensor_constructor()
    dst = new(p.untyped_storage(), full, tuple(
        rows_p * cols_p * math.prod(batch[d + 1:]) for d in range(len(batch))) + (cols_p, 1),
        0, t.dtype, t.device, None)
    src = new(t.untyped_storage(), full, tuple(bstrides) + (rs, cs), t.storage_offset(),
              t.dtype, t.device, None)
    backend.copy_(dst, src)
    if size * t.dtype.itemsize <= PACK_CACHE_BYTES:
        packs[key] = (weakref.ref(storage), p)
        if len(packs) > PACK_CACHE_ENTRIES:
            packs.popitem(last=False)
    return p, 0, rows_p * cols_p, cols_p


def _fast_matmul(backend, st, q, a, b, out, batch, ab, ast, bb, bst, M, N, K, sam, sak, sbk,
                 sbn):
    rn = _VEC[a.dtype]
    gx, gy = -(-N // (rn * LX)) * LX, -(-M // (RM * LY)) * LY
    A, oa, bsa, lda = _packed(backend, st, a, batch, M, K, _batch_strides(batch, ab, ast),
                              sam, sak, gy * RM, K)
    B, ob, bsb, ldb = _packed(backend, st, b, batch, K, N, _batch_strides(batch, bb, bst),
                              sbk, sbn, K, gx * rn)
    knl = _fast_kernel(st, a.dtype)
    with st.launch_lock:
        st.last[q] = knl(q, (gx, gy, math.prod(batch)), (LX, LY, 1), data_of(out),
                         data_of(A), data_of(B), oa, ob, bsa, bsb, lda, ldb, M, N, K)
    return out


#: the most elements the product's temporary (a * b before the sum) may have
THIN_TEMPORARY = 1 << 24


def _thin_product(a, b, batch, ab, ast, bb, bst, M, N, K, sam, sak, sbk, sbn, out_shape):
    """``a @ b`` with one output column (dots, matrix-vector products) or one output row, as
    ``a * b`` summed over K by the backend's parallel reduction. The tiled kernel gives such a
    product's outputs one work-item each, with 1/16 of every tile in use: a float64 dot of 32k
    (LBFGS's bread) took 10 ms on PoCL, a (2048 x 100) @ (100 x 1) batch of 16 34 ms."""
    as_strided = get_op("as_strided")
    bs_a, bs_b = _batch_strides(batch, ab, ast), _batch_strides(batch, bb, bst)
    if N == 1:     # (batch, M, K) * (batch, 1, K), summed over K
        x = as_strided(a, batch + (M, K), bs_a + (sam, sak), offset_of(a))
        y = as_strided(b, batch + (1, K), bs_b + (0, sbk), offset_of(b))
    else:          # M == 1: (batch, K, 1) * (batch, K, N), summed over K
        x = as_strided(a, batch + (K, 1), bs_a + (sak, 0), offset_of(a))
        y = as_strided(b, batch + (K, N), bs_b + (sbk, sbn), offset_of(b))
    dim = len(batch) + (1 if N == 1 else 0)
    r = get_op("sum")(get_op("mul")(x, y, a.dtype), (dim,), False, a.dtype)
    strides = tuple(math.prod(out_shape[d + 1:]) for d in range(len(out_shape)))
    return as_strided(r, out_shape, strides, 0)


def matmul(backend, a, b):
    st, q = backend.state_queue(a.device)
    ab, ast, M, K, sam, sak = _as_matrix(a, True)
    bb, bst, _, N, sbk, sbn = _as_matrix(b, False)
    batch = broadcast_shapes(ab, bb)
    out_shape = batch + ((M,) if a.ndim > 1 else ()) + ((N,) if b.ndim > 1 else ())
    nb = math.prod(batch)
    if (N == 1 or M == 1) and a.dtype in _VEC and 0 < nb * M * N * K <= THIN_TEMPORARY:
        return _thin_product(a, b, batch, ab, ast, bb, bst, M, N, K, sam, sak, sbk, sbn,
                             out_shape)
    out = backend.new_tensor(st, out_shape, a.dtype, a.device)
    if nb == 0 or M == 0 or N == 0:
        return out
    if a.dtype in _VEC and N >= _VEC[a.dtype] and M >= RM and M * N * K >= 1 << 15:
        return _fast_matmul(backend, st, q, a, b, out, batch, ab, ast, bb, bst, M, N, K, sam,
                            sak, sbk, sbn)
    cst = tuple(M * N * math.prod(batch[d + 1:]) for d in range(len(batch)))
    sizes, (cb, abs_, bbs) = collapse(batch, [(batch, cst),
                                              (batch, _batch_strides(batch, ab, ast)),
                                              (batch, _batch_strides(batch, bb, bst))])
    meta = list(sizes)
    for offset, strides in ((offset_of(out), cb), (offset_of(a), abs_), (offset_of(b), bbs)):
        meta += [offset] + strides
    meta += [sam, sak, sbk, sbn]
    import pyopencl as cl
    mkey = ("gemm", tuple(meta))
    ent = st.meta.get(mkey)
    if ent is None:
        ent = remember(st, mkey, cl.Buffer(st.context,
                                           cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                                           hostbuf=np.array(meta, dtype=np.int64)))
    ts = _tile(st)
    at = D.float32 if a.dtype is D.float16 else D.int32 if a.dtype is D.bool_ else a.dtype
    knl = _kernel(st, (a.dtype, at, len(sizes), ts))
    gsize = (-(-N // ts) * ts, -(-M // ts) * ts, nb)
    with st.launch_lock:
        st.last[q] = knl(q, gsize, (ts, ts, 1), data_of(out), data_of(a),
                         data_of(b), ent, M, N, K)
    return out


# -- einsum --------------------------------------------------------------------------------------
def _diagonal(t, labels):
    """``t`` with each repeated label taken once (its diagonal: strides add up)."""
    if len(set(labels)) == len(labels):
        return t, list(labels)
    out, size, stride = [], [], []
    for lab, n, s in zip(labels, shape_of(t), strides_of(t)):
        if lab in out:
            stride[out.index(lab)] += s
            continue
        out.append(lab)
        size.append(n)
        stride.append(s)
    return t.as_strided(size, stride, offset_of(t)), out


def _sum(t, labels, drop):
    sum_op = get_op("sum")
    dims = tuple(i for i, lab in enumerate(labels) if lab in drop)
    if not dims:
        return t, labels
    return sum_op(t, dims, False, t.dtype), [lab for lab in labels if lab not in drop]


def _contract(a, la, b, lb, keep):
    """(a x b, labels): the labels of both in ``keep`` stay, the others are summed."""
    sum_op = get_op("sum")
    a, la = _sum(a, la, set(la) - set(lb) - keep)
    b, lb = _sum(b, lb, set(lb) - set(la) - keep)
    batch = [x for x in la if x in lb and x in keep]
    contr = [x for x in la if x in lb and x not in keep]
    af = [x for x in la if x not in lb]
    bf = [x for x in lb if x not in la]
    for x in contr:  # a size-1 side broadcasts: sum the other side first
        i, j = la.index(x), lb.index(x)
        if shape_of(a)[i] != shape_of(b)[j]:
            if shape_of(a)[i] == 1:
                b = sum_op(b, (j,), True, b.dtype)
            else:
                a = sum_op(a, (i,), True, a.dtype)
    sa = dict(zip(la, shape_of(a)))
    sb = dict(zip(lb, shape_of(b)))
    a = a.permute([la.index(x) for x in batch + af + contr])
    b = b.permute([lb.index(x) for x in batch + contr + bf])
    k = math.prod(sa[x] for x in contr)
    a = a.reshape([sa[x] for x in batch] + [math.prod(sa[x] for x in af), k])
    b = b.reshape([sb[x] for x in batch] + [k, math.prod(sb[x] for x in bf)])
    c = get_op("matmul")(a, b)
    bshape = list(shape_of(c)[:len(batch)])
    return c.reshape(bshape + [sa[x] for x in af] + [sb[x] for x in bf]), batch + af + bf


def einsum(equation, operands):
    lhs, out = equation.split("->")
    items = [_diagonal(t, list(term)) for t, term in zip(operands, lhs.split(","))]
    out = list(out)
    for i, (t, labels) in enumerate(items):  # labels nobody else needs: summed at once
        later = set(out).union(*(set(lab) for j, (_, lab) in enumerate(items) if j != i))
        items[i] = _sum(t, labels, set(labels) - later)
    while len(items) > 1:
        (a, la), (b, lb) = items[0], items[1]
        keep = set(out).union(*(set(lab) for _, lab in items[2:]))
        items = [_contract(a, la, b, lb, keep)] + items[2:]
    r, labels = items[0]
    r, labels = _sum(r, labels, set(labels) - set(out))
    r = r.permute([labels.index(x) for x in out]).contiguous()
    if any(storage_of(r) is storage_of(t) for t in operands):  # a relabelling is a view: copy it
        r = r.clone()
    return r


# -- svdvals ---------------------------------------------------------------------------------------
SVD_SRC = r"""
__kernel void svdvals(__global OT* out, __global AT* W, const long B, const long rows,
                      const long k, const AT tol) {
  const long z = get_global_id(0);
  if (z >= B) return;
  __global AT* w = W + z * rows * k;
  for (int sweep = 0; sweep < 60; ++sweep) {
    int rotated = 0;
    for (long p = 0; p + 1 < k; ++p) {
      for (long q = p + 1; q < k; ++q) {
        __global AT* x = w + p * rows;
        __global AT* y = w + q * rows;
        AT a = 0, b = 0, g = 0;
        for (long i = 0; i < rows; ++i) { a += x[i] * x[i]; b += y[i] * y[i]; g += x[i] * y[i]; }
        if (!(fabs(g) > tol * sqrt(a * b))) continue;
        rotated = 1;
        const AT zeta = (b - a) / (2 * g);
        const AT t = (zeta >= 0 ? (AT)1 : (AT)-1) / (fabs(zeta) + hypot((AT)1, zeta));
        const AT c = (AT)1 / sqrt(1 + t * t), s = c * t;
        for (long i = 0; i < rows; ++i) {
          const AT u = x[i], v = y[i];
          x[i] = c * u - s * v;
          y[i] = s * u + c * v;
        }
      }
    }
    if (!rotated) break;
  }
  __global OT* o = out + z * k;
  for (long j = 0; j < k; ++j) {  /* norms, then an insertion sort, descending */
    AT n = 0;
    for (long i = 0; i < rows; ++i) n += w[j * rows + i] * w[j * rows + i];
    AT v = sqrt(n);
    long i = j;
    for (; i > 0 && (AT)o[i - 1] < v; --i) o[i] = o[i - 1];
    o[i] = (OT)v;
  }
}
"""


def svdvals(backend, A):
    st, q = backend.state_queue(A.device)
    *batch, m, n = shape_of(A)
    k = min(m, n)
    out = backend.new_tensor(st, tuple(batch) + (k,), A.dtype, A.device)
    nb = math.prod(batch)
    if nb == 0 or k == 0:
        return out
    at = D.float32 if A.dtype is D.float16 else A.dtype
    rows = max(m, n)
    W = backend.new_tensor(st, (nb * rows * k,), at, A.device)
    bstr = tuple(rows * k * math.prod(batch[d + 1:]) for d in range(len(batch)))
    # column j of the scratch matrix is column j of A (tall) or row j of A (wide)
    inner = (1, rows) if m >= n else (rows, 1)
    scratch = tensor_constructor()(W.untyped_storage(), tuple(A.shape), bstr + inner, 0, at,
                                   A.device, None)
    backend.copy_(scratch, A)
    key = ("svdvals", A.dtype, at)
    knl = st.kernels.get(key)
    if knl is None:
        src = (cltypes.extensions_pragmas(st.dtypes) + "\n#pragma OPENCL FP_CONTRACT OFF\n"
               f"typedef {cltypes.CTYPE[at]} AT;\ntypedef {cltypes.CTYPE[A.dtype]} OT;\n"
               + SVD_SRC)
        knl = compile_program(st, src, "svdvals").svdvals
        knl.set_scalar_arg_dtypes([None, None, np.int64, np.int64, np.int64,
                                   cltypes.np_type(at)])
        st.kernels[key] = knl
    tol = float(np.finfo(at.np).eps)
    with st.launch_lock:
        st.last[q] = knl(q, (-(-nb // st.local_size) * st.local_size,), st.local_sizes,
                         data_of(out), data_of(W), nb, rows, k,
                         cltypes.pack_scalar(tol, at))
    return out


TABLE = {"matmul": matmul, "linalg_svdvals": svdvals}


def register(backend):
    bind(backend, TABLE)
    backend.kernels.register("einsum", einsum)  # written with ember ops: no backend argument
