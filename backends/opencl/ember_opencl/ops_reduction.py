"""Reduction kernels (``ember.ops.reduction``): sum, prod, nansum, mean, amax, amin, all, any,
var and vector_norm (arg-reductions with indices are in ``ops_argreduce``).

One template reduces any set of dims of a strided input. The output element ``m`` (over the
kept dims, C order) and the reduction index ``j`` (over the reduced dims) are decomposed with
sizes and strides from an int64 metadata buffer, like the elementwise template, so kept and
reduced dims may be interleaved and non-contiguous. Two schedules:

* ``wg``: a work-group per (output, chunk of the reduction); its work-items stride over the
  chunk, then combine in local memory (a tree). When there are few outputs, the reduction is
  split into chunks and a second launch reduces the partial results.
* ``item``: a work-item per output, looping over the whole reduction -- for many short
  reductions, where a work-group per output would leave most work-items idle.

The accumulator is the result dtype (bool for all/any, the input dtype for amax/amin), as the
CPU backend's numpy calls accumulate. Every kernel also takes a float parameter ``pf`` (the
norm's order, var's divisor) and an optional buffer ``aux`` of one value per output (var's
means: its pass over the data subtracts them, so var is two reductions and no temporary).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ember.kit.binding import bind, bind_with
from ember.runtime import data_of, layout_of, shape_of
from ember.runtime import dtypes as D

from . import cltypes
from .codegen import collapse, compile_program, remember


class Reduction:
    """``init``/``pre``/``combine``/``final`` are C fragments of the accumulator type ``AT``:
    ``pre(v)`` transforms an input value (first pass only), ``combine(a, b)`` is associative,
    ``final`` rewrites ``acc`` after the last pass (``p0`` is the element count)."""

    def __init__(self, name, init, combine, pre="v", final="", second=None):
        self.name = name
        self.init = init
        self.combine = combine
        self.pre = pre
        self.final = final
        self.second = second or name  # the reduction the partial results need


def extreme_init(ctx, largest):
    if ctx.is_float:
        return "(AT)INFINITY" if largest else "(AT)(-INFINITY)"
    if ctx.is_bool:
        return "1" if largest else "0"
    info = np.iinfo(ctx.ct.np)
    v = info.max if largest else info.min
    return f"(AT)({v}L)" if v > -(1 << 63) else f"(AT)({v + 1}L - 1)"


def _extreme(ctx, op):
    # numpy's amax/amin: a NaN anywhere wins
    nan = " || isnan(a)" if ctx.is_float else ""
    return f"((a {op} b{nan}) ? a : b)"


REDUCTIONS = {
    "sum": Reduction("sum", lambda c: "0", "(a + b)"),
    "prod": Reduction("prod", lambda c: "1", "(a * b)"),
    "nansum": Reduction("nansum", lambda c: "0", "(a + b)",
                        pre=lambda c: "(isnan(v) ? (AT)0 : v)" if c.is_float else "v",
                        second="sum"),
    "mean": Reduction("mean", lambda c: "0", "(a + b)", final="acc = acc / (AT)p0;"),
    "amax": Reduction("amax", lambda c: extreme_init(c, False), lambda c: _extreme(c, ">")),
    "amin": Reduction("amin", lambda c: extreme_init(c, True), lambda c: _extreme(c, "<")),
    "all": Reduction("all", lambda c: "1", "(a && b)", pre="(v != 0)"),
    "any": Reduction("any", lambda c: "0", "(a || b)", pre="(v != 0)"),
    # float accumulators only (var and norms are defined for floating inputs)
    "var": Reduction("var", lambda c: "0", "(a + b)", pre="((v - aux[m]) * (v - aux[m]))",
                     final="acc = acc / pf;"),
    "norm_inf": Reduction("norm_inf", lambda c: extreme_init(c, False),
                          lambda c: _extreme(c, ">"), pre="fabs(v)"),
    "norm_ninf": Reduction("norm_ninf", lambda c: extreme_init(c, True),
                           lambda c: _extreme(c, "<"), pre="fabs(v)"),
    "norm0": Reduction("norm0", lambda c: "0", "(a + b)", pre="((v != 0) ? (AT)1 : (AT)0)"),
    "norm1": Reduction("norm1", lambda c: "0", "(a + b)", pre="fabs(v)"),
    "norm2": Reduction("norm2", lambda c: "0", "(a + b)", pre="(v * v)", final="acc = sqrt(acc);"),
    "normp": Reduction("normp", lambda c: "0", "(a + b)", pre="pow(fabs(v), pf)",
                       final="acc = pow(acc, (AT)1 / pf);"),
}


class DtypeKind:
    """What the C fragments of a reduction need to know of its accumulation dtype."""

    def __init__(self, ct):
        self.ct = ct
        self.is_float = ct.category == D.FLOATING
        self.is_bool = ct is D.bool_


def _frag(f, ctx):
    return f(ctx) if callable(f) else f


# reductions with one accumulator type: built in one program (see codegen.Body on groups)
FAMILIES = [("sum", "prod", "nansum", "mean"), ("amax", "amin"), ("all", "any"),
            ("var", "norm_inf", "norm_ninf", "norm0", "norm1", "norm2", "normp")]


def schedule_head(kr, rr, mode, local_decls):
    """Kernel lines shared by every reduction kernel (this module's and ``ops_argreduce``'s):
    read the dims from the metadata buffer, find the output ``m`` and chunk ``g`` this
    work-item (``mode`` "item") or work-group ("wg", which declares ``local_decls``) reduces,
    and the input offset ``base`` of output ``m``.

    meta: kept sizes [kr], reduced sizes [rr], offset, kept strides [kr], reduced strides [rr]
    """
    L = []
    for d in range(kr):
        L.append(f"  const long ks{d} = meta[{d}], kt{d} = meta[{kr + rr + 1 + d}];")
    for d in range(rr):
        L.append(f"  const long rs{d} = meta[{kr + d}], rt{d} = meta[{2 * kr + rr + 1 + d}];")
    if mode == "wg":
        L += [f"  {decl}" for decl in local_decls]
        L.append("  const long grp = get_group_id(0);")
        L.append("  const int lid = get_local_id(0);")
        L.append("  const long m = grp / G, g = grp % G;")
    else:
        L.append("  const long m = get_global_id(0), g = 0;")
    L.append("  if (m >= M) return;")
    L.append(f"  long base = meta[{kr + rr}], q = m, c;")
    for d in range(kr - 1, -1, -1):
        L.append(f"  c = q % ks{d}; q /= ks{d}; base += c * kt{d};")
    return L


def chunk_loop_head(rr, mode, ls):
    """Open the loop over reduced element ``j`` of chunk ``g`` (strided by the work-group in
    "wg" mode), with ``p`` its input offset; the caller writes the body and closes it."""
    L = ["  const long start = g * chunk;", "  const long stop = min(R, start + chunk);"]
    first_j, step = ("start + lid", ls) if mode == "wg" else ("start", 1)
    L.append(f"  for (long j = {first_j}; j < stop; j += {step}) {{")
    L.append("    long p = base, r = j, e;")
    for d in range(rr - 1, -1, -1):
        L.append(f"    e = r % rs{d}; r /= rs{d}; p += e * rt{d};")
    return L


def source(state, keys):
    """One program with a kernel ``red_<name>`` per key (keys differ only in the name)."""
    L = ["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(state.dtypes),
         f"typedef {cltypes.CTYPE[keys[0][2]]} AT;"]
    for key in keys:
        L.append(kernel_source(key))
    return "\n".join(L)


def kernel_source(key):
    name, in_dt, at, out_dt, kr, rr, mode, ls, first, last = key
    red = REDUCTIONS[name]
    ctx = DtypeKind(at)
    combine = _frag(red.combine, ctx)
    pre = _frag(red.pre, ctx) if first else "v"
    L = [f"#undef COMBINE\n#define COMBINE(a, b) {combine}"]
    L.append(f"__kernel void red_{name}(__global {cltypes.CTYPE[out_dt]}* out, "
             f"__global const {cltypes.CTYPE[in_dt]}* in, __global const long* meta, "
             f"const long M, const long R, const long G, const long chunk, const long p0, "
             f"const AT pf, __global const AT* aux)\n{{")
    L += schedule_head(kr, rr, mode, [f"__local AT scratch[{ls}];"])
    L.append(f"  AT acc = {_frag(red.init, ctx)};")
    L += chunk_loop_head(rr, mode, ls)
    L.append(f"    AT v = {cltypes.cvt('in[p]', in_dt, at)};")
    L.append(f"    v = {pre};")
    L.append("    acc = COMBINE(acc, v);")
    L.append("  }")
    if mode == "wg":
        L.append("  scratch[lid] = acc;")
        L.append("  barrier(CLK_LOCAL_MEM_FENCE);")
        L.append(f"  for (int s = {ls // 2}; s > 0; s >>= 1) {{")
        L.append("    if (lid < s) scratch[lid] = COMBINE(scratch[lid], scratch[lid + s]);")
        L.append("    barrier(CLK_LOCAL_MEM_FENCE);")
        L.append("  }")
        L.append("  if (lid != 0) return;")
        L.append("  acc = scratch[0];")
    if last:
        L.append("  " + red.final)
    store = "(uchar)(acc != 0)" if at is D.bool_ else "acc"
    L.append(f"  out[m * G + g] = {cltypes.cvt(store, at, out_dt)};")
    L.append("}")
    return "\n".join(L)


class ReductionKey(NamedTuple):
    """What a compiled reduction kernel is specialised for (its cache key)."""
    name: str          # the reduction (sum, prod, amax, …)
    in_dtype: object
    acc_dtype: object  # the accumulator's dtype
    out_dtype: object
    kept_rank: int     # collapsed rank of the kept dims
    reduced_rank: int  # collapsed rank of the reduced dims
    mode: str          # the schedule (see ``schedule_head``)
    local_size: int
    first: bool        # first pass of a two-pass reduction
    last: bool         # last pass (applies the final step, e.g. mean's division)


def _kernel(state, key):
    knl = state.kernels.get(key)
    if knl is None:
        # complex accumulators (sum, mean) are built alone: the family's other reductions
        # are written for real values
        family = (key.name,) if key.acc_dtype.category == D.COMPLEX else \
            next(f for f in FAMILIES if key.name in f)
        siblings = (key._replace(name=n) for n in family if n != key.name)
        keys = [key] + [k for k in siblings if k not in state.kernels]
        prg = compile_program(state, source(state, keys), f"the {key.name} reductions")
        for k in keys:
            kk = getattr(prg, f"red_{k.name}")
            kk.set_scalar_arg_dtypes([None, None, None] + [np.int64] * 5
                                     + [cltypes.np_type(k.acc_dtype), None])
            state.kernels[k] = kk
        knl = state.kernels[key]
    return knl


def work_group_size(state):
    ls = 1
    while ls * 2 <= min(256, state.max_wg):
        ls *= 2
    return ls


def launch_sizes(state, mode, M, G, ls):
    """(global, local) sizes: ``G`` work-groups of ``ls`` per output (mode "wg"), or a
    work-item per output ("item")."""
    if mode == "wg":
        return (M * G * ls,), (ls,)
    return ((M + state.local_size - 1) // state.local_size * state.local_size,), state.local_sizes


def reduction_meta(state, shape, stride, offset, dims):
    """(kept rank, reduced rank, metadata buffer) of a tensor's layout reduced over ``dims``."""
    import pyopencl as cl
    key = ("red", shape, stride, offset, dims)
    ent = state.meta.get(key)
    if ent is None:
        kept = [d for d in range(len(shape)) if d not in dims]
        ks, (kt,) = collapse(tuple(shape[d] for d in kept),
                             [(tuple(shape[d] for d in kept), tuple(stride[d] for d in kept))])
        rs, (rt,) = collapse(tuple(shape[d] for d in dims),
                             [(tuple(shape[d] for d in dims), tuple(stride[d] for d in dims))])
        meta = np.array(ks + rs + [offset] + kt + rt, dtype=np.int64)
        buf = cl.Buffer(state.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                        hostbuf=meta)
        ent = remember(state, key, (len(ks), len(rs), buf))
    return ent


