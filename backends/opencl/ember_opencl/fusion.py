"""The OpenCL backend's lowering for ``ember.compile``: a fused pointwise group becomes one
OpenCL C kernel, a work-item per output element.

Operands are read through the elementwise template's layout metadata (``progs.layout``: the
collapsed sizes, then each operand's offset and strides), so broadcast and strided inputs need
no copies; outputs are fresh contiguous tensors. The statements are the ops' pointwise rules
rendered by ``codegen.Dialect`` in OpenCL C — the rendering the eager bodies made from those
rules get — whose math functions are overloaded by type (``sin`` on a float is the float sine),
with ``FP_CONTRACT OFF`` as in every ember kernel so results round like the eager kernels'. One
program per kernel and device, cached."""
from __future__ import annotations

import math

import numpy as np

from ember.compiler.pointwise import C_TYPES, reduction_loop
from ember.runtime import dtypes as D
from ember.runtime import data_of, offset_of, shape_of, strides_of

from . import cltypes, progs
from .codegen import Dialect


def _source(state, kernel, flat):
    """``flat``: every input is contiguous in the output's shape, read at ``offset + i`` (the
    compiler then sees unit strides); otherwise through the layout metadata."""
    n_in = len(kernel.input_dtypes)
    params = [f"__global {cltypes.CTYPE[d]}* out{k}" for k, d in enumerate(kernel.output_dtypes)]
    params += [f"__global const {cltypes.CTYPE[d]}* in{k}"
               for k, d in enumerate(kernel.input_dtypes)]
    params += ["__global const long* m", "const int R", "const long n"]
    params += [f"const long o{k}" for k in range(n_in)]
    lines = [progs.header(state), progs.C_ADDR,
             f"__kernel void fused({', '.join(params)}) {{",
             "  const long i = get_global_id(0);",
             "  if (i >= n) return;"]
    for k, d in enumerate(kernel.input_dtypes):
        at = f"o{k} + i" if flat else f"ADDR(m, R, {k}, i)"
        lines.append(f"  const {C_TYPES[d]} x{k} = in{k}[{at}];")

    def var(local):
        return f"x{local.index}" if local.kind == "in" else f"t{local.index}"
    lines += ["  " + s for s in kernel.render(lambda dt: Dialect(dt, var), var)]
    for k, j in enumerate(kernel.outputs):
        lines.append(f"  out{k}[i] = t{j};")
    lines.append("}")
    return "\n".join(lines)


class PointwiseRunner:
    def __init__(self, backend, kernel):
        self.backend = backend
        self.kernel = kernel

    def __call__(self, inputs):
        be = self.backend
        device = inputs[0].device
        st, q = be.state_queue(device)
        shape = tuple(np.broadcast_shapes(*[tuple(shape_of(t)) for t in inputs]))
        outs = [be.new_tensor(st, shape, d, device) for d in self.kernel.output_dtypes]
        n = math.prod(shape)
        if n:
            flat = all(shape_of(t) == shape and t.is_contiguous() for t in inputs)
            kernel = progs.program(
                st, ("fused", self.kernel.key, flat), lambda: _source(st, self.kernel, flat),
                {"fused": [None] * (len(outs) + len(inputs) + 1) + [np.int32, np.int64] +
                 [np.int64] * len(inputs)}
            )["fused"]
            if flat:
                rank, meta = 1, st.dummy_meta if hasattr(st, "dummy_meta") else _dummy(st)
            else:
                rank, meta = progs.layout(st, shape if shape else (1,), inputs)
            progs.launch(st, q, kernel, n, *[data_of(o) for o in outs],
                         *[data_of(t) for t in inputs], meta, rank, n,
                         *[offset_of(t) for t in inputs])
        return outs


def _dummy(state):
    state.dummy_meta = progs.buffer_of(state, [0])
    return state.dummy_meta


def compile_pointwise(backend, kernel):
    """``Backend.compile_pointwise`` for OpenCL: float64 groups need the device's fp64."""
    if any(d is D.float64 for d in kernel.input_dtypes + kernel.output_dtypes):
        st = backend._devices.state(0)
        if not st.fp64:
            return None
    if kernel.reduction is not None:
        return ReductionRunner(backend, kernel)
    return PointwiseRunner(backend, kernel)


