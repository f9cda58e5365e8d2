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

from ember.runtime import dtypes as D
from ember.runtime import tensor_constructor

from . import transfer
from .codegen import Body, run
from .ops_factories import FULL, _fill

# ``i`` is the output's C-order linear index; p0 = columns, p1 = rows, p2 = diagonal
_TRI = "const long col = i % p0, row = (i / p0) % p1; "
TRIL = Body("tril", _TRI + "r = (col - row <= p2) ? x0 : (CT)0;", kinds="fib")
TRIU = Body("triu", _TRI + "r = (col - row >= p2) ? x0 : (CT)0;", kinds="fib")


_new_tensor = tensor_constructor()  # launch-time views: no checks on this path


def view(t, shape, stride, offset):
    """A view of ``t``'s storage for one launch (any strides, negative ones included)."""
    return _new_tensor(t.untyped_storage(), tuple(shape), tuple(stride), offset, t.dtype,
                       t.device, None)


def register(backend):
    K = backend.kernels.register
    sq, new = backend._sq, backend._new

    def copy(st, q, dst, src):
        return transfer.copy_into(backend, st, q, dst, src)

    def cat(tensors, dim, dtype):
        ref = tensors[0]
        st, q = sq(ref.device)
        shape = list(ref._shape)
        shape[dim] = sum(t._shape[dim] for t in tensors)
        out = new(st, shape, dtype, ref.device)
        start = 0
        for t in tensors:
            n = t._shape[dim]
            if n and t.numel():
                part = view(out, t._shape, out._stride, start * out._stride[dim])
                copy(st, q, part, t)
            start += n
        return out

    def flip(x, dims):
        st, q = sq(x.device)
        out = new(st, x._shape, x.dtype, x.device)
        stride, offset = list(x._stride), x._offset
        for d in set(dims):
            if x._shape[d] > 1:
                offset += (x._shape[d] - 1) * stride[d]
                stride[d] = -stride[d]
        return copy(st, q, out, view(x, x._shape, stride, offset))

    def roll(x, shifts, dims):
        st, q = sq(x.device)
        out = new(st, x._shape, x.dtype, x.device)
        if out.numel() == 0:
            return out
        # per rolled dim: (size, shift mod size); both blocks of each dim, all combinations
        amount = {}
        for s, d in zip(shifts, dims):
            amount[d] = amount.get(d, 0) + s  # repeated dims add up, as in PyTorch
        plan = [(d, s % x._shape[d]) for d, s in amount.items()]
        for blocks in itertools.product((0, 1), repeat=len(plan)):
            shape, src_off, dst_off = list(x._shape), x._offset, 0
            for (d, s), b in zip(plan, blocks):
                n = x._shape[d]
                # block 0: source [n - s, n) -> dest [0, s); block 1: [0, n - s) -> [s, n)
                length = s if b == 0 else n - s
                shape[d] = length
                if b == 0:
                    src_off += (n - s) * x._stride[d]
                else:
                    dst_off += s * out._stride[d]
            if all(shape):
                copy(st, q, view(out, shape, out._stride, dst_off),
                     view(x, shape, x._stride, src_off))
        return out

    def tile(x, reps):
        st, q = sq(x.device)
        nd = max(len(reps), x.ndim)
        reps = (1,) * (nd - len(reps)) + tuple(reps)
        xs = (1,) * (nd - x.ndim) + x._shape
        xt = (0,) * (nd - x.ndim) + x._stride
        out = new(st, [r * n for r, n in zip(reps, xs)], x.dtype, x.device)
        if out.numel() == 0:
            return out
        split, ost, ist = [], [], []
        for r, n, s_out, s_in in zip(reps, xs, out._stride, xt):
            split += [r, n]
            ost += [n * s_out, s_out]
            ist += [0, s_in]
        copy(st, q, view(out, split, ost, 0), view(x, split, ist, x._offset))
        return out

    def tri(body):
        def kernel(x, k):
            st, q = sq(x.device)
            out = new(st, x._shape, x.dtype, x.device)
            rows, cols = x._shape[-2], x._shape[-1]
            dt = x.dtype
            return run(st, q, body, out, (x,), (dt,), dt, dt,
                       params=((cols, D.int64), (rows, D.int64), (k, D.int64)))
        return kernel

    def fill_(self, value):
        st, q = sq(self.device)
        v, ct = _fill(value, self.dtype, st.wide)
        run(st, q, FULL, self, (), (), ct, ct, params=((v, ct),))
        return self

    for name, fn in (("cat", cat), ("flip", flip), ("roll", roll), ("tile", tile),
                     ("tril", tri(TRIL)), ("triu", tri(TRIU)), ("fill_", fill_)):
        K(name, fn)
