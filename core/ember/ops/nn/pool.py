"""Pooling ops, PyTorch's aten names, for 2 and 3 spatial dims (1-D pooling is the 2-D op on an
unsqueezed input, as in PyTorch), each with its backward op:

* ``max_pool{2,3}d_with_indices`` -> (values, indices): indices are flat positions in each
  (n, c) plane of the input, the first maximum of each window (NaN wins); its backward op
  ``max_pool{2,3}d_with_indices_backward`` sends each gradient to its index (summing where
  windows overlap);
* ``avg_pool{2,3}d`` (ceil_mode, count_include_pad, divisor_override) and
  ``avg_pool{2,3}d_backward``;
* ``_adaptive_avg_pool{2,3}d`` and ``_adaptive_avg_pool{2,3}d_backward``;
* ``adaptive_max_pool{2,3}d`` -> (values, indices) and ``adaptive_max_pool{2,3}d_backward``.

Every backward op is linear in its gradient, so its own derivative (double backward) is the
matching forward: a gather at the indices for max pooling, the forward pool again for average
pooling. Inputs are batched (N, C, *spatial); the ``nn.functional`` API checks arguments with
PyTorch's messages and adds the batch dim.

Kernel convention: the arguments as in each schema, lists of one int per spatial dim, shapes
already checked; results C-contiguous, indices int64.
"""
from __future__ import annotations

from ... import _dtype
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from . import _rules


def _dims(n):
    return f"{n}D"


# -- metas ---------------------------------------------------------------------------------------
def _window_out(op, self, nsp, kernel_size, stride, padding, dilation, ceil_mode):
    sp = _rules.spatial(op, self, nsp, "self")
    k = _rules.ints(op, "kernel_size", kernel_size, nsp)
    s = _rules.ints(op, "stride", stride, nsp)
    p = _rules.ints(op, "padding", padding, nsp)
    d = _rules.ints(op, "dilation", dilation, nsp)
    out = tuple(_rules.pool_out_size(L, kk, ss, pp, dd, ceil_mode)
                for L, kk, ss, pp, dd in zip(sp, k, s, p, d))
    if any(o < 1 for o in out):
        raise RuntimeError(f"{op}: input {list(self._shape)} gives an output of spatial size "
                           f"{list(out)}")
    return self._shape[:2] + out


def _max_meta(nsp):
    op = f"max_pool{nsp}d_with_indices"

    def meta(self, kernel_size, stride, padding, dilation, ceil_mode):
        shape = _window_out(op, self, nsp, kernel_size, stride, padding, dilation, ceil_mode)
        return ((shape, self.dtype), (shape, _dtype.int64))
    return meta


def _grad_input_meta(name):
    def meta(grad_output, self, *rest):
        _rules.tensor(name, grad_output, "grad_output")
        _rules.tensor(name, self, "self")
        if grad_output.ndim != self.ndim or grad_output._shape[:2] != self._shape[:2]:
            raise RuntimeError(f"{name}: grad_output {list(grad_output._shape)} does not match "
                               f"self {list(self._shape)}")
        return self._shape, self.dtype
    return meta


def _avg_meta(nsp):
    op = f"avg_pool{nsp}d"

    def meta(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
             divisor_override):
        return (_window_out(op, self, nsp, kernel_size, stride, padding, (1,) * nsp, ceil_mode),
                self.dtype)
    return meta


def _adaptive_meta(nsp, name, with_indices):
    def meta(self, output_size):
        _rules.spatial(name, self, nsp, "self")
        out = _rules.ints(name, "output_size", output_size, nsp)
        if any(o < 0 for o in out):
            raise RuntimeError(f"{name}: output_size must be non-negative, got {list(out)}")
        shape = self._shape[:2] + out
        if with_indices:
            return ((shape, self.dtype), (shape, _dtype.int64))
        return shape, self.dtype
    return meta


# -- derivatives ---------------------------------------------------------------------------------
def _gather_at(gg, indices):
    """``gg`` (N, C, *in) read at the flat per-plane ``indices`` (N, C, *out)."""
    n, c = gg._shape[:2]
    flat = gg.reshape(n, c, -1)
    return flat.gather(2, indices.reshape(n, c, -1)).reshape(indices._shape)


