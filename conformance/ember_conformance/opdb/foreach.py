"""Entries for ``ember.ops.foreach`` (multi-tensor ``_foreach_*`` ops and the fused optimizer
steps) and for the fused activation backward ops (``threshold_backward``, ``tanh_backward``,
``sigmoid_backward``, ``gelu_backward``).

The in-place multi-tensor ops write their first list: each entry copies its inputs (so the
samples stay untouched), runs the op and returns the written tensors, whose values are compared
with the CPU's. Lists mix shapes and layouts (a transposed and a strided tensor), as an
optimizer's parameter list does.
"""
from __future__ import annotations

import ember

from . import FLOATS, OpInfo, SampleInput, make_tensor

SHAPES = [((3, 4), "contiguous"), ((5,), "strided"), ((2, 3), "transposed")]


def _lists(k, positive=False):
    """Samples of ``k`` lists of three tensors each."""
    def gen(dtype):
        def build(dev):
            lists = []
            for j in range(k):
                lo = 0.5 if positive else -1.5
                lists.append([make_tensor(10 * j + i, s, dtype, dev, low=lo, high=1.5, layout=lay)
                              for i, (s, lay) in enumerate(SHAPES)])
            return tuple(lists), {}
        yield SampleInput(f"{dtype} {k} lists of {[s for s, _ in SHAPES]}", build)
    return gen


def _copies(xs):
    return [x.clone() for x in xs]


def _inplace(fn):
    def run(a, *rest, **kw):
        a = _copies(a)
        fn(a, *rest, **kw)
        return a
    return run


def _entry(name, fn, k, covers, positive=False):
    return OpInfo(name, fn, _lists(k, positive), dtypes=FLOATS, covers=covers,
                  differentiable=False, tolerances={"float32": (1e-5, 1e-6)})


def _sgd(params, grads, bufs, **kw):
    params, bufs = _copies(params), _copies(bufs)
    ember._fused_sgd_(params, grads, bufs, weight_decay=0.01, momentum=0.9, lr=0.1,
                      dampening=0.1, nesterov=False, maximize=False, is_first_step=False, **kw)
    return params + bufs


def _adam(name, amsgrad):
    def run(params, grads, m, v):
        params, m, vv = _copies(params), _copies(m), [x.abs() for x in v]
        maxs = [x * 1.5 for x in vv] if amsgrad else []
        getattr(ember, name)(params, grads, m, vv, maxs, [3.0] * len(params), lr=0.01,
                             beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8, amsgrad=amsgrad,
                             maximize=True)
        return params + m + vv + maxs
    return run


def _adam_capturable(amsgrad, tensor_lr):
    def run(params, grads, m, v):
        params, m, vv = _copies(params), _copies(m), [x.abs() for x in v]
        maxs = [x * 1.5 for x in vv] if amsgrad else []
        dev, dt = params[0].device, params[0].dtype
        steps = [ember.full((), 2.0, dtype=dt, device=dev) for _ in params]
        lr = ember.tensor(0.01, dtype=dt, device=dev) if tensor_lr else 0.01
        ember._fused_adam_capturable_(params, grads, m, vv, maxs, steps, lr=lr, beta1=0.9,
                                      beta2=0.99, weight_decay=0.1, eps=1e-8, amsgrad=amsgrad,
                                      maximize=True, decoupled=not amsgrad)
        return params + m + vv + maxs + steps
    return run


def _binary_samples(positive_second=False):
    def gen(dtype):
        for i, (shape, layout) in enumerate([((3, 4), "contiguous"), ((2, 5), "transposed")]):
            def build(dev, shape=shape, layout=layout, i=i):
                g = make_tensor(50 + i, shape, dtype, dev, layout=layout)
                y = make_tensor(60 + i, shape, dtype, dev, low=-1.0, high=1.0)
                return (g, y), {}
            yield SampleInput(f"{dtype}{list(shape)} {layout}", build)
    return gen


