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


# -- ember.func.vmap ------------------------------------------------------------------------------
# functorch's rules (BatchRulesConvolution.cpp): the vmap batch B is folded into a dim the op
# already has — N when only the data is batched, the channels with B times the groups when the
# weight is — so a batch is one call. Physical tensors carry the batch in dim 0; "(B O)" is a dim
# of B * O with B the outer factor.
def _into(x, dim):
    """(B, ..., D, ...) -> (..., (B D), ...): the batch merged into the example's dim ``dim``."""
    shape = list(x._shape[1:])
    shape[dim] *= x._shape[0]
    return x.movedim(0, dim).reshape(shape)


def _outof(x, dim, size):
    """(..., (B D), ...) -> (..., B, D, ...)."""
    return x.unflatten(dim, (size, -1))


def _groups_last(x, groups, size):
    """(N, (G B C), ...) -> (N, B, (G C), ...): a grouped result back in per-example order."""
    return x.unflatten(1, (groups, size, -1)).transpose(1, 2).flatten(2, 3)


def _groups_first(x, groups):
    """Physical (B, N, (G C), ...) -> (N, (G B C), ...): each group's channels of every example
    together, so a grouped call keeps examples apart."""
    return x.unflatten(2, (groups, -1)).movedim(0, 2).flatten(1, 3)


def _stand_in(t, batched, dim, size):
    """An operand the call reads only the shape of (a gradient the mask leaves out depends on
    it): one example with dim ``dim`` widened ``size`` times, as a stride-0 view of one
    element's row — functorch's ``make_dummy``."""
    e = t.select(0, 0) if batched else t
    shape = list(e._shape)
    shape[dim] *= size
    return e.narrow(dim, 0, 1).expand(*shape)


def _convolution_batch_rule(args, bdims, layer):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args
    bx, bw, bb = (d is not None for d in bdims[:3])
    geometry = (stride, padding, dilation, transposed, output_padding)
    # a batched bias, or any bias beside a batched weight, is added to the batched result
    separate = bb or (bw and bias is not None)
    b = None if separate else bias
    if bx and not bw:                          # (B N) C -> (B N) O
        out = convolution_op(x.flatten(0, 1), w, b, *geometry, groups)
        out, dim = _outof(out, 0, x._shape[0]), 0
    elif bw and not bx:
        size = w._shape[0]
        if groups == 1:                        # weight (B O) I, output N (B O)
            out = convolution_op(x, _into(w, 1 if transposed else 0), b, *geometry, groups)
            out, dim = _outof(out, 1, size), 1
        else:                                  # weight (G B O) I, output N (G B O)
            if transposed:                     # B (G I) O -> (G I) (B O)
                nw = _into(w, 1)
            else:                              # B (G O) I -> (G B O) I
                nw = w.unflatten(1, (groups, -1)).transpose(0, 1).flatten(0, 2)
            out = convolution_op(x, nw, b, *geometry, groups)
            out, dim = _groups_last(out, groups, size), 1
    elif bx and bw:                            # B*G groups: N (B C), (B O) I -> N (B O)
        size = x._shape[0]                     # (a transposed weight (B I) O: groups split I)
        out = convolution_op(_into(x, 1), _into(w, 0), b, *geometry, groups * size)
        out, dim = _outof(out, 1, size), 1
    else:
        out, dim = convolution_op(x, w, b, *geometry, groups), None
    if not separate:
        return out, dim
    if dim is not None:
        out, dim = out.movedim(dim, 0), 0
    nsp = len(stride)
    if bb:                                     # (B, O) -> (B, 1, O, 1, ...)
        bias = bias.reshape((bias._shape[0], 1, bias._shape[1]) + (1,) * nsp)
    else:
        bias = bias.reshape((bias._shape[0],) + (1,) * nsp)
    return out + bias, (0 if dim is not None or bb else None)


