"""Spatial rearrangements: sliding blocks (``im2col``/``col2im``, behind ``F.unfold``/``F.fold``)
and sub-pixel shuffles (``pixel_shuffle``/``pixel_unshuffle``), each op the other's derivative.

Kernels (batched or unbatched operands, as PyTorch's ops take them):

* ``im2col(Tensor self, int[] kernel_size, int[] dilation, int[] padding, int[] stride)``:
  ([N,] C, H, W) -> ([N,] C*kh*kw, L), L = oh*ow sliding blocks, zeros outside the input;
* ``col2im(Tensor self, int[] output_size, int[] kernel_size, int[] dilation, int[] padding,
  int[] stride)``: ([N,] C*kh*kw, L) -> ([N,] C, H, W), the sum of every block element on
  a pixel (the adjoint of im2col);
* ``pixel_shuffle(Tensor self, int upscale_factor)``: (*, C*r*r, H, W) -> (*, C, H*r, W*r);
* ``pixel_unshuffle(Tensor self, int downscale_factor)``: the inverse permutation.

``channel_shuffle`` is a composite of views and one copy, as in PyTorch.
"""
from __future__ import annotations

from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from ._util import require_tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _pair(v, name, op):
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) != 2:
        raise RuntimeError(f"{op}: {name} must be an int or a pair of ints, got {list(v)}")
    return v