def _backward_op(name, *extra, label=None):
    def run(g, y):
        from ember.ops.elementwise import backward
        return getattr(backward, f"{name}_op")(g, y, *extra)
    return OpInfo(label or name, run, _binary_samples(), dtypes=FLOATS, covers=(name,))


OPS = [
    _entry("_foreach_add_", _inplace(lambda a, b: ember._foreach_add_(a, b, alpha=-0.5)), 2,
           ("_foreach_add_",)),
    _entry("_foreach_add_ scalar", _inplace(lambda a: ember._foreach_add_(a, 0.25)), 1,
           ("_foreach_add_scalar_",)),
    _entry("_foreach_mul_", _inplace(lambda a: ember._foreach_mul_(a, 0.9)), 1,
           ("_foreach_mul_",)),
    _entry("_foreach_div_", _inplace(lambda a: ember._foreach_div_(a, 3.0)), 1,
           ("_foreach_div_",)),
    _entry("_foreach_mul_list_", _inplace(lambda a, b: ember._foreach_mul_(a, b)), 2,
           ("_foreach_mul_list_",)),
    _entry("_foreach_div_list_", _inplace(lambda a, b: ember._foreach_div_(a, b)), 2,
           ("_foreach_div_list_",), positive=True),
    _entry("_foreach_mul_ tensor", _inplace(lambda a: ember._foreach_mul_(
        a, ember.tensor(0.9, dtype=a[0].dtype, device=a[0].device))), 1,
        ("_foreach_mul_tensor_",)),
    _entry("_foreach_norm", lambda a: ember._foreach_norm(a), 1, ("_foreach_norm",)),
    _entry("_foreach_norm inf", lambda a: ember._foreach_norm(a, float("inf")), 1,
           ("_foreach_norm",)),
    _entry("_foreach_lerp_", _inplace(lambda a, b: ember._foreach_lerp_(a, b, 0.1)), 2,
           ("_foreach_lerp_",)),
    _entry("_foreach_lerp_ weight > 0.5", _inplace(lambda a, b: ember._foreach_lerp_(a, b, 0.8)),
           2, ("_foreach_lerp_",)),
    _entry("_foreach_addcmul_",
           _inplace(lambda a, b, c: ember._foreach_addcmul_(a, b, c, 0.3)), 3,
           ("_foreach_addcmul_",)),
    _entry("_foreach_addcdiv_",
           _inplace(lambda a, b, c: ember._foreach_addcdiv_(a, b, c, -0.3)), 3,
           ("_foreach_addcdiv_",), positive=True),
    _entry("_foreach_maximum_", _inplace(lambda a, b: ember._foreach_maximum_(a, b)), 2,
           ("_foreach_maximum_",)),
    _entry("_foreach_sqrt", lambda a: ember._foreach_sqrt(a), 1, ("_foreach_sqrt",),
           positive=True),
    _entry("_fused_sgd_", _sgd, 3, ("_fused_sgd_",)),
    _entry("_fused_adam_", _adam("_fused_adam_", False), 4, ("_fused_adam_",)),
    _entry("_fused_adam_ amsgrad", _adam("_fused_adam_", True), 4, ("_fused_adam_",)),
    _entry("_fused_adamw_", _adam("_fused_adamw_", False), 4, ("_fused_adamw_",)),
    _entry("_fused_adam_capturable_", _adam_capturable(False, True), 4,
           ("_fused_adam_capturable_",)),
    _entry("_fused_adam_capturable_ amsgrad", _adam_capturable(True, False), 4,
           ("_fused_adam_capturable_",)),
    _backward_op("threshold_backward", 0.25),
    _backward_op("tanh_backward"),
    _backward_op("sigmoid_backward"),
    _backward_op("gelu_backward", "none"),
    _backward_op("gelu_backward", "tanh", label="gelu_backward tanh"),
]
