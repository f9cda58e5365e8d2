"""Copy and conversion kernels for array-module backends."""
from __future__ import annotations

from .array_backend import ieee_caller


def register(backend):
    xp, native, wrap = backend.xp, backend.native, backend.wrap
    K = backend.kernels.register
    ieee = ieee_caller(xp)

    def _real_for(a, kind):
        """A complex source as the values a real/bool destination takes: its real part, or
        ``!= 0`` for bool (PyTorch: a complex number is true when either part is nonzero)."""
        return (a != 0) if kind == "b" else a.real

    def to_copy(x, dtype):
        a = native(x)
        to = dtype.np
        if a.dtype.kind == "c" and to.kind != "c":
            a = _real_for(a, to.kind)
        if a.dtype.kind in "fc" and a.dtype != to:
            # nan/inf/out-of-range floats cast quietly, as PyTorch does (the values are the
            # platform's conversion results)
            return wrap(ieee(_cast, a, to), x.device)
        return wrap(xp.array(a, dtype=to, order="C", copy=True), x.device)

    def _cast(a, to):
        return xp.array(a, dtype=to, order="C", copy=True)

    def copy_(dst, src):
        s = native(src)
        if s.dtype.kind in "fc" and s.dtype != dst.dtype.np:
            d = native(dst)
            if s.dtype.kind == "c" and d.dtype.kind != "c":
                s = _real_for(s, d.dtype.kind)
            ieee(xp.copyto, d, s, "unsafe")
            return dst
        return backend.copy_(dst, src)

    K("_to_copy", to_copy)
    K("copy_", copy_)
