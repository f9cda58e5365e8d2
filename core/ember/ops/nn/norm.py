"""Normalisation ops, PyTorch's aten names: each one op forward, one op backward, and a double
backward written in ember ops.

* ``native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
  eps) -> (out, save_mean, save_invstd)``: statistics per channel (dim 1) over every other dim.
  In training the batch's are used and the kernel updates the running ones in place
  (``running = (1 - momentum) * running + momentum * stat``, the variance unbiased); in eval the
  running ones are used and save_mean/save_invstd are empty.
* ``native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)``:
  statistics over the trailing ``normalized_shape`` dims; mean/rstd keep those dims as size 1.
* ``native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd)``:
  statistics per (sample, group); mean/rstd are (N, group).

Variances are biased (divided by the count); ``rstd = 1 / sqrt(var + eps)``. Statistics of
float16/bfloat16 inputs are float32, as PyTorch's. Each backward op returns (grad_input,
grad_weight, grad_bias) where ``output_mask`` asks (None elsewhere); its derivative is
``_normalization_double_backward`` below, one formula for the three (they differ only in
which dims the statistics and the affine parameters reduce over), PyTorch's
``batchnorm_double_backward`` generalised.
"""
from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from ..._tensor import Tensor
from .. import _primitives
from .. import elementwise as _ew
from . import _rules


def stat_dtype(d):
    return _dtype.float32 if d in (_dtype.float16, _dtype.bfloat16) else d


def _affine_check(op, name, t, shape):
    if t is not None and tuple(t._shape) != tuple(shape):
        raise RuntimeError(f"{op}: expected {name} of shape {list(shape)}, got "
                           f"{list(t._shape)}")


# -- metas ---------------------------------------------------------------------------------------
def _batch_norm_meta(input, weight, bias, running_mean, running_var, training, momentum, eps):
    _rules.tensor("native_batch_norm", input, "input")
    if input.ndim < 2:
        raise RuntimeError(f"native_batch_norm: expected input of at least 2 dims, got shape "
                           f"{list(input._shape)}")
    c = input._shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _affine_check("native_batch_norm", name, t, (c,))
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("native_batch_norm: running_mean and running_var are needed in eval "
                           "mode")
    sd = stat_dtype(input.dtype)
    stats = (c,) if training else (0,)
    return ((input._shape, input.dtype), (stats, sd), (stats, sd))


def _grads_meta(op, shapes, dtype, output_mask):
    return tuple((s, dtype) if m else None for s, m in zip(shapes, output_mask))


def _batch_norm_backward_meta(grad_out, input, weight, running_mean, running_var, save_mean,
                              save_invstd, train, eps, output_mask):
    c = input._shape[1]
    return _grads_meta("native_batch_norm_backward", (input._shape, (c,), (c,)), input.dtype,
                       output_mask)


def _layer_norm_meta(input, normalized_shape, weight, bias, eps):
    _rules.tensor("native_layer_norm", input, "input")
    k = len(normalized_shape)
    if k == 0 or input.ndim < k or tuple(input._shape[-k:]) != tuple(normalized_shape):
        raise RuntimeError(f"native_layer_norm: normalized_shape {list(normalized_shape)} does "
                           f"not match the end of input shape {list(input._shape)}")
    _affine_check("native_layer_norm", "weight", weight, normalized_shape)
    _affine_check("native_layer_norm", "bias", bias, normalized_shape)
    stats = tuple(input._shape[:input.ndim - k]) + (1,) * k
    sd = stat_dtype(input.dtype)
    return ((input._shape, input.dtype), (stats, sd), (stats, sd))


def _layer_norm_backward_meta(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                              output_mask):
    ns = tuple(normalized_shape)
    return _grads_meta("native_layer_norm_backward", (input._shape, ns, ns), input.dtype,
                       output_mask)


def _group_norm_meta(input, weight, bias, N, C, HxW, group, eps):
    _rules.tensor("native_group_norm", input, "input")
    if input.numel() != N * C * HxW or input.ndim < 2 or input._shape[:2] != (N, C):
        raise RuntimeError(f"native_group_norm: input of shape {list(input._shape)} is not "
                           f"N={N} x C={C} x HxW={HxW}")
    if group <= 0 or C % group:
        raise RuntimeError(f"native_group_norm: C={C} is not divisible into group={group}")
    _affine_check("native_group_norm", "weight", weight, (C,))
    _affine_check("native_group_norm", "bias", bias, (C,))
    sd = stat_dtype(input.dtype)
    return ((input._shape, input.dtype), ((N, group), sd), ((N, group), sd))


def _group_norm_backward_meta(grad_out, input, mean, rstd, weight, N, C, HxW, group,
                              output_mask):
    return _grads_meta("native_group_norm_backward", (input._shape, (C,), (C,)), input.dtype,
                       output_mask)