def _max_pool_derivatives(nsp):
    backward_op = None

    def backward(ctx, grads, self, kernel_size, stride, padding, dilation, ceil_mode):
        g = grads[0]
        indices = ctx.result[1]
        return (backward_op(g, self, kernel_size, stride, padding, dilation, ceil_mode,
                            indices),)

    def double_backward(ctx, gg, grad_output, self, kernel_size, stride, padding, dilation,
                        ceil_mode, indices):
        return (_gather_at(gg, indices),)

    def attach(op):
        nonlocal backward_op
        backward_op = op
    return backward, double_backward, attach


def _define_max_pool(nsp):
    name = f"max_pool{nsp}d_with_indices"
    backward, double_backward, attach = _max_pool_derivatives(nsp)
    fwd = define(f"{name}(Tensor self, int[] kernel_size, int[] stride, int[] padding, "
                 f"int[] dilation, bool ceil_mode) -> (Tensor, Tensor)", meta=_max_meta(nsp),
                 derivative=Derivative(backward, save=("self", "result1"), outputs=(True, False),
                                       name=f"MaxPool{_dims(nsp)}WithIndicesBackward0"),
                 doc=f"{nsp}-d max pooling: (values, flat per-plane indices of the maxima)",
                 _depth=2)
    bwd = define(f"{name}_backward(Tensor grad_output, Tensor self, int[] kernel_size, "
                 f"int[] stride, int[] padding, int[] dilation, bool ceil_mode, Tensor indices) "
                 f"-> Tensor", meta=_grad_input_meta(f"{name}_backward"),
                 derivative=Derivative(double_backward, save=("indices",),
                                       diff=("grad_output",),
                                       name=f"MaxPool{_dims(nsp)}WithIndicesBackwardBackward0"),
                 doc=f"the gradient of {name}: grad_output added at the indices", _depth=2)
    attach(bwd)
    return fwd, bwd


def _define_avg_pool(nsp):
    name = f"avg_pool{nsp}d"
    args = ("int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, "
            "bool count_include_pad, int? divisor_override")
    ops = {}

    def backward(ctx, g, self, *params):
        return (ops["bwd"](g, self, *params),)

    def double_backward(ctx, gg, grad_output, self, *params):
        return (ops["fwd"](gg, *params),)

    ops["fwd"] = define(f"{name}(Tensor self, {args}) -> Tensor", meta=_avg_meta(nsp),
                        derivative=Derivative(backward, save=("self",),
                                              name=f"AvgPool{_dims(nsp)}Backward0"),
                        doc=f"{nsp}-d average pooling", _depth=2)
    ops["bwd"] = define(f"{name}_backward(Tensor grad_output, Tensor self, {args}) -> Tensor",
                        meta=_grad_input_meta(f"{name}_backward"),
                        derivative=Derivative(double_backward, diff=("grad_output",),
                                              name=f"AvgPool{_dims(nsp)}BackwardBackward0"),
                        doc=f"the gradient of {name}", _depth=2)
    return ops["fwd"], ops["bwd"]


def _define_adaptive_avg(nsp):
    name = f"_adaptive_avg_pool{nsp}d"
    ops = {}

    def backward(ctx, g, self, output_size):
        return (ops["bwd"](g, self),)

    def double_backward(ctx, gg, grad_output, self):
        return (ops["fwd"](gg, list(ctx.meta(0)[0][2:])),)

    ops["fwd"] = define(f"{name}(Tensor self, int[] output_size) -> Tensor",
                        meta=_adaptive_meta(nsp, name, False),
                        derivative=Derivative(backward, save=("self",),
                                              name=f"AdaptiveAvgPool{_dims(nsp)}Backward0"),
                        doc=f"{nsp}-d adaptive average pooling", _depth=2)
    ops["bwd"] = define(f"{name}_backward(Tensor grad_output, Tensor self) -> Tensor",
                        meta=_grad_input_meta(f"{name}_backward"),
                        derivative=Derivative(double_backward, diff=("grad_output",),
                                              name=f"AdaptiveAvgPool{_dims(nsp)}"
                                                   f"BackwardBackward0"),
                        doc=f"the gradient of {name}", _depth=2)
    return ops["fwd"], ops["bwd"]


