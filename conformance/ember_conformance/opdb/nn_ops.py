"""Entries for ``ember.ops.nn``: convolution, pooling and normalisation ops and their backward
ops, each called directly (the ``nn.functional`` compositions are in ``nn.py``).

Backward ops get entries of their own: their forward values are compared like any op's, and
their gradients (the double backward of the layer) against finite differences on the CPU and
against the CPU on other backends. Inputs cover 1-3 spatial dims, strides, padding, dilation,
groups, ceil_mode and non-contiguous layouts.
"""
from __future__ import annotations

from . import FLOATS, OpInfo, SampleInput, make_tensor

# products and sums over windows: a backend may order them as it likes
LOOSE = {"float32": (1e-4, 1e-5)}


def _ops():
    from ember.ops import nn
    return nn


def _samples(*cases):
    """``cases``: (description, [(shape, layout)], kwargs): float operands in [-1.5, 1.5)."""
    def gen(dtype):
        for i, (desc, operands, kw) in enumerate(cases):
            def build(dev, operands=operands, kw=kw, i=i):
                args = tuple(make_tensor(100 * i + j, shape, dtype, dev, low=-1.5, high=1.5,
                                         layout=layout)
                             for j, (shape, layout) in enumerate(operands))
                return args, dict(kw)
            yield SampleInput(f"{dtype} {desc}", build)
    return gen


def _entry(name, fn, *cases, covers=None, differentiable=True):
    return OpInfo(name, fn, _samples(*cases), dtypes=FLOATS, covers=covers or (name,),
                  differentiable=differentiable, tolerances=dict(LOOSE))


# -- convolution ------------------------------------------------------------------------------
def _conv(x, w, b=None, *, nsp, stride=1, padding=0, dilation=1, transposed=False,
          output_padding=0, groups=1):
    v = (lambda a: [a] * nsp)
    return _ops().conv.convolution_op(x, w, b, v(stride), v(padding), v(dilation), transposed,
                                      v(output_padding), groups)


def _conv_backward(go, x, w, *, nsp, stride=1, padding=0, dilation=1, transposed=False,
                   output_padding=0, groups=1, mask=(True, True, True)):
    v = (lambda a: [a] * nsp)
    oc = go.shape[1]
    return _ops().conv.convolution_backward_op(go, x, w, [oc], v(stride), v(padding),
                                               v(dilation), transposed, v(output_padding),
                                               groups, list(mask))


C, T = "contiguous", "transposed"
CONV_CASES = [
    ("1d stride 2 pad 1", [((2, 3, 9), C), ((4, 3, 3), C), ((4,), C)],
     dict(nsp=1, stride=2, padding=1)),
    ("2d groups 2 dilation 2", [((2, 4, 7, 6), C), ((6, 2, 3, 2), T), ((6,), C)],
     dict(nsp=2, groups=2, dilation=2)),
    ("2d transposed input", [((1, 2, 5, 5), T), ((3, 2, 2, 2), C), ((3,), C)], dict(nsp=2)),
    ("3d pad 1 stride 2", [((1, 2, 4, 5, 4), C), ((3, 2, 2, 3, 2), C), ((3,), C)],
     dict(nsp=3, padding=1, stride=2)),
    ("2d transposed conv, output_padding", [((2, 4, 4, 4), C), ((4, 2, 3, 3), C), ((4,), C)],
     dict(nsp=2, transposed=True, stride=2, padding=1, output_padding=1, groups=2)),
    ("1d transposed conv", [((1, 2, 5), C), ((2, 3, 3), C), ((3,), C)],
     dict(nsp=1, transposed=True, dilation=2)),
]
# (grad_output, input, weight) of the same geometries
CONV_BACKWARD_CASES = [
    ("1d stride 2 pad 1", [((2, 4, 5), C), ((2, 3, 9), C), ((4, 3, 3), C)],
     dict(nsp=1, stride=2, padding=1)),
    ("2d groups 2 dilation 2", [((2, 6, 3, 4), C), ((2, 4, 7, 6), T), ((6, 2, 3, 2), C)],
     dict(nsp=2, groups=2, dilation=2)),
    ("3d stride 2 pad 1", [((1, 3, 3, 3, 3), C), ((1, 2, 4, 5, 4), C), ((3, 2, 2, 3, 2), C)],
     dict(nsp=3, padding=1, stride=2)),
    ("2d transposed, input grad only", [((2, 4, 8, 8), C), ((2, 4, 4, 4), C), ((4, 2, 3, 3), C)],
     dict(nsp=2, transposed=True, stride=2, padding=1, output_padding=1, groups=2,
          mask=(True, False, False))),
]


