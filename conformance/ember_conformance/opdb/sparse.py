"""Entries for sparse COO tensors (``ember.sparse``): products, coalescing and conversions,
each ending in a dense result so values compare with the CPU reference, and gradients reach
the values and the dense operand through the COO algorithms' dense ops."""
from __future__ import annotations

import ember

from . import FLOATS, OpInfo, SampleInput, make_tensor

# duplicate (0, 2) and unsorted columns: coalescing has work to do
_INDICES = [[0, 2, 1, 0, 3, 2], [2, 1, 0, 2, 3, 0]]


def _coo(values):
    idx = ember.tensor(_INDICES, dtype=ember.int64, device=values.device)
    return ember.sparse_coo_tensor(idx, values, (4, 5))


def _values_and_dense(dense_shape=(5, 3)):
    def samples(dtype):
        for i, layout in enumerate(("contiguous", "transposed")):
            yield SampleInput(f"{dtype} nnz=6 dense {layout}", lambda dev, i=i, lay=layout,
                              dt=dtype: ((make_tensor(90 + i, (6,), dt, dev),
                                          make_tensor(95 + i, dense_shape, dt, dev,
                                                      layout=lay)), {}))
    return samples


def _values():
    def samples(dtype):
        yield SampleInput(f"{dtype} nnz=6", lambda dev, dt=dtype: (
            (make_tensor(91, (6,), dt, dev),), {}))
    return samples


def _dense_with_zeros():
    def samples(dtype):
        def build(dev, dt=dtype):
            x = make_tensor(97, (4, 5), dt, dev)
            return (x * (x.abs() > 1).to(x.dtype),), {}
        yield SampleInput(f"{dtype}[4, 5] with zeros", build)
    return samples


OPS = [
    OpInfo("sparse.mm", lambda v, d: ember.sparse.mm(_coo(v), d), _values_and_dense(),
           FLOATS, covers=(), vmap=False),
    OpInfo("sparse @ dense vector", lambda v, d: _coo(v) @ d, _values_and_dense((5,)), FLOATS,
           covers=(), vmap=False),
    OpInfo("sparse.addmm", lambda v, d: ember.sparse.addmm(d[:4, :] * 0 + 1, _coo(v), d,
                                                           beta=0.5, alpha=2.0),
           _values_and_dense((5, 5)), FLOATS, covers=(), vmap=False),
    OpInfo("sparse coalesce to_dense", lambda v: _coo(v).coalesce().to_dense(), _values(),
           FLOATS, covers=(), vmap=False),
    OpInfo("sparse coalesce values", lambda v: _coo(v).coalesce().values(), _values(), FLOATS,
           covers=(), vmap=False),
    OpInfo("sparse add scale sum", lambda v: ((_coo(v) + _coo(v) * 2).to_dense(),
                                              ember.sparse.sum(_coo(v))), _values(), FLOATS,
           covers=(), vmap=False),
    # forward only: the gradient follows the stored pattern (zero at the zeros, as torch's),
    # which a finite difference at a zero entry changes
    OpInfo("to_sparse round trip", lambda x: x.to_sparse().to_dense() * 2 + 1,
           _dense_with_zeros(), FLOATS, covers=(), vmap=False, differentiable=False),
    OpInfo("sparse_mask", lambda x: x.sparse_mask(_coo(x.new_ones(6))).to_dense(),
           _dense_with_zeros(), FLOATS, covers=(), vmap=False),
]
