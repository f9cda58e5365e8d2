"""Copy and conversion kernels (``ember.ops.conversion``): ``_to_copy`` and ``copy_``."""
from __future__ import annotations

from ember.kit.binding import bind
from ember.runtime import shape_of

from . import transfer


def to_copy(be, x, dtype):
    st, q = be.state_queue(x.device)
    return transfer.copy_into(be, st, q, be.new_tensor(st, shape_of(x), dtype, x.device), x)


def copy_(be, dst, src):
    return transfer.copy_(be, dst, src)


TABLE = {"_to_copy": to_copy, "copy_": copy_}


def register(backend):
    bind(backend, TABLE)