# -- derivatives ---------------------------------------------------------------------------------
def _normalization_double_backward(needs, ggI, ggW, ggB, go, x, w, mean, rstd, red, wred, m):
    """Gradients of ``<ggI, gI> + <ggW, gW> + <ggB, gB>`` for a normalisation whose backward
    is ``gI = N(go * w)``, ``gW = sum_wred(go * xh)``, ``gB = sum_wred(go)``, with
    ``xh = (x - mean) * rstd`` and ``N(t) = rstd * (t - S(t)/m - xh * S(t * xh)/m)`` (``S``
    sums over the statistics' dims ``red``, ``m`` elements each). Every tensor is given in one
    broadcastable layout (w, mean, rstd, ggW, ggB already shaped to broadcast against x).
    Returns (for grad_out, for input, for the weight before summing over ``wred``)."""
    def S(t):
        return t.sum(red, keepdim=True)

    xm = x - mean
    xh = xm * rstd

    def N(t):
        return rstd * (t - S(t) / m - xh * (S(t * xh) / m))

    gxh = go if w is None else go * w
    g_go = g_x = g_w = None
    if needs[0]:
        terms = []
        if ggI is not None:
            terms.append(N(ggI) if w is None else N(ggI) * w)
        if ggW is not None:
            terms.append(ggW * xh)
        if ggB is not None:
            terms.append(ggB.expand(go._shape))
        for t in terms:
            g_go = t if g_go is None else g_go + t
    if needs[1]:
        if ggI is not None:
            r3 = rstd * rstd * rstd
            s_gi, s_g = S(ggI), S(gxh)
            s_gxm, s_gixm = S(gxh * xm), S(ggI * xm)
            all_sub = s_gi * s_g / m - S(gxh * ggI) + (rstd * rstd) * s_gxm * s_gixm * (3.0 / m)
            g_x = xm * r3 * all_sub / m + s_gixm * r3 / m * (s_g / m - gxh) + \
                s_gxm * r3 / m * (s_gi / m - ggI)
        if ggW is not None:
            t = N(ggW * go)
            g_x = t if g_x is None else g_x + t
    if needs[2] and ggI is not None and w is not None:
        g_w = (N(ggI) * go).sum(wred)
    return g_go, g_x, g_w


def _eval_double_backward(needs, ggI, ggW, ggB, go, x, w, mean, rstd, wred):
    """Batch norm with fixed (running) statistics: gI = go * w * rstd does not depend on x."""
    xh = (x - mean) * rstd
    g_go = g_x = g_w = None
    if needs[0]:
        terms = []
        if ggI is not None:
            terms.append(ggI * rstd if w is None else ggI * (w * rstd))
        if ggW is not None:
            terms.append(ggW * xh)
        if ggB is not None:
            terms.append(ggB.expand(go._shape))
        for t in terms:
            g_go = t if g_go is None else g_go + t
    if needs[1] and ggW is not None:
        g_x = ggW * go * rstd
    if needs[2] and ggI is not None and w is not None:
        g_w = (ggI * go * rstd).sum(wred)
    return g_go, g_x, g_w


def _mask(ctx, n=3):
    return [ctx.needs(i) for i in range(n)]


def _shaped(t, shape):
    return None if t is None else t.reshape(shape)


# batch norm
class _SavedStats:
    """The running statistics an eval-mode batch norm read (version-checked when unpacked; in
    training they are not kept: the op itself updates them, and later steps do again)."""

    __slots__ = ("mean", "var")

    def __init__(self, mean, var):
        self.mean, self.var = _primitives.SavedTensor(mean), _primitives.SavedTensor(var)


def _batch_norm_setup(input, weight, bias, running_mean, running_var, training, momentum, eps):
    return None if training else _SavedStats(running_mean, running_var)


def _batch_norm_backward(ctx, grads, input, weight, bias, running_mean, running_var, training,
                         momentum, eps):
    g = grads[0]
    _, save_mean, save_invstd = ctx.result
    stats = ctx.info
    rm = rv = None
    if stats is not None:
        rm, rv = stats.mean.unpack(ctx), stats.var.unpack(ctx)
    return native_batch_norm_backward_op(g, input, weight, rm, rv, save_mean, save_invstd,
                                         training, eps, _mask(ctx))


def _bn_layout(x):
    c = x._shape[1]
    return (1, c) + (1,) * (x.ndim - 2), (0,) + tuple(range(2, x.ndim))