def _per_example_grads(x, w, *, nsp, transposed=False, **kw):
    """Per-example gradients of a convolution, input and weight (DP-SGD's and the gradient
    penalty's pattern): ``vmap(grad)`` over the batch runs convolution and convolution_backward
    under vmap with the input batched and the weight not (their batching rules fold the batch
    into N, or into the channels with B times the groups for the weight's gradient)."""
    import ember

    def loss(xi, w):
        out = _conv(xi.unsqueeze(0), w, None, nsp=nsp, transposed=transposed, **kw)
        return (out * out.tanh()).sum()
    return ember.func.vmap(ember.func.grad(loss, argnums=(0, 1)), in_dims=(0, None))(x, w)


PER_EXAMPLE_CASES = [  # (input batch: one example per row, weight)
    ("2d", [((3, 3, 6, 6), C), ((4, 3, 3, 3), C)], dict(nsp=2)),
    ("2d groups 2 stride 2", [((3, 4, 7, 6), T), ((6, 2, 3, 2), C)],
     dict(nsp=2, groups=2, stride=2)),
    ("1d transposed groups 2", [((2, 4, 5), C), ((4, 3, 3), C)],
     dict(nsp=1, transposed=True, groups=2, stride=2, output_padding=1)),
]


# -- losses and prelu with torch's derivatives -------------------------------------------------
def _bce(x, t, w, *, reduction):
    """Probabilities in (0, 1) from the samples' values (a weight that requires grad gets its
    gradient too, beyond torch)."""
    return _ops().loss.binary_cross_entropy_op(x.sigmoid(), t.sigmoid(), w, reduction)


def _bce_backward(go, x, t, w, *, reduction):
    go = go if reduction == 0 else go.sum()
    return _ops().loss.binary_cross_entropy_backward_op(go, x.sigmoid(), t.sigmoid(), w,
                                                        reduction)


def _bce_logits(x, t, w, pw, *, reduction):
    return _ops().loss.binary_cross_entropy_with_logits_op(x, t.sigmoid(), w, pw, reduction)


def _prelu(x, w):
    from ember.ops.elementwise import activation
    return activation.prelu(x, w)


BCE_CASES = [(f"reduction {r}", [((3, 4), C), ((3, 4), T), ((3, 4), C)], dict(reduction=r))
             for r in (0, 1, 2)]
BCE_BACKWARD_CASES = [(f"reduction {r}", [((3, 4), C)] * 4, dict(reduction=r))
                      for r in (0, 1, 2)]
BCE_LOGITS_CASES = [
    ("reduction 1, pos_weight per class", [((3, 4), C), ((3, 4), T), ((3, 4), C), ((4,), C)],
     dict(reduction=1)),
    ("reduction 0", [((2, 5), C), ((2, 5), C), ((2, 5), C), ((2, 5), C)], dict(reduction=0)),
]
PRELU_CASES = [("one weight per channel", [((3, 4), C), ((4,), C)], {}),
               ("one weight", [((2, 3, 5), T), ((1,), C)], {})]


# -- pooling ------------------------------------------------------------------------------------
def _pool_args(nsp, k, s, p, d):
    return [k] * nsp, [s] * nsp, [p] * nsp, [d] * nsp


def _max_pool(x, *, k=2, s=2, p=0, d=1, ceil_mode=False):
    nsp = x.ndim - 2
    return _ops().pool.MAX_POOL[nsp](x, *_pool_args(nsp, k, s, p, d), ceil_mode)


def _max_pool_backward(go, x, *, k=2, s=2, p=0, d=1, ceil_mode=False):
    import ember
    nsp = x.ndim - 2
    args = _pool_args(nsp, k, s, p, d)
    with ember.no_grad():
        _, idx = _ops().pool.MAX_POOL[nsp](x, *args, ceil_mode)
    op = getattr(_ops().pool, f"max_pool{nsp}d_with_indices_backward_op")
    return op(go, x, *args, ceil_mode, idx)


def _avg_pool(x, *, k=2, s=2, p=0, ceil_mode=False, include=True, divisor=None):
    nsp = x.ndim - 2
    a = _pool_args(nsp, k, s, p, 1)[:3]
    return _ops().pool.AVG_POOL[nsp](x, *a, ceil_mode, include, divisor)


def _avg_pool_backward(go, x, *, k=2, s=2, p=0, ceil_mode=False, include=True, divisor=None):
    nsp = x.ndim - 2
    a = _pool_args(nsp, k, s, p, 1)[:3]
    op = getattr(_ops().pool, f"avg_pool{nsp}d_backward_op")
    return op(go, x, *a, ceil_mode, include, divisor)


