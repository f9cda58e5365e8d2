"""Kernels for ``ember.ops.spatial`` on array-module backends: im2col/col2im as strided windows
of the padded image (one copy; col2im one strided add per kernel offset) and the pixel
shuffles as one transposing copy."""
from __future__ import annotations

from .binding import bind


def _windows(be, a, kernel_size, dilation, stride, oh, ow):
    """(N, C, kh, kw, oh, ow) view of the padded image ``a``."""
    (kh, kw), (dh, dw), (sh, sw) = kernel_size, dilation, stride
    n, c = a.shape[:2]
    s0, s1, s2, s3 = a.strides
    return be.xp.lib.stride_tricks.as_strided(
        a, (n, c, kh, kw, oh, ow), (s0, s1, dh * s2, dw * s3, sh * s2, sw * s3))


def _out_blocks(shape, kernel_size, dilation, padding, stride):
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = shape, kernel_size, dilation, padding, stride
    return ((h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1)


def im2col(be, x, kernel_size, dilation, padding, stride):
    xp = be.xp
    a = be.native(x)
    if a.ndim == 3:
        return be.wrap(be.native(im2col(be, be.wrap(a[None], x.device), kernel_size, dilation,
                                        padding, stride))[0], x.device)
    n, c, h, w = a.shape
    ph, pw = padding
    oh, ow = _out_blocks((h, w), kernel_size, dilation, padding, stride)
    if ph or pw:
        p = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=a.dtype)
        p[:, :, ph:ph + h, pw:pw + w] = a
        a = p
    kh, kw = kernel_size
    cols = _windows(be, a, kernel_size, dilation, stride, oh, ow)
    return be.wrap(xp.ascontiguousarray(cols).reshape(n, c * kh * kw, oh * ow), x.device)


def col2im(be, cols, output_size, kernel_size, dilation, padding, stride):
    xp = be.xp
    a = be.native(cols)
    if a.ndim == 2:
        return be.wrap(be.native(col2im(be, be.wrap(a[None], cols.device), output_size,
                                        kernel_size, dilation, padding, stride))[0], cols.device)
    n, ck, _ = a.shape
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (output_size, kernel_size, dilation,
                                                       padding, stride)
    c = ck // (kh * kw)
    oh, ow = _out_blocks((h, w), kernel_size, dilation, padding, stride)
    blocks = a.reshape(n, c, kh, kw, oh, ow)
    out = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=a.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                j * dw:j * dw + sw * (ow - 1) + 1:sw] += blocks[:, :, i, j]
    return be.wrap(xp.ascontiguousarray(out[:, :, ph:ph + h, pw:pw + w]), cols.device)


def pixel_shuffle(be, x, r):
    a = be.native(x)
    *b, c, h, w = a.shape
    oc, nb = c // (r * r), len(b)
    t = a.reshape(*b, oc, r, r, h, w).transpose(
        *range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return be.wrap(be.xp.ascontiguousarray(t).reshape(*b, oc, h * r, w * r), x.device)


def pixel_unshuffle(be, x, r):
    a = be.native(x)
    *b, c, h, w = a.shape
    oh, ow, nb = h // r, w // r, len(b)
    t = a.reshape(*b, c, oh, r, ow, r).transpose(
        *range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return be.wrap(be.xp.ascontiguousarray(t).reshape(*b, c * r * r, oh, ow), x.device)


TABLE = {"im2col": im2col, "col2im": col2im, "pixel_shuffle": pixel_shuffle,
         "pixel_unshuffle": pixel_unshuffle}


def register(backend) -> None:
    bind(backend, TABLE)
