"""The OpenCL backend's lowering for ``ember.compile``: a fused pointwise group becomes one
OpenCL C kernel, a work-item per output element.

Operands are read through the elementwise template's layout metadata (``progs.layout``: the
collapsed sizes, then each operand's offset and strides), so broadcast and strided inputs need
no copies; outputs are fresh contiguous tensors. The statements come from
``ember.compiler.pointwise`` rendered in OpenCL C, whose math functions are overloaded by type
(``sin`` on a float is the float sine), with ``FP_CONTRACT OFF`` as in every ember kernel so
results round like the eager kernels'. One program per kernel and device, cached."""
from __future__ import annotations

import math

import numpy as np

from ember.compiler.pointwise import C_TYPES, Dialect
from ember.runtime import dtypes as D

from . import cltypes, progs


def _source(state, kernel, flat):
    """``flat``: every input is contiguous in the output's shape, read at ``offset + i`` (the
    compiler then sees unit strides); otherwise through the layout metadata."""
    n_in, n_out = len(kernel.input_dtypes), len(kernel.outputs)
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
        st, q = be._sq(device)
        shape = tuple(np.broadcast_shapes(*[tuple(t._shape) for t in inputs]))
        outs = [be._new(st, shape, d, device) for d in self.kernel.output_dtypes]
        n = math.prod(shape)
        if n:
            flat = all(t._shape == shape and t.is_contiguous() for t in inputs)
            kernel = progs.program(
                st, ("fused", self.kernel.key, flat), lambda: _source(st, self.kernel, flat),
                {"fused": [None] * (len(outs) + len(inputs) + 1) + [np.int32, np.int64] +
                 [np.int64] * len(inputs)}
            )["fused"]
            if flat:
                rank, meta = 1, st.dummy_meta if hasattr(st, "dummy_meta") else _dummy(st)
            else:
                rank, meta = progs.layout(st, shape if shape else (1,), inputs)
            progs.launch(st, q, kernel, n, *[o._storage.data for o in outs],
                         *[t._storage.data for t in inputs], meta, rank, n,
                         *[t._offset for t in inputs])
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
    return PointwiseRunner(backend, kernel)