def _define_adaptive_max(nsp):
    name = f"adaptive_max_pool{nsp}d"
    ops = {}

    def backward(ctx, grads, self, output_size):
        return (ops["bwd"](grads[0], self, ctx.result[1]),)

    def double_backward(ctx, gg, grad_output, self, indices):
        return (_gather_at(gg, indices),)

    ops["fwd"] = define(f"{name}(Tensor self, int[] output_size) -> (Tensor, Tensor)",
                        meta=_adaptive_meta(nsp, name, True),
                        derivative=Derivative(backward, save=("self", "result1"),
                                              outputs=(True, False),
                                              name=f"AdaptiveMaxPool{_dims(nsp)}Backward0"),
                        doc=f"{nsp}-d adaptive max pooling: (values, flat per-plane indices)",
                        _depth=2)
    ops["bwd"] = define(f"{name}_backward(Tensor grad_output, Tensor self, Tensor indices) -> "
                        f"Tensor", meta=_grad_input_meta(f"{name}_backward"),
                        derivative=Derivative(double_backward, save=("indices",),
                                              diff=("grad_output",),
                                              name=f"AdaptiveMaxPool{_dims(nsp)}"
                                                   f"BackwardBackward0"),
                        doc=f"the gradient of {name}: grad_output added at the indices",
                        _depth=2)
    return ops["fwd"], ops["bwd"]


max_pool2d_with_indices_op, max_pool2d_with_indices_backward_op = _define_max_pool(2)
max_pool3d_with_indices_op, max_pool3d_with_indices_backward_op = _define_max_pool(3)
avg_pool2d_op, avg_pool2d_backward_op = _define_avg_pool(2)
avg_pool3d_op, avg_pool3d_backward_op = _define_avg_pool(3)
adaptive_avg_pool2d_op, adaptive_avg_pool2d_backward_op = _define_adaptive_avg(2)
adaptive_avg_pool3d_op, adaptive_avg_pool3d_backward_op = _define_adaptive_avg(3)
adaptive_max_pool2d_op, adaptive_max_pool2d_backward_op = _define_adaptive_max(2)
adaptive_max_pool3d_op, adaptive_max_pool3d_backward_op = _define_adaptive_max(3)

MAX_POOL = {2: max_pool2d_with_indices_op, 3: max_pool3d_with_indices_op}
AVG_POOL = {2: avg_pool2d_op, 3: avg_pool3d_op}
ADAPTIVE_AVG = {2: adaptive_avg_pool2d_op, 3: adaptive_avg_pool3d_op}
ADAPTIVE_MAX = {2: adaptive_max_pool2d_op, 3: adaptive_max_pool3d_op}


# -- ONNX (the 2-d ops) -------------------------------------------------------------------------
@max_pool2d_with_indices_op.def_onnx
def _max_pool_onnx(b, c, x, kernel, stride, padding, dilation, ceil_mode, *rest):
    y = b.op("MaxPool", [x], kernel_shape=list(kernel), strides=list(stride or kernel),
             pads=list(padding) * 2, dilations=list(dilation), ceil_mode=int(ceil_mode))
    return [y, None]     # the indices have no ONNX counterpart


@avg_pool2d_op.def_onnx
def _avg_pool_onnx(b, c, x, kernel, stride, padding, ceil_mode, count_include_pad,
                   divisor_override=None, *rest):
    if divisor_override is not None:
        c.refuse("divisor_override")
    return b.op("AveragePool", [x], kernel_shape=list(kernel), strides=list(stride or kernel),
                pads=list(padding) * 2, ceil_mode=int(ceil_mode),
                count_include_pad=int(count_include_pad))


@adaptive_avg_pool2d_op.def_onnx
def _adaptive_avg_pool_onnx(b, c, x, output_size, *rest):
    spatial = c.shape(0)[2:]
    if all(o == 1 for o in output_size):
        return b.op("GlobalAveragePool", [x])
    if all(i % o == 0 for i, o in zip(spatial, output_size)):
        kernel = [i // o for i, o in zip(spatial, output_size)]
        return b.op("AveragePool", [x], kernel_shape=kernel, strides=kernel)
    c.refuse(f"input size {list(spatial)} is not a multiple of output size {list(output_size)}",
             op="adaptive_avg_pool2d")
