"""Copy and conversion kernels for array-module backends."""
from __future__ import annotations


def register(backend):
    xp, native, wrap = backend.xp, backend.native, backend.wrap
    K = backend.kernels.register

    def to_copy(x, dtype):
        a = native(x)
        if a.dtype.kind == "c" and dtype.np.kind != "c":
            a = a.real
        return wrap(xp.array(a, dtype=dtype.np, order="C", copy=True), x.device)

    def copy_(dst, src):
        return backend.copy_(dst, src)

    K("_to_copy", to_copy)
    K("copy_", copy_)
