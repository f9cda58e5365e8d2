"""Reductions that return positions: argmax, argmin, max_dim, min_dim.

The schedule and the address math are ``ops_reduction``'s (an output per kept position, the
reduced dims decomposed from the same metadata buffer, a work-group tree or a work-item per
output, long reductions split in chunks and finished by a second launch). The accumulator is a
(value, index) pair, and the index is the position in the reduced dims in C order -- which is
the flat index ``argmax(dim=None)`` returns. Order between pairs, like PyTorch: a NaN beats
every number (the first NaN wins), else the larger (smaller) value, ties to the lower index.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ember.kit.binding import bind_with
from ember.runtime import data_of, layout_of
from ember.runtime import dtypes as D

from . import cltypes
from .codegen import compile_program
from .ops_reduction import (DtypeKind, chunk_loop_head, extreme_init, launch_sizes,
                            reduction_meta, schedule_head, work_group_size)


def _better(dt, op):
    plain = f"(v {op} b || (v == b && i < bi))"
    if dt.category != D.FLOATING:
        return plain
    return f"(isnan(v) ? (!isnan(b) || i < bi) : (!isnan(b) && {plain}))"


class ArgReduceKey(NamedTuple):
    """What a compiled argmax/argmin kernel pair is specialised for (its cache key)."""
    name: str          # argmax or argmin (both are built together)
    dtype: object
    kept_rank: int
    reduced_rank: int
    mode: str
    local_size: int
    first: bool


def source(state, key):
    _, dt, kr, rr, mode, ls, first = key
    T = cltypes.CTYPE[dt]
    L = ["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(state.dtypes),
         f"typedef {T} T;"]
    for name, op, largest in (("argmax", ">", False), ("argmin", "<", True)):
        L.append(f"#undef BETTER\n#define BETTER(v, i, b, bi) {_better(dt, op)}")
        L.append(f"__kernel void {name}(__global T* vout, __global long* iout, "
                 f"__global const T* in, __global const long* inidx, __global const long* meta, "
                 f"const long M, const long R, const long G, const long chunk)\n{{")
        L += schedule_head(kr, rr, mode, [f"__local T sv[{ls}];", f"__local long si[{ls}];"])
        init = extreme_init(DtypeKind(dt), largest).replace('AT', 'T')
        L.append(f"  T b = {init}; long bi = LONG_MAX;")
        L += chunk_loop_head(rr, mode, ls)
        L.append(f"    const T v = in[p]; const long i = {'j' if first else 'inidx[p]'};")
        L.append("    if (BETTER(v, i, b, bi)) { b = v; bi = i; }")
        L.append("  }")
        if mode == "wg":
            L.append("  sv[lid] = b; si[lid] = bi;")
            L.append("  barrier(CLK_LOCAL_MEM_FENCE);")
            L.append(f"  for (int s = {ls // 2}; s > 0; s >>= 1) {{")
            L.append("    if (lid < s) { const T v = sv[lid + s]; const long i = si[lid + s];")
            L.append("      const T b = sv[lid]; const long bi = si[lid];")
            L.append("      if (BETTER(v, i, b, bi)) { sv[lid] = v; si[lid] = i; } }")
            L.append("    barrier(CLK_LOCAL_MEM_FENCE);")
            L.append("  }")
            L.append("  if (lid != 0) return;")
            L.append("  b = sv[0]; bi = si[0];")
        L.append("  vout[m * G + g] = b; iout[m * G + g] = bi;")
        L.append("}")
    return "\n".join(L)


def _kernel(state, key):
    knl = state.kernels.get(key)
    if knl is None:
        prg = compile_program(state, source(state, key), "argmax/argmin")
        for name in ("argmax", "argmin"):
            k = getattr(prg, name)
            k.set_scalar_arg_dtypes([None] * 5 + [np.int64] * 4)
            state.kernels[key._replace(name=name)] = k
        knl = state.kernels[key]
    return knl


def arg_reduce(backend, name, x, dims, keepdim):
    """(values, int64 indices) of the best element over ``dims`` (sorted, may be empty)."""
    st, q = backend.state_queue(x.device)
    shape, stride, offset = layout_of(x)
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape)) if keepdim else \
        tuple(s for d, s in enumerate(shape) if d not in dims)
    values = backend.new_tensor(st, out_shape, x.dtype, x.device)
    indices = backend.new_tensor(st, out_shape, D.int64, x.device)
    M = math.prod(s for d, s in enumerate(shape) if d not in dims)
    R = math.prod(shape[d] for d in dims)
    if M == 0:
        return values, indices
    kr, rr, mbuf = reduction_meta(st, shape, stride, offset, tuple(dims))
    ls = work_group_size(st)
    if M >= R or ls == 1:
        _launch(st, q, name, x.dtype, kr, rr, "item", 1, True, values, indices, x, None, mbuf,
                M, R, 1, R)
        return values, indices
    G = max(1, min(-(-R // (ls * 8)), -(-st.compute_units * 4 // M)))
    chunk = -(-R // G)
    if G == 1:
        _launch(st, q, name, x.dtype, kr, rr, "wg", ls, True, values, indices, x, None, mbuf,
                M, R, 1, chunk)
        return values, indices
    pv = backend.new_tensor(st, (M, G), x.dtype, x.device)
    pi = backend.new_tensor(st, (M, G), D.int64, x.device)
    _launch(st, q, name, x.dtype, kr, rr, "wg", ls, True, pv, pi, x, None, mbuf, M, R, G, chunk)
    kr2, rr2, mbuf2 = reduction_meta(st, (M, G), (G, 1), 0, (1,))
    mode = "item" if M >= G else "wg"
    _launch(st, q, name, x.dtype, kr2, rr2, mode, ls if mode == "wg" else 1, False, values,
            indices, pv, pi, mbuf2, M, G, 1, G)
    return values, indices


def _launch(st, q, name, dt, kr, rr, mode, ls, first, vout, iout, x, xi, mbuf, M, R, G, chunk):
    knl = _kernel(st, ArgReduceKey(name, dt, kr, rr, mode, ls, first))
    gsize, lsize = launch_sizes(st, mode, M, G, ls)
    with st.launch_lock:
        st.last[q] = knl(q, gsize, lsize, data_of(vout), data_of(iout),
                         data_of(x), None if xi is None else data_of(xi), mbuf,
                         M, R, G, chunk)


def max_min_dim(be, name, x, dim, keepdim):
    """max_dim/min_dim: (values, indices) along ``dim``."""
    return arg_reduce(be, name, x, (dim,) if x.ndim else (), keepdim)


def arg_index(be, name, x, dim, keepdim):
    """argmax/argmin: the indices, over every dim when ``dim`` is None."""
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if x.ndim else ()
    return arg_reduce(be, name, x, dims, keepdim)[1]


def register(backend):
    bind_with(backend, "max_dim", max_min_dim, "argmax")
    bind_with(backend, "min_dim", max_min_dim, "argmin")
    bind_with(backend, "argmax", arg_index, "argmax")
    bind_with(backend, "argmin", arg_index, "argmin")