def _adaptive_avg(x, *, out):
    return _ops().pool.ADAPTIVE_AVG[x.ndim - 2](x, list(out))


def _adaptive_avg_backward(go, x):
    return getattr(_ops().pool, f"adaptive_avg_pool{x.ndim - 2}d_backward_op")(go, x)


def _adaptive_max(x, *, out):
    return _ops().pool.ADAPTIVE_MAX[x.ndim - 2](x, list(out))


def _adaptive_max_backward(go, x):
    import ember
    nsp = x.ndim - 2
    with ember.no_grad():
        _, idx = _ops().pool.ADAPTIVE_MAX[nsp](x, list(go.shape[2:]))
    return getattr(_ops().pool, f"adaptive_max_pool{nsp}d_backward_op")(go, x, idx)


# -- normalisation ------------------------------------------------------------------------------
def _batch_norm(x, w, b, *, training, stats=False):
    import ember
    c = x.shape[1]
    rm = ember.linspace(-0.5, 0.5, c, dtype=x.dtype, device=x.device)
    rv = ember.linspace(0.5, 1.5, c, dtype=x.dtype, device=x.device)
    out = _ops().native_batch_norm(x, w, b, rm, rv, training, 0.3, 1e-5)
    # the saved statistics are not differentiable outputs: the gradient entries take output 0
    return (out + (rm, rv)) if stats else out[0]


def _batch_norm_backward(go, x, w, *, training):
    import ember
    c = x.shape[1]
    rm = ember.linspace(-0.5, 0.5, c, dtype=x.dtype, device=x.device)
    rv = ember.linspace(0.5, 1.5, c, dtype=x.dtype, device=x.device)
    with ember.no_grad():
        _, sm, si = _ops().native_batch_norm(x.detach(), w.detach(), None, rm, rv, training,
                                             0.1, 1e-5)
    return _ops().norm.native_batch_norm_backward_op(
        go, x, w, rm, rv, sm if training else None, si if training else None, training, 1e-5,
        [True, True, True])


def _layer_norm(x, w, b, *, k, stats=False):
    out = _ops().native_layer_norm(x, list(x.shape[x.ndim - k:]), w, b, 1e-5)
    return out if stats else out[0]


def _layer_norm_backward(go, x, w, *, k):
    import ember
    ns = list(x.shape[x.ndim - k:])
    with ember.no_grad():
        _, mean, rstd = _ops().native_layer_norm(x.detach(), ns, None, None, 1e-5)
    return _ops().norm.native_layer_norm_backward_op(go, x, ns, mean, rstd, w, w,
                                                     [True, True, True])


def _group_norm(x, w, b, *, groups, stats=False):
    n, c = x.shape[:2]
    hxw = x.numel() // (n * c)
    out = _ops().native_group_norm(x, w, b, n, c, hxw, groups, 1e-5)
    return out if stats else out[0]


def _group_norm_backward(go, x, w, *, groups):
    import ember
    n, c = x.shape[:2]
    hxw = x.numel() // (n * c)
    with ember.no_grad():
        _, mean, rstd = _ops().native_group_norm(x.detach(), None, None, n, c, hxw, groups, 1e-5)
    return _ops().norm.native_group_norm_backward_op(go, x, mean, rstd, w, n, c, hxw, groups,
                                                     [True, True, True])


def _nll_samples(dtype):
    import ember
    for i, (reduction, ignore) in enumerate([(1, -100), (2, 2), (0, -100)]):
        def build(dev, reduction=reduction, ignore=ignore, i=i):
            x = make_tensor(300 + i, (5, 4), dtype, dev, low=-3.0, high=0.0)
            t = ember.tensor([0, 3, 2, 1, 2], device=dev)
            w = make_tensor(310 + i, (4,), dtype, dev, low=0.5, high=1.5)
            # the class weights are not differentiable (as in PyTorch): a keyword argument,
            # which the gradient checks leave alone
            return (x, t), dict(weight=w, reduction=reduction, ignore_index=ignore)
        yield SampleInput(f"{dtype} [5,4] reduction={reduction} ignore_index={ignore}", build)


def _nll_forward(x, t, *, weight, reduction, ignore_index):
    return _ops().loss.nll_loss_forward_op(x, t, weight, reduction, ignore_index)[0]


def _nll_backward(x, t, *, weight, reduction, ignore_index):
    w = weight
    import ember
    with ember.no_grad():
        _, total = _ops().loss.nll_loss_forward_op(x.detach(), t, w.detach(), reduction,
                                                   ignore_index)
    go = (x[:, 0] * 2 + 1) if reduction == 0 else (x.sum() * 0 + 1.5)
    return _ops().loss.nll_loss_backward_op(go, x, t, w, reduction, ignore_index, total)


