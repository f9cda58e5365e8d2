"""``matmul`` (the product primitive of ``ember.ops.linalg``) as a tiled GEMM.

numpy's matmul rules: 1-D operands become a row (left) or a column (right) and that dim is
dropped from the result; batch dims broadcast. Operands are read through their strides
(transposed and expanded views need no copy); batch dims are collapsed and decomposed in the
kernel from an int64 metadata buffer, like the elementwise template. Each work-group computes a
TS x TS tile of C, staging TS x TS tiles of A and B in local memory. einsum, svdvals and the
fused composites (addmm & co) run through matmul or on the CPU fallback.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ember import _dtype as D
from ember.ops._util import _broadcast_pair

from . import cltypes
from .codegen import collapse


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
        import pyopencl as cl
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            knl = cl.Program(state.context, source(state, key)).build().gemm
        knl.set_scalar_arg_dtypes([None, None, None, None, np.int64, np.int64, np.int64])
        state.kernels[key] = knl
    return knl


def _as_matrix(t, left):
    """(batch shape, batch strides, rows, cols, row stride, col stride) of an operand."""
    shape, stride = t._shape, t._stride
    if len(shape) == 1:
        if left:
            return (), (), 1, shape[0], 0, stride[0]
        return (), (), shape[0], 1, stride[0], 0
    return shape[:-2], stride[:-2], shape[-2], shape[-1], stride[-2], stride[-1]


def _batch_strides(bshape, shape, stride):
    pad = len(bshape) - len(shape)
    return tuple([0] * pad + [0 if s == 1 else st for s, st in zip(shape, stride)])


def matmul(backend, a, b):
    st, q = backend._sq(a.device)
    ab, ast, M, K, sam, sak = _as_matrix(a, True)
    bb, bst, _, N, sbk, sbn = _as_matrix(b, False)
    batch = _broadcast_pair(ab, bb)
    out_shape = batch + ((M,) if a.ndim > 1 else ()) + ((N,) if b.ndim > 1 else ())
    out = backend._new(st, out_shape, a.dtype, a.device)
    nb = math.prod(batch)
    if nb == 0 or M == 0 or N == 0:
        return out
    cst = tuple(M * N * math.prod(batch[d + 1:]) for d in range(len(batch)))
    sizes, (cb, abs_, bbs) = collapse(batch, [(batch, cst),
                                              (batch, _batch_strides(batch, ab, ast)),
                                              (batch, _batch_strides(batch, bb, bst))])
    meta = list(sizes)
    for offset, strides in ((out._offset, cb), (a._offset, abs_), (b._offset, bbs)):
        meta += [offset] + strides
    meta += [sam, sak, sbk, sbn]
    import pyopencl as cl
    mkey = ("gemm", tuple(meta))
    ent = st.meta.get(mkey)
    if ent is None:
        ent = st.meta[mkey] = cl.Buffer(st.context,
                                        cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                                        hostbuf=np.array(meta, dtype=np.int64))
    ts = _tile(st)
    at = D.float32 if a.dtype is D.float16 else D.int32 if a.dtype is D.bool_ else a.dtype
    knl = _kernel(st, (a.dtype, at, len(sizes), ts))
    gsize = (-(-N // ts) * ts, -(-M // ts) * ts, nb)
    with st.launch_lock:
        st.last[q] = knl(q, gsize, (ts, ts, 1), out._storage.data, a._storage.data,
                         b._storage.data, ent, M, N, K)
    return out


def register(backend):
    backend.kernels.register("matmul", lambda a, b: matmul(backend, a, b))