def reduce(backend, name, x, dims, keepdim, out_dtype, acc_dtype, pf=0, aux=None):
    """Reduce ``x`` over ``dims`` (sorted) with ``REDUCTIONS[name]``; ``pf`` and ``aux`` as
    the module doc says."""
    ex = (pf, aux)
    st, q = backend.state_queue(x.device)
    shape, stride, offset = layout_of(x)
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape)) if keepdim else \
        tuple(s for d, s in enumerate(shape) if d not in dims)
    out = backend.new_tensor(st, out_shape, out_dtype, x.device)
    M = math.prod(s for d, s in enumerate(shape) if d not in dims)
    R = math.prod(shape[d] for d in dims)
    if M == 0:
        return out
    kr, rr, mbuf = reduction_meta(st, shape, stride, offset, tuple(dims))
    ls = work_group_size(st)
    if M >= R or ls == 1:
        return _launch(st, q, name, x.dtype, acc_dtype, out_dtype, kr, rr, "item", 1, out, x,
                       mbuf, M, R, 1, R, True, True, ex=ex)
    # few outputs, long reductions: split each into G chunks so every compute unit has work
    G = max(1, min(-(-R // (ls * 8)), -(-st.compute_units * 4 // M)))
    chunk = -(-R // G)
    if G == 1:
        return _launch(st, q, name, x.dtype, acc_dtype, out_dtype, kr, rr, "wg", ls, out, x,
                       mbuf, M, R, 1, chunk, True, True, ex=ex)
    part = backend.new_tensor(st, (M, G), acc_dtype, x.device)
    _launch(st, q, name, x.dtype, acc_dtype, acc_dtype, kr, rr, "wg", ls, part, x, mbuf, M, R,
            G, chunk, True, False, count=R, ex=ex)
    kr2, rr2, mbuf2 = reduction_meta(st, (M, G), (G, 1), 0, (1,))
    mode = "item" if M >= G else "wg"
    return _launch(st, q, REDUCTIONS[name].second, acc_dtype, acc_dtype, out_dtype, kr2, rr2,
                   mode, ls if mode == "wg" else 1, out, part, mbuf2, M, G, 1, G, False, True,
                   count=R, ex=ex)


def _launch(st, q, name, in_dt, at, out_dt, kr, rr, mode, ls, out, x, mbuf, M, R, G, chunk,
            first, last, count=None, ex=(0, None)):
    key = ReductionKey(name, in_dt, at, out_dt, kr, rr, mode, ls, first, last)
    knl = _kernel(st, key)
    gsize, lsize = launch_sizes(st, mode, M, G, ls)
    with st.launch_lock:
        st.last[q] = knl(q, gsize, lsize, data_of(out), data_of(x), mbuf, M, R, G,
                         chunk, R if count is None else count,
                         cltypes.pack_scalar(ex[0], at),
                         None if ex[1] is None else data_of(ex[1]))
    return out


def _accumulation(dt):
    return D.float32 if dt in (D.float16, D.bfloat16) else dt


def accumulate(be, name, x, dim, keepdim, dtype):
    """sum, prod, nansum, mean: into ``dtype``, accumulated in float32 for the half dtypes."""
    return reduce(be, name, x, dim, keepdim, dtype, _accumulation(dtype))


def extreme(be, name, x, dim, keepdim):
    """amax, amin."""
    return reduce(be, name, x, dim, keepdim, x.dtype, x.dtype)


def logical(be, name, x, dim, keepdim, dtype):
    """all, any."""
    return reduce(be, name, x, dim, keepdim, dtype, D.bool_)


def var(be, x, dim, correction, keepdim):
    at = _accumulation(x.dtype)
    n = math.prod(shape_of(x)[d] for d in dim)
    means = reduce(be, "mean", x, dim, False, at, at)  # one per output, C order
    return reduce(be, "var", x, dim, keepdim, x.dtype, at, max(0.0, n - correction), means)


_NORMS = {math.inf: "norm_inf", -math.inf: "norm_ninf", 0.0: "norm0", 1.0: "norm1", 2.0: "norm2"}


def vector_norm(be, x, ord, dim, keepdim):
    return reduce(be, _NORMS.get(ord, "normp"), x, dim, keepdim, x.dtype,
                  _accumulation(x.dtype), ord)


TABLE = {"var": var, "vector_norm": vector_norm}


def register(backend):
    for name in ("sum", "prod", "nansum", "mean"):
        bind_with(backend, name, accumulate, name)
    for name in ("amax", "amin"):
        bind_with(backend, name, extreme, name)
    for name in ("all", "any"):
        bind_with(backend, name, logical, name)
    bind(backend, TABLE)