def _backward_input(g, bg, x, bx, w, bw, geometry, groups):
    """(grad_input, its batch dim) of convolution_backward with a batched operand."""
    transposed = geometry[3]

    def run(g, x, w, groups):
        return convolution_backward_op(g, x, w, None, *geometry, groups,
                                       [True, False, False])[0]
    if bg and bw:                              # N (B O), (B O) I -> N (B I)
        size = w._shape[0]
        r = run(_into(g, 1), _stand_in(x, bx, 1, size), _into(w, 0), groups * size)
        return _outof(r, 1, size), 1
    if bg:                                     # (B N) O, O I -> (B N) I
        size = g._shape[0]
        r = run(g.flatten(0, 1), _stand_in(x, bx, 0, size), w, groups)
        return _outof(r, 0, size), 0
    if bw:
        size = w._shape[0]
        if groups == 1:                        # N O, O (B I) -> N (B I)
            r = run(g, _stand_in(x, bx, 1, size), _into(w, 0 if transposed else 1), groups)
            return _outof(r, 1, size), 1
        if transposed:                         # B (G I) O -> (G B I) O
            nw = w.unflatten(1, (groups, -1)).transpose(0, 1).flatten(0, 2)
        else:                                  # B (G O) I -> (G O) (B I)
            nw = _into(w, 1)
        r = run(g, _stand_in(x, bx, 1, size), nw, groups)
        return _groups_last(r, groups, size), 1
    # only the input is batched: its gradient does not depend on its values
    return run(g, _stand_in(x, True, 0, 1), w, groups), None


def _backward_weight(g, bg, x, bx, w, bw, geometry, groups):
    """(grad_weight, its batch dim) of convolution_backward with a batched operand."""
    transposed = geometry[3]

    def run(g, x, w, groups):
        return convolution_backward_op(g, x, w, None, *geometry, groups,
                                       [False, True, False])[1]
    if bg and bx:                              # N (B O), N (B I) -> (B O) I
        size = x._shape[0]
        r = run(_into(g, 1), _into(x, 1), _stand_in(w, bw, 0, size), groups * size)
        return _outof(r, 0, size), 0
    if bg:
        size = g._shape[0]
        if groups == 1:                        # N (B O), N I -> (B O) I or I (B O)
            dim = 1 if transposed else 0
            r = run(_into(g, 1), x, _stand_in(w, bw, dim, size), groups)
            return _outof(r, dim, size), dim
        ng = _groups_first(g, groups)          # N (G B O)
        if transposed:                         # -> (G I) (B O)
            r = run(ng, x, _stand_in(w, bw, 1, size), groups)
            return _outof(r, 1, size), 1
        r = run(ng, x, _stand_in(w, bw, 0, size), groups)    # -> (G B O) I
        return r.unflatten(0, (groups, size, -1)).transpose(0, 1).flatten(1, 2), 0
    if bx:
        size = x._shape[0]
        if groups == 1:                        # N O, N (B I) -> O (B I) or (B I) O
            dim = 0 if transposed else 1
            r = run(g, _into(x, 1), _stand_in(w, bw, dim, size), groups)
            return _outof(r, dim, size), dim
        nx = _groups_first(x, groups)          # N (G B I)
        if transposed:                         # -> (G B I) O
            r = run(g, nx, _stand_in(w, bw, 0, size), groups)
            return r.unflatten(0, (groups, size, -1)).transpose(0, 1).flatten(1, 2), 0
        r = run(g, nx, _stand_in(w, bw, 1, size), groups)    # -> (G O) (B I)
        return _outof(r, 1, size), 1
    # only the weight is batched: its gradient does not depend on its values
    return run(g, x, _stand_in(w, True, 0, 1), groups), None


def _convolution_backward_batch_rule(args, bdims, layer):
    g, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, \
        mask = args
    bg, bx, bw = (d is not None for d in bdims[:3])
    geometry = (stride, padding, dilation, transposed, output_padding)
    if not (bg or bx or bw):
        return convolution_backward_op(*args), (None, None, None)
    gb = gb_dim = None
    if mask[2]:   # the sum of the output gradient over N and space, per example
        first = 1 if bg else 0
        gb = g.sum((first,) + tuple(range(first + 2, g.ndim)))
        gb_dim = 0 if bg else None
    if bg and bx and bw:                       # one grouped call for both gradients
        size = w._shape[0]
        gi, gw, _ = convolution_backward_op(_into(g, 1), _into(x, 1), _into(w, 0), None,
                                            *geometry, groups * size,
                                            [mask[0], mask[1], False])
        gi = _outof(gi, 1, size) if mask[0] else None
        gw = _outof(gw, 0, size) if mask[1] else None
        return (gi, gw, gb), (1, 0, gb_dim)
    gi, gi_dim = _backward_input(g, bg, x, bx, w, bw, geometry, groups) if mask[0] \
        else (None, None)
    gw, gw_dim = _backward_weight(g, bg, x, bx, w, bw, geometry, groups) if mask[1] \
        else (None, None)
    return (gi, gw, gb), (gi_dim, gw_dim, gb_dim)


convolution_op.def_batch_rule(_convolution_batch_rule)
convolution_backward_op.def_batch_rule(_convolution_backward_batch_rule)


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
