"""Helpers for the hand-written programs (kernels whose work does not fit the elementwise
template: gathers, scatters, compaction, sampling, line kernels, linear algebra, attention).

* ``program(state, key, make_source, arg_types)`` builds a program once per key and caches its
  kernels;
* ``layout(state, shape, tensors)`` is the elementwise template's int64 metadata (collapsed
  sizes, then per tensor its offset and strides) and ``C_ADDR`` the matching address
  computation, for kernels that read strided operands at a runtime rank;
* ``launch`` enqueues under the device's launch lock and notes the event for ``Stream.query``.
"""
from __future__ import annotations

import numpy as np

from ember.runtime import layout_of

from . import cltypes, codegen

C_ADDR = r"""
/* address of element i (C order over the collapsed sizes) of operand t, in elements */
inline long ADDR(__global const long* m, int R, int t, long i) {
  const int b = R + t * (R + 1);
  long a = m[b], q = i;
  for (int d = R - 1; d >= 0; d--) { const long n = m[d]; a += (q % n) * m[b + 1 + d]; q /= n; }
  return a;
}
"""


def header(state) -> str:
    return "\n".join(["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(state.dtypes)])


def program(state, key, make_source, arg_types, what=None):
    """{kernel name: kernel} of the program ``key``; ``make_source()`` gives its source,
    ``arg_types`` maps kernel names to their scalar argument dtypes (None for buffers);
    ``what`` names the program in a build error (default: the program and its key)."""
    kernels = state.kernels.get(key)
    if kernels is None:
        prg = codegen.compile_program(state, make_source(), what or f"the program {key!r}")
        kernels = {}
        for name, types in arg_types.items():
            k = getattr(prg, name)
            k.set_scalar_arg_dtypes(types)
            kernels[name] = k
        state.kernels[key] = kernels
    return kernels


def layout(state, shape, tensors):
    """(rank, metadata buffer) describing ``tensors`` broadcast over ``shape``."""
    lkey = (tuple(shape), *[layout_of(t) for t in tensors])
    ent = state.meta.get(lkey)
    if ent is None:
        ent = codegen.metadata(state, lkey)
    rank, buf = ent
    # the elementwise template's contiguous marker; these kernels read the strides themselves
    return (1 if rank == codegen.UNIT else rank), buf


def buffer_of(state, values, dtype=np.int64):
    """A small read-only device buffer holding ``values`` (queued copy, no wait)."""
    import pyopencl as cl
    arr = np.ascontiguousarray(np.asarray(values, dtype=dtype))
    if arr.size == 0:
        arr = np.zeros(1, dtype=dtype)
    return cl.Buffer(state.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=arr)


def items(state, n):
    """Global size for ``n`` work-items (whole work-groups of the device's local size)."""
    ls = state.local_size
    return max(ls, (n + ls - 1) // ls * ls)


def launch(state, queue, kernel, n, *args):
    """Run ``kernel`` over ``n`` work-items (each checks ``get_global_id(0) < n`` itself)."""
    with state.launch_lock:
        state.last[queue] = kernel(queue, (items(state, n),), state.local_sizes, *args)