def _regression(name):
    def loss(x, t, *, reduction, **param):
        return getattr(_ops().loss, f"{name}_op")(x, t, reduction, *param.values())
    return loss


def _regression_backward(name):
    def backward(go, x, t, *, reduction, **param):
        go = go if reduction == 0 else go.sum()
        return getattr(_ops().loss, f"{name}_backward_op")(go, x, t, reduction,
                                                          *param.values())
    return backward


# differences over [-3, 3): both pieces of smooth_l1 (beta 0.5) and huber (delta 1.2)
REGRESSION_CASES = [(f"reduction {r}", [((3, 4), C), ((3, 4), T)], dict(reduction=r))
                    for r in (0, 1, 2)]
REGRESSION_BACKWARD_CASES = [(f"reduction {r}", [((3, 4), C), ((3, 4), C), ((3, 4), T)],
                              dict(reduction=r)) for r in (0, 1, 2)]


def _with(cases, **param):
    return [(f"{desc} {param}", operands, dict(kw, **param)) for desc, operands, kw in cases]


POOL2 = [((2, 3, 6, 7), C)]
POOL3 = [((1, 2, 4, 5, 4), C)]
OPS = [
    OpInfo("nll_loss_forward", _nll_forward, _nll_samples, dtypes=FLOATS,
           covers=("nll_loss_forward",), tolerances=dict(LOOSE)),
    OpInfo("nll_loss_backward", _nll_backward, _nll_samples, dtypes=FLOATS,
           covers=("nll_loss_backward",), tolerances=dict(LOOSE)),
    _entry("binary_cross_entropy", _bce, *BCE_CASES),
    _entry("binary_cross_entropy_backward", _bce_backward, *BCE_BACKWARD_CASES),
    _entry("binary_cross_entropy_with_logits", _bce_logits, *BCE_LOGITS_CASES),
    _entry("mse_loss", _regression("mse_loss"), *REGRESSION_CASES),
    _entry("mse_loss_backward", _regression_backward("mse_loss"), *REGRESSION_BACKWARD_CASES),
    _entry("smooth_l1_loss", _regression("smooth_l1_loss"),
           *_with(REGRESSION_CASES, beta=0.5)),
    _entry("smooth_l1_loss_backward", _regression_backward("smooth_l1_loss"),
           *_with(REGRESSION_BACKWARD_CASES, beta=0.5)),
    _entry("huber_loss", _regression("huber_loss"), *_with(REGRESSION_CASES, delta=1.2)),
    _entry("huber_loss_backward", _regression_backward("huber_loss"),
           *_with(REGRESSION_BACKWARD_CASES, delta=1.2)),
    _entry("prelu", _prelu, *PRELU_CASES, covers=("_prelu_kernel", "_prelu_kernel_backward")),
    _entry("convolution", _conv, *CONV_CASES),
    _entry("convolution_backward", _conv_backward, *CONV_BACKWARD_CASES),
    _entry("convolution per-example gradients (vmap of grad)", _per_example_grads,
           *PER_EXAMPLE_CASES, covers=("convolution", "convolution_backward")),
    _entry("max_pool2d_with_indices", _max_pool,
           ("k2", POOL2, {}), ("k3 s2 p1 ceil", [((1, 2, 7, 6), T)],
                               dict(k=3, s=2, p=1, ceil_mode=True)),
           ("k2 s1 dilation 2", POOL2, dict(k=2, s=1, d=2))),
    _entry("max_pool3d_with_indices", _max_pool,
           ("k2", POOL3, {}), ("k3 s2 p1 ceil", POOL3, dict(k=3, s=2, p=1, ceil_mode=True))),
    _entry("max_pool2d_with_indices_backward", _max_pool_backward,
           ("k2", [((2, 3, 3, 3), C)] + POOL2, {}),
           ("k3 s1 p1 (overlapping)", [((2, 3, 6, 7), C)] + POOL2, dict(k=3, s=1, p=1))),
    _entry("max_pool3d_with_indices_backward", _max_pool_backward,
           ("k2 s1", [((1, 2, 3, 4, 3), C)] + POOL3, dict(k=2, s=1))),
    _entry("avg_pool2d", _avg_pool,
           ("k2", POOL2, {}),
           ("k3 s2 p1 ceil exclude pad", [((1, 2, 7, 6), T)],
            dict(k=3, s=2, p=1, ceil_mode=True, include=False)),
           ("divisor 3", POOL2, dict(divisor=3))),
    _entry("avg_pool3d", _avg_pool, ("k2 s1 p1", POOL3, dict(k=2, s=1, p=1))),
    _entry("avg_pool2d_backward", _avg_pool_backward,
           ("k3 s2 p1 ceil exclude pad", [((1, 2, 4, 4), C), ((1, 2, 7, 6), C)],
            dict(k=3, s=2, p=1, ceil_mode=True, include=False))),
    _entry("avg_pool3d_backward", _avg_pool_backward,
           ("k2", [((1, 2, 2, 2, 2), C)] + POOL3, {})),
    _entry("_adaptive_avg_pool2d", _adaptive_avg,
           ("7x6 -> 3x4", [((2, 3, 7, 6), T)], dict(out=(3, 4))),
           ("global", POOL2, dict(out=(1, 1)))),
    _entry("_adaptive_avg_pool3d", _adaptive_avg, ("-> 2x3x2", POOL3, dict(out=(2, 3, 2)))),
    _entry("_adaptive_avg_pool2d_backward", _adaptive_avg_backward,
           ("7x6 -> 3x4", [((2, 3, 3, 4), C), ((2, 3, 7, 6), C)], {})),
    _entry("_adaptive_avg_pool3d_backward", _adaptive_avg_backward,
           ("-> 2x3x2", [((1, 2, 2, 3, 2), C)] + POOL3, {})),
    _entry("adaptive_max_pool2d", _adaptive_max,
           ("7x6 -> 3x4", [((2, 3, 7, 6), T)], dict(out=(3, 4)))),
    _entry("adaptive_max_pool3d", _adaptive_max, ("-> 2x3x2", POOL3, dict(out=(2, 3, 2)))),
    _entry("adaptive_max_pool2d_backward", _adaptive_max_backward,
           ("7x6 -> 3x4", [((2, 3, 3, 4), C), ((2, 3, 7, 6), C)], {})),
    _entry("adaptive_max_pool3d_backward", _adaptive_max_backward,
           ("-> 2x3x2", [((1, 2, 2, 3, 2), C)] + POOL3, {})),
    _entry("native_batch_norm", _batch_norm,
           ("training", [((4, 3, 5), C), ((3,), C), ((3,), C)], dict(training=True)),
           ("eval", [((4, 3, 2, 2), T), ((3,), C), ((3,), C)], dict(training=False))),
    _entry("native_batch_norm statistics", _batch_norm,
           ("training", [((4, 3, 5), C), ((3,), C), ((3,), C)],
            dict(training=True, stats=True)),
           ("eval", [((4, 3, 5), C), ((3,), C), ((3,), C)], dict(training=False, stats=True)),
           covers=("native_batch_norm",), differentiable=False),
    _entry("native_batch_norm_backward", _batch_norm_backward,
           ("training", [((4, 3, 5), C), ((4, 3, 5), C), ((3,), C)], dict(training=True)),
           ("eval", [((2, 3, 2, 2), C), ((2, 3, 2, 2), C), ((3,), C)], dict(training=False))),
    _entry("native_layer_norm", _layer_norm,
           ("[4,6]", [((4, 6), C), ((6,), C), ((6,), C)], dict(k=1)),
           ("[2,3,4] over 2 dims", [((2, 3, 4), T), ((3, 4), C), ((3, 4), C)], dict(k=2))),
    _entry("native_layer_norm statistics", _layer_norm,
           ("[2,3,4] over 2 dims", [((2, 3, 4), C), ((3, 4), C), ((3, 4), C)],
            dict(k=2, stats=True)), covers=("native_layer_norm",), differentiable=False),
    _entry("native_layer_norm_backward", _layer_norm_backward,
           ("[3,5]", [((3, 5), C), ((3, 5), C), ((5,), C)], dict(k=1))),
    _entry("native_group_norm", _group_norm,
           ("[2,6,4] 3 groups", [((2, 6, 4), C), ((6,), C), ((6,), C)], dict(groups=3)),
           ("[2,4,2,3] 2 groups", [((2, 4, 2, 3), T), ((4,), C), ((4,), C)], dict(groups=2))),
    _entry("native_group_norm statistics", _group_norm,
           ("[2,6,4] 3 groups", [((2, 6, 4), C), ((6,), C), ((6,), C)],
            dict(groups=3, stats=True)), covers=("native_group_norm",), differentiable=False),
    _entry("native_group_norm_backward", _group_norm_backward,
           ("[2,4,3] 2 groups", [((2, 4, 3), C), ((2, 4, 3), C), ((4,), C)], dict(groups=2))),
]