def blocks(op, spatial, kernel_size, dilation, padding, stride):
    """(oh, ow) sliding blocks of a (H, W) input; RuntimeError with torch's wording."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got kernel_height:"
                           f" {kh} kernel_width: {kw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride_height: "
                           f"{sh} stride_width: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got dilation_height:"
                           f" {dh} dilation_width: {dw}")
    if ph < 0 or pw < 0:
        raise RuntimeError(f"{op}: padding should be non-negative, but got pad_height: {ph} "
                           f"pad_width: {pw}")
    h, w = spatial
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    return oh, ow


# -- im2col / col2im ----------------------------------------------------------------------------
def _im2col_meta(self, kernel_size, dilation, padding, stride):
    if self.ndim not in (3, 4) or 0 in self._shape[-3:]:
        raise RuntimeError(f"im2col: Expected 3D or 4D (batch mode) tensor with possibly 0 batch "
                           f"size and other non-zero dimensions for input, but got: "
                           f"{list(self._shape)}")
    n, c, h, w = (None,) * (4 - self.ndim) + tuple(self._shape)
    oh, ow = blocks("im2col", (h, w), kernel_size, dilation, padding, stride)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size="
                           f"{tuple(kernel_size)}, dilation={tuple(dilation)}, padding="
                           f"{tuple(padding)}, calculated shape of the array of sliding blocks "
                           f"as ({oh}, {ow}), but its components must be at least one.")
    out = (c * kernel_size[0] * kernel_size[1], oh * ow)
    return ((n,) + out if n is not None else out), self.dtype


def _col2im_meta(self, output_size, kernel_size, dilation, padding, stride):
    if self.ndim not in (2, 3) or 0 in self._shape[-2:]:
        raise RuntimeError(f"col2im: Expected 2D or 3D (batch mode) tensor for input with "
                           f"possibly 0 batch size and non-zero dimensions for input, but got: "
                           f"{list(self._shape)}")
    n, ck, L = (None,) * (3 - self.ndim) + tuple(self._shape)
    kh, kw = kernel_size
    if kh > 0 and kw > 0 and ck % (kh * kw):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ck} and kernel_size="
                           f"({kh}, {kw}).")
    oh, ow = blocks("col2im", output_size, kernel_size, dilation, padding, stride)
    if oh < 1 or ow < 1 or oh * ow != L:
        raise RuntimeError(f"Given output_size=({output_size[0]}, {output_size[1]}), kernel_size="
                           f"({kh}, {kw}), dilation=({dilation[0]}, {dilation[1]}), padding="
                           f"({padding[0]}, {padding[1]}), stride=({stride[0]}, {stride[1]}), "
                           f"expected size of input's dimension 2 to match the calculated number "
                           f"of sliding blocks {oh} * {ow} = {oh * ow}, but got input.size(2)="
                           f"{L}.")
    out = (ck // (kh * kw), output_size[0], output_size[1])
    return ((n,) + out if n is not None else out), self.dtype


def _im2col_backward(ctx, g, self, kernel_size, dilation, padding, stride):
    return (col2im_op(g, ctx.info, kernel_size, dilation, padding, stride),)


def _col2im_backward(ctx, g, self, output_size, kernel_size, dilation, padding, stride):
    return (im2col_op(g, kernel_size, dilation, padding, stride),)


def _shape_only(self, *rest):
    return tuple(self._shape[-2:])


def _im2col_composite(self, kernel_size, dilation, padding, stride):
    # the sliding windows as a strided view of the zero-padded input, then one copy
    if self.ndim == 3:
        return _im2col_composite(self.unsqueeze(0), kernel_size, dilation, padding, stride)[0]
    n, c, h, w = self._shape
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    oh, ow = blocks("im2col", (h, w), kernel_size, dilation, padding, stride)
    x = self
    if ph or pw:
        x = x.new_zeros((n, c, h + 2 * ph, w + 2 * pw))
        x[:, :, ph:ph + h, pw:pw + w] = self
    else:
        x = x.contiguous()
    s = x.stride()
    win = x.as_strided((n, c, kh, kw, oh, ow), (s[0], s[1], dh * s[2], dw * s[3], sh * s[2],
                                                   sw * s[3]))
    return win.reshape(n, c * kh * kw, oh * ow)


im2col_op = define(
    "im2col(Tensor self, int[] kernel_size, int[] dilation, int[] padding, int[] stride) -> "
    "Tensor", meta=_im2col_meta,
    composite=_im2col_composite,
    derivative=Derivative(_im2col_backward, setup=_shape_only, name="Im2ColBackward0"))
col2im_op = define(
    "col2im(Tensor self, int[] output_size, int[] kernel_size, int[] dilation, int[] padding, "
    "int[] stride) -> Tensor", meta=_col2im_meta,
    derivative=Derivative(_col2im_backward, name="Col2ImBackward0"))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """``F.unfold``: (N, C, H, W) or (C, H, W) -> (N, C*kh*kw, L) or (C*kh*kw, L)."""
    require_tensor(input, "unfold")
    args = tuple(_pair(v, n, "unfold") for v, n in ((kernel_size, "kernel_size"),
                                                   (dilation, "dilation"), (padding, "padding"),
                                                   (stride, "stride")))
    _im2col_meta(input, *args)  # the checks, with torch's messages, before any kernel runs
    return im2col_op(input, *args)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """``F.fold``: (N, C*kh*kw, L) or (C*kh*kw, L) -> (N, C, H, W) or (C, H, W), summing
    overlapping values."""
    require_tensor(input, "fold")
    out_size = _pair(output_size, "output_size", "fold")
    args = tuple(_pair(v, n, "fold") for v, n in ((kernel_size, "kernel_size"),
                                                 (dilation, "dilation"), (padding, "padding"),
                                                 (stride, "stride")))
    _col2im_meta(input, out_size, *args)
    return col2im_op(input, out_size, *args)


# -- pixel shuffles -----------------------------------------------------------------------------
def _shuffle_check(op, x, r, factor_name):
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {factor_name}, but got {r}")
    if x.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {x.ndim} dimension(s)")


def _pixel_shuffle_meta(self, r):
    _shuffle_check("pixel_shuffle", self, r, "upscale_factor")
    c, h, w = self._shape[-3:]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} is"
                           f" not divisible by {r * r}")
    return tuple(self._shape[:-3]) + (c // (r * r), h * r, w * r), self.dtype


def _pixel_unshuffle_meta(self, r):
    _shuffle_check("pixel_unshuffle", self, r, "downscale_factor")
    c, h, w = self._shape[-3:]
    for name, n in (("height", h), ("width", w)):
        if n % r:
            dim = -2 if name == "height" else -1
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({dim})={n} is not divisible by "
                               f"{r}")
    return tuple(self._shape[:-3]) + (c * r * r, h // r, w // r), self.dtype


def _pixel_shuffle_composite(self, r):
    *b, c, h, w = self._shape
    oc = c // (r * r)
    x = self.reshape(*b, oc, r, r, h, w)
    nb = len(b)
    perm = tuple(range(nb)) + (nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.permute(perm).reshape(*b, oc, h * r, w * r)


def _pixel_unshuffle_composite(self, r):
    *b, c, h, w = self._shape
    oh, ow = h // r, w // r
    x = self.reshape(*b, c, oh, r, ow, r)
    nb = len(b)
    perm = tuple(range(nb)) + (nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.permute(perm).reshape(*b, c * r * r, oh, ow)


pixel_shuffle_op = define(
    "pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", meta=_pixel_shuffle_meta,
    composite=_pixel_shuffle_composite,
    derivative=Derivative(lambda ctx, g, self, r: (pixel_unshuffle_op(g, r),), complex_ok=True))
pixel_unshuffle_op = define(
    "pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", meta=_pixel_unshuffle_meta,
    composite=_pixel_unshuffle_composite,
    derivative=Derivative(lambda ctx, g, self, r: (pixel_shuffle_op(g, r),), complex_ok=True))


def pixel_shuffle(input, upscale_factor):
    require_tensor(input, "pixel_shuffle")
    _pixel_shuffle_meta(input, int(upscale_factor))
    return pixel_shuffle_op(input, int(upscale_factor))


def pixel_unshuffle(input, downscale_factor):
    require_tensor(input, "pixel_unshuffle")
    _pixel_unshuffle_meta(input, int(downscale_factor))
    return pixel_unshuffle_op(input, int(downscale_factor))


def channel_shuffle(input, groups):
    """Split the channels (dim 1) into ``groups`` and interleave them."""
    require_tensor(input, "channel_shuffle")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    n, c = input._shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    rest = input._shape[2:]
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input._shape)


native_channel_shuffle = channel_shuffle
