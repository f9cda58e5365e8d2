"""Copy and conversion kernels (``ember.ops.conversion``): ``_to_copy`` and ``copy_``."""
from __future__ import annotations

from . import transfer


def register(backend):
    K = backend.kernels.register
    sq, new = backend._sq, backend._new

    def to_copy(x, dtype):
        st, q = sq(x.device)
        return transfer.copy_into(backend, st, q, new(st, x._shape, dtype, x.device), x)

    K("_to_copy", to_copy)
    K("copy_", lambda dst, src: transfer.copy_(backend, dst, src))
