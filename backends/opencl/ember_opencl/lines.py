"""Kernels that walk *lines*: all elements along one dim ``dim`` for each position of the others
(scans, softmax, sort, mode). Shared layout metadata and C snippets; programs are built by
``progs.program``.

A line op sees its tensors (input, outputs) as ``M`` lines of ``N`` elements. Line ``m`` (over
the kept dims, C order) starts at ``base_t`` and steps by ``ls_t`` in tensor ``t``; the kept
dims are collapsed (size-1 dims dropped, dims contiguous in every tensor merged) and passed in
an int64 metadata buffer, so one compiled kernel serves every shape of the same collapsed rank:

    meta = [kept sizes (kr)] + for each tensor: [offset, line stride, kept strides (kr)]
"""
from __future__ import annotations

import math

import numpy as np

from ember.runtime import dtypes as D
from ember.runtime import layout_of

from . import cltypes, progs
from .codegen import collapse, remember


def _line_layout(layout, dim):
    """(shape, stride, dim) of a layout, a 0-d tensor seen as one line of one element."""
    shape, stride, _ = layout
    if not shape:
        return (1,), (1,), 0
    return shape, stride, dim


def meta(state, dim, layouts):
    """(kr, M, N, buffer) of tensors seen as lines along ``dim``, given their layouts
    (``layout_of(t)``: shape, strides, offset); the last one (the input) gives the shape, the
    others may have size 1 along ``dim`` (one element per line)."""
    import pyopencl as cl
    key = ("lines", dim, *layouts)
    ent = state.meta.get(key)
    if ent is None:
        shape, _, d = _line_layout(layouts[-1], dim)
        kept = [k for k in range(len(shape)) if k != d]
        ksh = tuple(shape[k] for k in kept)
        lays = [_line_layout(lay, dim) for lay in layouts]
        sizes, strides = collapse(ksh, [(ksh, tuple(st[k] for k in kept)) for _, st, _ in lays])
        data = list(sizes)
        for (_, _, offset), (_, st, _), kt in zip(layouts, lays, strides):
            data += [offset, st[d]] + kt
        buf = cl.Buffer(state.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                        hostbuf=np.array(data or [0], dtype=np.int64))
        ent = remember(state, key, (len(sizes), math.prod(ksh), shape[d], buf))
    return ent


def c_bases(kr, nt, m="m"):
    """C statements setting ``b{t}`` (start of line ``m`` in tensor t) and ``l{t}`` (its
    stride along the line) from ``meta``."""
    L = ["long q_ = " + m + ", c_;"]
    for t in range(nt):
        o = kr + t * (kr + 2)
        L.append(f"long b{t} = meta[{o}]; const long l{t} = meta[{o + 1}];")
    for d in range(kr - 1, -1, -1):
        L.append(f"c_ = q_ % meta[{d}]; q_ /= meta[{d}];")
        L.extend(f"b{t} += c_ * meta[{kr + t * (kr + 2) + 2 + d}];" for t in range(nt))
    return "\n  ".join(L)


def line_program(state, family, x, out, dim, dtype, source, names):
    """(kernels, M, N, meta buffer, local size) for kernels ``names`` that read each line of
    ``x`` and write the same line of ``out`` (of ``dtype``): one program per key
    ``(family, input dtype, accumulate dtype, output dtype, collapsed rank, local size)``,
    its source ``source(state, key)``; each kernel takes (out, in, meta, M, N)."""
    at = D.float32 if dtype in (D.float16, D.bfloat16) else dtype
    kr, M, N, mbuf = meta(state, dim, (layout_of(out), layout_of(x)))
    ls = local_size(state)
    key = (family, x.dtype, at, dtype, kr, ls)
    kernels = progs.program(state, key, lambda: source(state, key),
                            {n: [None, None, None, np.int64, np.int64] for n in names})
    return kernels, M, N, mbuf, ls


def launch_sizes(state, M, ls, per_group):
    """(global, local) sizes: a work-group of ``ls`` per line, or a work-item per line."""
    if per_group:
        return (M * ls,), (ls,)
    return (round_up(M, state.local_size),), state.local_sizes


def local_size(state, cap=256):
    ls = 1
    while ls * 2 <= min(cap, state.max_wg):
        ls *= 2
    return ls


def header(state, **types):
    """Pragmas and typedefs ``name -> dtype`` shared by the line kernels."""
    L = ["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(state.dtypes)]
    L += [f"typedef {cltypes.CTYPE[d]} {n};" for n, d in types.items()]
    return "\n".join(L)


def launch(state, queue, knl, gsize, lsize, *args):
    with state.launch_lock:  # a kernel's arguments are shared state: set, then enqueue
        state.last[queue] = knl(queue, gsize, lsize, *args)


def round_up(n, k):
    return max(k, -(-n // k) * k)