def _batch_norm_double_backward(ctx, grads, grad_out, input, weight, running_mean, running_var,
                                save_mean, save_invstd, train, eps, output_mask):
    ggI, ggW, ggB = grads
    bshape, red = _bn_layout(input)
    w = _shaped(weight, bshape)
    ggW, ggB = _shaped(ggW, bshape), _shaped(ggB, bshape)
    needs = _mask(ctx)
    if train:
        mean, rstd = save_mean.reshape(bshape), save_invstd.reshape(bshape)
        m = input.numel() // input._shape[1]
        r = _normalization_double_backward(needs, ggI, ggW, ggB, grad_out, input, w, mean,
                                           rstd, red, red, m)
    else:
        mean = running_mean.reshape(bshape)
        rstd = _ew.unary_api["rsqrt"](running_var + eps).reshape(bshape)
        r = _eval_double_backward(needs, ggI, ggW, ggB, grad_out, input, w, mean, rstd, red)
    return r


native_batch_norm_op = define(
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, "
    "Tensor(b!)? running_var, bool training, float momentum, float eps) -> "
    "(Tensor, Tensor, Tensor)",
    meta=_batch_norm_meta,
    derivative=Derivative(_batch_norm_backward,
                          # torch's: the input and the batch statistics, not the output (an
                          # in-place ReLU after BatchNorm overwrites that)
                          save=("input", "weight", "result1", "result2"),
                          diff=("input", "weight", "bias"), outputs=(True, False, False),
                          setup=_batch_norm_setup, name="NativeBatchNormBackward0"),
    doc="batch normalisation over dim 1; in training updates the running statistics in place")


@native_batch_norm_op.def_onnx
def _batch_norm_onnx(b, c, x, w, bias, mean, var, training, momentum, eps, *rest):
    if training:
        c.fail("ember.onnx.export: batch norm in training mode (export runs the model in eval "
               "mode; call model.eval())")
    channels = c.shape(0)[1]
    dt = np.dtype(c.meta(0)[1].np)
    w = w if w is not None else b.const(np.ones(channels, dt))
    bias = bias if bias is not None else b.const(np.zeros(channels, dt))
    if mean is None:
        c.fail("ember.onnx.export: batch norm without running statistics "
               "(track_running_stats=False) normalises by batch statistics")
    return [b.op("BatchNormalization", [x, w, bias, mean, var], epsilon=float(eps)), None, None]

native_batch_norm_backward_op = define(
    "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
    "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, "
    "bool train, float eps, bool[] output_mask) -> (Tensor, Tensor, Tensor)",
    meta=_batch_norm_backward_meta,
    derivative=Derivative(_batch_norm_double_backward,
                          save=("grad_out", "input", "weight", "running_mean", "running_var",
                                "save_mean", "save_invstd"),
                          diff=("grad_out", "input", "weight"),
                          name="NativeBatchNormBackwardBackward0"),
    doc="(grad_input, grad_weight, grad_bias) of native_batch_norm where output_mask asks")


# layer norm
def _layer_norm_backward(ctx, grads, input, normalized_shape, weight, bias, eps):
    _, mean, rstd = ctx.result
    return native_layer_norm_backward_op(grads[0], input, normalized_shape, mean, rstd, weight,
                                         bias, _mask_ln(ctx))


def _mask_ln(ctx):
    # argument positions: input 0, weight 2, bias 3
    return [ctx.needs(0), ctx.needs(2), ctx.needs(3)]


def _layer_norm_formula(ctx, grads, input, normalized_shape, weight, bias, eps):
    gi, gw, gb = _layer_norm_backward(ctx, grads, input, normalized_shape, weight, bias, eps)
    return gi, None, gw, gb


def _layer_norm_double_backward(ctx, grads, grad_out, input, normalized_shape, mean, rstd,
                                weight, bias, output_mask):
    ggI, ggW, ggB = grads
    k = len(normalized_shape)
    lead = input.ndim - k
    red = tuple(range(lead, input.ndim))
    wred = tuple(range(lead))
    m = math.prod(normalized_shape)
    needs = [ctx.needs(0), ctx.needs(1), ctx.needs(5)]
    g_go, g_x, g_w = _normalization_double_backward(needs, ggI, ggW, ggB, grad_out, input,
                                                    weight, mean, rstd, red, wred, m)
    return g_go, g_x, None, None, None, g_w


native_layer_norm_op = define(
    "native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, "
    "float eps) -> (Tensor, Tensor, Tensor)",
    meta=_layer_norm_meta,
    derivative=Derivative(_layer_norm_formula,
                          save=("input", "weight", "bias", "result1", "result2"),
                          diff=("input", "weight", "bias"), outputs=(True, False, False),
                          name="NativeLayerNormBackward0"),
    doc="layer normalisation over the trailing normalized_shape dims")


@native_layer_norm_op.def_onnx
def _layer_norm_onnx(b, c, x, shape, w, bias, eps, *rest):
    dt = np.dtype(c.meta(0)[1].np)
    w = w if w is not None else b.const(np.ones(shape, dt))
    inputs = [x, w] + ([bias] if bias is not None else [])
    return [b.op("LayerNormalization", inputs, axis=-len(shape), epsilon=float(eps)), None,
            None]

