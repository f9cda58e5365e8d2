"""Shape kernels (``ember.ops.shape``): cat, flip, roll, tile, tril, triu, plus ``fill_``.

None of these needs a kernel of its own: each is a strided copy (``transfer.copy_into``, the
elementwise template's ``COPY`` body) between layouts made here. The template's index math
takes any int64 strides, so

* ``flip`` copies from a view of the input with negated strides (the offset moved to the last
  element of each flipped dim);
* ``tile`` copies a broadcast view of the input, dims split as (reps, size), into the output
  seen with the same split (dim ``d`` of size ``r*n`` and stride ``s`` is ``(r, n)`` with
  strides ``(n*s, s)``);
* ``roll`` is 2**k block copies for k rolled dims (each dim: the last ``shift`` elements go
  first);
* ``cat`` copies each input into its slice of the output, converting dtypes on the way;
* ``tril``/``triu`` and ``fill_`` are elementwise bodies.

These internal views exist only for the launch; they never reach the user.
"""
from __future__ import annotations

import itertools

from ember.kit.binding import bind, bind_with
from ember.runtime import dtypes as D
from ember.runtime import layout_of, shape_of, storage_of, strides_of, tensor_constructor

from . import transfer
from .codegen import Body, run
from .ops_factories import FULL, fill_argument

# ``i`` is the output's C-order linear index; p0 = columns, p1 = rows, p2 = diagonal
_TRI = "const long col = i % p0, row = (i / p0) % p1; "
TRIL = Body("tril", _TRI + "r = (col - row <= p2) ? x0 : (CT)0;", kinds="fib")
TRIU = Body("triu", _TRI + "r = (col - row >= p2) ? x0 : (CT)0;", kinds="fib")


_construct = tensor_constructor()  # launch-time views: no checks on this path


def view(t, shape, stride, offset):
    """A view of ``t``'s storage for one launch (any strides, negative ones included)."""
    return _construct(storage_of(t), tuple(shape), tuple(stride), offset, t.dtype, t.device,
                      None)


def cat(be, tensors, dim, dtype):
    ref = tensors[0]
    st, q = be.state_queue(ref.device)
    shape = list(shape_of(ref))
    shape[dim] = sum(shape_of(t)[dim] for t in tensors)
    out = be.new_tensor(st, shape, dtype, ref.device)
    out_strides = strides_of(out)
    start = 0
    for t in tensors:
        t_shape = shape_of(t)
        n = t_shape[dim]
        if n and t.numel():
            part = view(out, t_shape, out_strides, start * out_strides[dim])
            transfer.copy_into(be, st, q, part, t)
        start += n
    return out


def flip(be, x, dims):
    st, q = be.state_queue(x.device)
    shape, stride, offset = layout_of(x)
    out = be.new_tensor(st, shape, x.dtype, x.device)
    stride = list(stride)
    for d in set(dims):
        if shape[d] > 1:
            offset += (shape[d] - 1) * stride[d]
            stride[d] = -stride[d]
    return transfer.copy_into(be, st, q, out, view(x, shape, stride, offset))


def roll(be, x, shifts, dims):
    st, q = be.state_queue(x.device)
    x_shape, x_strides, x_offset = layout_of(x)
    out = be.new_tensor(st, x_shape, x.dtype, x.device)
    if out.numel() == 0:
        return out
    out_strides = strides_of(out)
    # per rolled dim: (size, shift mod size); both blocks of each dim, all combinations
    amount = {}
    for s, d in zip(shifts, dims):
        amount[d] = amount.get(d, 0) + s  # repeated dims add up, as in PyTorch
    plan = [(d, s % x_shape[d]) for d, s in amount.items()]
    for blocks in itertools.product((0, 1), repeat=len(plan)):
        shape, src_off, dst_off = list(x_shape), x_offset, 0
        for (d, s), b in zip(plan, blocks):
            n = x_shape[d]
            # block 0: source [n - s, n) -> dest [0, s); block 1: [0, n - s) -> [s, n)
            length = s if b == 0 else n - s
            shape[d] = length
            if b == 0:
                src_off += (n - s) * x_strides[d]
            else:
                dst_off += s * out_strides[d]
        if all(shape):
            transfer.copy_into(be, st, q, view(out, shape, out_strides, dst_off),
                               view(x, shape, x_strides, src_off))
    return out


def tile(be, x, reps):
    st, q = be.state_queue(x.device)
    x_shape, x_strides, x_offset = layout_of(x)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + tuple(reps)
    xs = (1,) * (nd - x.ndim) + x_shape
    xt = (0,) * (nd - x.ndim) + x_strides
    out = be.new_tensor(st, [r * n for r, n in zip(reps, xs)], x.dtype, x.device)
    if out.numel() == 0:
        return out
    split, ost, ist = [], [], []
    for r, n, s_out, s_in in zip(reps, xs, strides_of(out), xt):
        split += [r, n]
        ost += [n * s_out, s_out]
        ist += [0, s_in]
    transfer.copy_into(be, st, q, view(out, split, ost, 0), view(x, split, ist, x_offset))
    return out


def triangle(be, body, x, k):
    """tril/triu: ``body`` keeps the elements on its side of diagonal ``k``."""
    st, q = be.state_queue(x.device)
    shape = shape_of(x)
    out = be.new_tensor(st, shape, x.dtype, x.device)
    dt = x.dtype
    return run(st, q, body, out, (x,), (dt,), dt, dt,
               params=((shape[-1], D.int64), (shape[-2], D.int64), (k, D.int64)))


def fill_(be, self, value):
    st, q = be.state_queue(self.device)
    v, ct = fill_argument(value, self.dtype, st.wide)
    run(st, q, FULL, self, (), (), ct, ct, params=((v, ct),))
    return self


TABLE = {"cat": cat, "flip": flip, "roll": roll, "tile": tile, "fill_": fill_}


def register(backend):
    bind(backend, TABLE)
    bind_with(backend, "tril", triangle, TRIL)
    bind_with(backend, "triu", triangle, TRIU)
