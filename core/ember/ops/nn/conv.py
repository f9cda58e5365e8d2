"""Convolution as one op for every rank and direction: ``convolution`` (PyTorch's
``aten::convolution``) and its backward ``convolution_backward``, itself differentiable.

``convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
groups)`` covers conv1d/2d/3d (``transposed=False``: weight (C_out, C_in/groups, *k)) and
conv_transpose1d/2d/3d (``transposed=True``: weight (C_in, C_out/groups, *k)); the rank is
``len(stride)``. Inputs are batched (N, C, *spatial); padding is symmetric and zero (the
functional API pads asymmetric 'same' and the non-zero padding modes first).

Derivatives. The op is bilinear in (input, weight): with ``y = F(x, W)``, the backward op
returns ``F_x*(g; W)`` and ``F_W*(g; x)`` (the adjoints) and ``sum(g)`` for the bias, each only
when ``output_mask`` asks. Its own derivative follows from bilinearity, so double backward is
written with the two ops again (PyTorch's ``ConvolutionBackwardBackward0``):

* grad_output gets ``F(ggI, W) + F(x, ggW) + ggB``;
* input gets ``F_x*(g; ggW)`` — ``convolution_backward(g, x, ggW)[0]``;
* weight gets ``F_W*(g; ggI)`` — ``convolution_backward(g, ggI, W)[1]``.

Kernel convention: ``convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride,
int[] padding, int[] dilation, bool transposed, int[] output_padding, int groups)`` with
shapes already checked; ``convolution_backward(Tensor grad_output, Tensor input, Tensor
weight, int[]? bias_sizes, ..., bool[] output_mask)`` returns three tensors, None where the
mask is False. Results are C-contiguous in the input's dtype.
"""
from __future__ import annotations

from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .._util import _dtype_title
from . import _rules


def _weight_meta(op, input, weight, bias, transposed, groups):
    nsp = weight.ndim - 2
    _rules.spatial(op, input, nsp)
    c = input._shape[1]
    if not isinstance(groups, int) or groups <= 0 or c % groups or \
            weight._shape[0] % groups:
        raise RuntimeError(f"{op}: groups={groups} must be positive and divide the input "
                           f"channels ({c}) and weight dim 0 ({weight._shape[0]})")
    if transposed:
        if weight._shape[0] != c:
            raise RuntimeError(f"{op}: transposed weight {list(weight._shape)} expects "
                               f"{weight._shape[0]} input channels, input has shape "
                               f"{list(input._shape)}")
        oc = weight._shape[1] * groups
    else:
        if weight._shape[1] * groups != c:
            raise RuntimeError(f"{op}: weight {list(weight._shape)} with groups={groups} expects "
                               f"{weight._shape[1] * groups} input channels, input has shape "
                               f"{list(input._shape)}")
        oc = weight._shape[0]
    if weight.dtype is not input.dtype or (bias is not None and bias.dtype is not input.dtype):
        raise RuntimeError(f"{op}: input, weight and bias must have one dtype, got "
                           f"{_dtype_title(input.dtype)}, {_dtype_title(weight.dtype)}"
                           + (f" and {_dtype_title(bias.dtype)}" if bias is not None else ""))
    return nsp, oc


def output_shape(input_shape, weight_shape, stride, padding, dilation, transposed,
                 output_padding, groups):
    """The convolution's output shape (N, C_out, *spatial)."""
    kernel = weight_shape[2:]
    if transposed:
        oc = weight_shape[1] * groups
        sp = tuple(_rules.conv_transpose_out_size(i, k, s, p, d, o) for i, k, s, p, d, o in
                   zip(input_shape[2:], kernel, stride, padding, dilation, output_padding))
    else:
        oc = weight_shape[0]
        sp = tuple(_rules.conv_out_size(i, k, s, p, d) for i, k, s, p, d in
                   zip(input_shape[2:], kernel, stride, padding, dilation))
    return (input_shape[0], oc) + sp


def _convolution_meta(input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups):
    nsp, oc = _weight_meta("convolution", input, weight, bias, transposed, groups)
    if bias is not None and tuple(bias._shape) != (oc,):
        raise RuntimeError(f"convolution: expected bias of shape [{oc}], got "
                           f"{list(bias._shape)}")
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation),
                    ("output_padding", output_padding)):
        _rules.ints("convolution", name, v, nsp)
    shape = output_shape(input._shape, weight._shape, stride, padding, dilation, transposed,
                         output_padding, groups)
    if any(s <= 0 for s in shape[2:]):
        raise RuntimeError(f"convolution: input {list(input._shape)} and weight "
                           f"{list(weight._shape)} give an output of shape {list(shape)}")
    return shape, input.dtype