native_layer_norm_backward_op = define(
    "native_layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, "
    "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[] output_mask) -> "
    "(Tensor, Tensor, Tensor)",
    meta=_layer_norm_backward_meta,
    derivative=Derivative(_layer_norm_double_backward,
                          save=("grad_out", "input", "mean", "rstd", "weight"),
                          diff=("grad_out", "input", "weight"),
                          name="NativeLayerNormBackwardBackward0"),
    doc="(grad_input, grad_weight, grad_bias) of native_layer_norm where output_mask asks")


# group norm
def _group_norm_formula(ctx, grads, input, weight, bias, N, C, HxW, group, eps):
    _, mean, rstd = ctx.result
    g_out, g_mean, g_rstd = grads
    gi = gw = gb = None
    if g_out is not None:
        gi, gw, gb = native_group_norm_backward_op(g_out, input, mean, rstd, weight, N, C, HxW,
                                                   group, _mask(ctx))
    if (g_mean is not None or g_rstd is not None) and ctx.needs(0):
        # PyTorch differentiates the statistics too: d mean/dx = 1/m and
        # d rstd/dx = -rstd^3 (x - mean) / m over each (sample, group)
        m = (C // group) * HxW
        view = (N, group, m)
        x = input.reshape(view)
        extra = 0
        if g_mean is not None:
            extra = extra + g_mean.reshape(N, group, 1) / m
        if g_rstd is not None:
            r = rstd.reshape(N, group, 1)
            extra = extra - g_rstd.reshape(N, group, 1) * r * r * r * \
                (x - mean.reshape(N, group, 1)) / m
        extra = (extra + x * 0).reshape(input._shape)
        gi = extra if gi is None else gi + extra
    return gi, gw, gb


def _group_norm_double_backward(ctx, grads, grad_out, input, mean, rstd, weight, N, C, HxW,
                                group, output_mask):
    ggI, ggW, ggB = grads
    view = (N, group, C // group, HxW)
    bshape = (1, group, C // group, 1)
    needs = [ctx.needs(0), ctx.needs(1), ctx.needs(4)]
    g_go, g_x, g_w = _normalization_double_backward(
        needs, _shaped(ggI, view), _shaped(ggW, bshape), _shaped(ggB, bshape),
        grad_out.reshape(view), input.reshape(view), _shaped(weight, bshape),
        mean.reshape(N, group, 1, 1), rstd.reshape(N, group, 1, 1), (2, 3), (0, 3),
        (C // group) * HxW)
    shape = input._shape
    return (_shaped(g_go, shape), _shaped(g_x, shape), None, None,
            None if g_w is None else g_w.reshape(C))


native_group_norm_op = define(
    "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, int N, int C, int HxW, "
    "int group, float eps) -> (Tensor, Tensor, Tensor)",
    meta=_group_norm_meta,
    derivative=Derivative(_group_norm_formula, save=("input", "weight", "result1", "result2"),
                          diff=("input", "weight", "bias"), outputs=(True, False, False),
                          name="NativeGroupNormBackward0"),
    doc="group normalisation: statistics per (sample, group of C/group channels)")

native_group_norm_backward_op = define(
    "native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, "
    "Tensor? weight, int N, int C, int HxW, int group, bool[] output_mask) -> "
    "(Tensor, Tensor, Tensor)",
    meta=_group_norm_backward_meta,
    derivative=Derivative(_group_norm_double_backward,
                          save=("grad_out", "input", "mean", "rstd", "weight"),
                          diff=("grad_out", "input", "weight"),
                          name="NativeGroupNormBackwardBackward0"),
    doc="(grad_input, grad_weight, grad_bias) of native_group_norm where output_mask asks")


# -- the public functions ------------------------------------------------------------------------
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``torch.native_batch_norm``: (output, save_mean, save_invstd)."""
    _rules.tensor("native_batch_norm", input, "input")
    for t in (running_mean, running_var):
        if training and isinstance(t, Tensor):
            t._storage.version += 1  # written by the kernel below
    return native_batch_norm_op(input, weight, bias, running_mean, running_var, bool(training),
                                float(momentum), float(eps))


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``torch.native_layer_norm``: (output, mean, rstd)."""
    _rules.tensor("native_layer_norm", input, "input")
    return native_layer_norm_op(input, [int(s) for s in normalized_shape], weight, bias,
                                float(eps))


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``torch.native_group_norm``: (output, mean, rstd)."""
    _rules.tensor("native_group_norm", input, "input")
    return native_group_norm_op(input, weight, bias, int(N), int(C), int(HxW), int(group),
                                float(eps))

