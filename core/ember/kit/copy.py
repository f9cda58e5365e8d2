"""Copy and conversion kernels for array-module backends."""
from __future__ import annotations

from .binding import bind


def _real_for(a, kind):
    """A complex source as the values a real/bool destination takes: its real part, or ``!= 0``
    for bool (PyTorch: a complex number is true when either part is nonzero)."""
    return (a != 0) if kind == "b" else a.real


def _cast(xp, a, to):
    return xp.array(a, dtype=to, order="C", copy=True)


def to_copy(be, x, dtype):
    a = be.native(x)
    to = dtype.np
    if a.dtype.kind == "c" and to.kind != "c":
        a = _real_for(a, to.kind)
    if a.dtype.kind in "fc" and a.dtype != to:
        # nan/inf/out-of-range floats cast quietly, as PyTorch does (the values are the
        # platform's conversion results)
        return be.wrap(be.ieee(_cast, be.xp, a, to), x.device)
    return be.wrap(_cast(be.xp, a, to), x.device)


def copy_(be, dst, src):
    s = be.native(src)
    if s.dtype.kind in "fc" and s.dtype != dst.dtype.np:
        d = be.native(dst)
        if s.dtype.kind == "c" and d.dtype.kind != "c":
            s = _real_for(s, d.dtype.kind)
        be.ieee(be.xp.copyto, d, s, "unsafe")
        return dst
    return be.copy_(dst, src)


TABLE = {"_to_copy": to_copy, "copy_": copy_}


def register(backend) -> None:
    bind(backend, TABLE)