# -- pointwise chains ending in a reduction -----------------------------------------------------
_INIT = {"sum": "0", "mean": "0", "amax": "-INFINITY", "amin": "INFINITY"}


def _reduce_source(state, kernel):
    op, _, _ = kernel.reduction
    n_in = len(kernel.input_dtypes)
    out_t = C_TYPES[kernel.output_dtypes[0]]
    acc_t = "double" if (op in ("sum", "mean") and state.fp64) else out_t
    params = [f"__global {cltypes.CTYPE[kernel.output_dtypes[0]]}* out0"]
    params += [f"__global const {cltypes.CTYPE[d]}* in{k}"
               for k, d in enumerate(kernel.input_dtypes)]
    params += ["__global const long* m", "const int nk", "const int nr", "const long rcount",
               "const long n"] + [f"const long o{k}" for k in range(n_in)]
    lines = [progs.header(state), f"__kernel void fused({', '.join(params)}) {{",
             "  const long o = get_global_id(0);", "  if (o >= n) return;",
             "  __global const long* kshape = m;", "  __global const long* kstr = m + nk;",
             f"  __global const long* rshape = m + nk + {n_in} * nk;",
             "  __global const long* rstr = rshape + nr;"]

    def var(local):
        return f"x{local.index}" if local.kind == "in" else f"t{local.index}"
    body = kernel.render(lambda dt: Dialect(dt, var), var)
    lines += ["  " + s for s in reduction_loop(kernel, acc_t, _INIT[op],
                                               [f"o{k}" for k in range(n_in)], body, "long")]
    final = "acc / rcount" if op == "mean" else "acc"
    lines += [f"  out0[o] = ({out_t})({final});", "}"]
    return "\n".join(lines)


class ReductionRunner:
    def __init__(self, backend, kernel):
        self.backend, self.kernel = backend, kernel

    def __call__(self, inputs):
        be = self.backend
        op, dims, keepdim = self.kernel.reduction
        device = inputs[0].device
        st, q = be.state_queue(device)
        shape = tuple(np.broadcast_shapes(*[tuple(shape_of(t)) for t in inputs]))
        kept = [d for d in range(len(shape)) if d not in dims]
        out_shape = tuple(1 if d in dims else n for d, n in enumerate(shape)) if keepdim \
            else tuple(shape[d] for d in kept)
        rcount = math.prod(shape[d] for d in dims)
        n_out = math.prod(shape[d] for d in kept)
        if rcount == 0 or n_out == 0:
            if op in ("amax", "amin") and n_out:
                raise RuntimeError(f"{op}(): Expected reduction dim to have non-zero size "
                                   f"(fused {op} over an empty dimension of {list(shape)})")
            import ember
            fill = float("nan") if op == "mean" else 0.0
            return [ember.full(out_shape, fill, dtype=self.kernel.output_dtypes[0],
                               device=device)]
        out = be.new_tensor(st, out_shape, self.kernel.output_dtypes[0], device)
        strides = [_broadcast_strides(t, shape) for t in inputs]
        meta = [shape[d] for d in kept] + [s[d] for s in strides for d in kept] + \
            [shape[d] for d in dims] + [s[d] for s in strides for d in dims]
        kernel = progs.program(
            st, ("fused_reduce", self.kernel.key), lambda: _reduce_source(st, self.kernel),
            {"fused": [None] * (2 + len(inputs)) + [np.int32, np.int32, np.int64, np.int64] +
             [np.int64] * len(inputs)})["fused"]
        progs.launch(st, q, kernel, n_out, data_of(out),
                     *[data_of(t) for t in inputs], progs.buffer_of(st, meta),
                     len(kept), len(dims), rcount, n_out, *[offset_of(t) for t in inputs])
        return [out]


def _broadcast_strides(t, shape):
    pad = len(shape) - len(shape_of(t))
    out = [0] * pad
    for d, (n, s) in enumerate(zip(shape_of(t), strides_of(t))):
        out.append(0 if n == 1 and shape[pad + d] != 1 else s)
    return out