def _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride, padding,
                               dilation, transposed, output_padding, groups, output_mask):
    shape, dtype = _convolution_meta(input, weight, None, stride, padding, dilation, transposed,
                                     output_padding, groups)
    if tuple(grad_output._shape) != shape:
        raise RuntimeError(f"convolution_backward: grad_output of shape "
                           f"{list(grad_output._shape)}, expected {list(shape)}")
    bias = tuple(bias_sizes) if bias_sizes is not None else (shape[1],)
    # an output the mask leaves out is undefined (None), as in PyTorch
    return tuple((s, dtype) if m else None for s, m in
                 zip((input._shape, weight._shape, bias), output_mask))


# -- derivatives --------------------------------------------------------------------------------
def _convolution_backward_formula(ctx, g, input, weight, bias, stride, padding, dilation,
                                  transposed, output_padding, groups):
    mask = [ctx.needs(0), ctx.needs(1), ctx.needs(2)]
    bias_sizes = list(ctx.meta(2)[0]) if mask[2] else None
    gi, gw, gb = convolution_backward_op(g, input, weight, bias_sizes, stride, padding,
                                         dilation, transposed, output_padding, groups, mask)
    return gi, gw, gb


def _convolution_double_backward(ctx, grads, grad_output, input, weight, bias_sizes, stride,
                                 padding, dilation, transposed, output_padding, groups,
                                 output_mask):
    gg_input, gg_weight, gg_bias = grads
    params = (stride, padding, dilation, transposed, output_padding, groups)
    g_out = g_input = g_weight = None
    if ctx.needs(0):
        terms = []
        if gg_input is not None:
            terms.append(convolution_op(gg_input, weight, None, *params))
        if gg_weight is not None:
            terms.append(convolution_op(input, gg_weight, None, *params))
        if gg_bias is not None:
            shape = grad_output._shape
            terms.append(gg_bias.reshape((shape[1],) + (1,) * (len(shape) - 2)).expand(shape))
        for t in terms:
            g_out = t if g_out is None else g_out + t
    if ctx.needs(1) and gg_weight is not None:
        g_input = convolution_backward_op(grad_output, input, gg_weight, None, *params,
                                          [True, False, False])[0]
    if ctx.needs(2) and gg_input is not None:
        g_weight = convolution_backward_op(grad_output, gg_input, weight, None, *params,
                                           [False, True, False])[1]
    return g_out, g_input, g_weight


convolution_op = define(
    "convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor",
    meta=_convolution_meta,
    derivative=Derivative(_convolution_backward_formula, save=("input", "weight"),
                          name="ConvolutionBackward0"),
    doc="N-d convolution or transposed convolution (PyTorch's aten::convolution).")


@convolution_op.def_onnx
def _convolution_onnx(b, c, x, w, bias, stride, padding, dilation, transposed, output_padding,
                      groups, *rest):
    if isinstance(padding, str):
        c.refuse(f"padding={padding!r}")
    attrs = dict(strides=list(stride), pads=list(padding) * 2, dilations=list(dilation),
                 group=int(groups), kernel_shape=list(c.shape(1)[2:]))
    inputs = [x, w] + ([bias] if bias is not None else [])
    if transposed:
        return b.op("ConvTranspose", inputs, output_padding=list(output_padding), **attrs)
    return b.op("Conv", inputs, **attrs)

convolution_backward_op = define(
    "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, int[]? bias_sizes, "
    "int[] stride, int[] padding, int[] dilation, bool transposed, int[] output_padding, "
    "int groups, bool[] output_mask) -> (Tensor, Tensor, Tensor)",
    meta=_convolution_backward_meta,
    derivative=Derivative(_convolution_double_backward,
                          save=("grad_output", "input", "weight"),
                          name="ConvolutionBackwardBackward0"),
    doc="(grad_input, grad_weight, grad_bias) of convolution, each where output_mask asks.")


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """``torch.convolution``: the op under every conv and conv_transpose of ``nn.functional``,
    for a batched input; arguments are lists of one int per spatial dim."""
    _rules.tensor("convolution", input, "input")
    _rules.tensor("convolution", weight, "weight")
    if bias is not None:
        _rules.tensor("convolution", bias, "bias")
    if weight.ndim < 3:
        _bad_weight(weight)
    args = [tuple(int(v) for v in a) for a in (stride, padding, dilation, output_padding)]
    params = (*args[:3], bool(transposed), args[3], int(groups))
    _convolution_meta(input, weight, bias, *params)  # argument errors name the op here
    return convolution_op(input, weight, bias, *params)


def _bad_weight(weight):
    raise RuntimeError(f"convolution: expected weight with at least 3 dims (C_out, C_in, *k), "
                       f"got shape {list(weight._shape)}")


__all__ = ["convolution"]
