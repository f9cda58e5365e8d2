"""FFT kernels for array-module backends: the backend's ``fft_module`` (scipy.fft, pocketfft,
for numpy; cupyx.scipy.fft for cupy) with ``workers`` = ``ember.get_num_threads()``.

The ops' ``normalization`` (0 none, 1 by 1/sqrt(n), 2 by 1/n) maps onto scipy's ``norm``,
which names the direction that is scaled, so the scaling is fused into the transform.
"""
from __future__ import annotations

from .._threads import get_num_threads
from .binding import bind

# (normalization, forward) -> scipy's norm
_NORM = {(0, True): "backward", (1, True): "ortho", (2, True): "forward",
         (0, False): "forward", (1, False): "ortho", (2, False): "backward"}


def _workers(be):
    # cupyx's functions take no workers argument: only host modules get one
    return {"workers": get_num_threads()} if be.fft_workers else {}


def _copy(be, t, dtype):
    return be.wrap(be.xp.array(be.native(t), dtype=dtype.np, order="C"), t.device)


def fft_c2c(be, self, dim, normalization, forward):
    if not dim or self.numel() == 0:
        return _copy(be, self, self.dtype)
    f = be.fft_module
    x = be.fft_operand(be.native(self))
    fn = f.fftn if forward else f.ifftn
    r = fn(x, axes=dim, norm=_NORM[(normalization, forward)], **_workers(be))
    return be.wrap(be.xp.asarray(r, dtype=x.dtype), self.device)


def fft_r2c(be, self, dim, normalization, onesided):
    out_dtype = self.dtype.to_complex()
    if not dim or self.numel() == 0:
        if not dim:
            return _copy(be, self, out_dtype)
        shape = list(self._shape)
        if onesided:
            shape[dim[-1]] = shape[dim[-1]] // 2 + 1
        return be.wrap(be.xp.zeros(shape, dtype=out_dtype.np), self.device)
    x = be.fft_operand(be.native(self))
    r = be.fft_module.rfftn(x, axes=dim, norm=_NORM[(normalization, True)], **_workers(be))
    if not onesided:
        r = _fill_conjugate_half(be.xp, r, dim, self._shape[dim[-1]])
    return be.wrap(be.xp.asarray(r, dtype=out_dtype.np), self.device)


def _fill_conjugate_half(xp, half, dims, n):
    """The full spectrum of a real signal from its onesided half (as PyTorch does, so DC and
    Nyquist bins keep the +0 imaginary part the real transform gives them):
    X[k] = conj(X[-k mod n]) over every transformed dim."""
    last = dims[-1]
    h = half.shape[last]
    if h == n:
        return half
    tail = xp.take(half, xp.arange(n - h, 0, -1), axis=last)
    for d in dims[:-1]:
        m = tail.shape[d]
        tail = xp.take(tail, xp.asarray([0] + list(range(m - 1, 0, -1))), axis=d)
    return xp.concatenate([half, xp.conj(tail)], axis=last)


def fft_c2r(be, self, dim, normalization, last_dim_size):
    out_dtype = self.dtype.to_real()
    shape = [self._shape[d] for d in dim[:-1]] + [last_dim_size]
    if self.numel() == 0:
        full = list(self._shape)
        full[dim[-1]] = last_dim_size
        return be.wrap(be.xp.zeros(full, dtype=out_dtype.np), self.device)
    f = be.fft_module
    x = be.fft_operand(be.native(self))
    r = f.irfftn(x, s=shape, axes=dim, norm=_NORM[(normalization, False)], **_workers(be))
    return be.wrap(be.xp.asarray(r, dtype=out_dtype.np), self.device)


TABLE = {"_fft_c2c": fft_c2c, "_fft_r2c": fft_r2c, "_fft_c2r": fft_c2r}


def register(backend) -> None:
    bind(backend, TABLE)
