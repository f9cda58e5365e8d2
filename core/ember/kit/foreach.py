"""Multi-tensor kernels for array-module backends: ``_foreach_*`` and the fused optimizer steps.

One kernel call walks the whole list in numpy, in place through each tensor's native view, so
an optimizer step over N parameters costs a few Python-level loops instead of N dispatched ops
per elementwise step. The fused steps do each parameter's whole update with ``out=`` ufuncs on
one scratch buffer. Arithmetic follows ``ember.ops.foreach``'s composites (PyTorch's
single-tensor order), so results match them to rounding.
"""
from __future__ import annotations

from .._fastpath import C as _C
from .binding import bind


def _nat(be, ts):
    return [be.native(t) for t in ts]


def _scalar_for(a, v):
    return v.real if a.dtype.kind != "c" and isinstance(v, complex) else v


_AXPY_CHUNK = 1 << 15   # elements: alpha * b is formed this much at a time


def add_(be, selfs, others, alpha):
    xp = be.xp
    for a, b in zip(_nat(be, selfs), _nat(be, others)):
        if alpha == 1:
            xp.add(a, b, out=a, casting="unsafe")
        elif _C is not None and _C.axpy_(a, b, alpha):   # one compiled pass: csrc/axpy.c
            continue
        elif a.size > _AXPY_CHUNK and a.flags.c_contiguous and b.flags.c_contiguous and \
                a.shape == b.shape:
            # (an optimizer's p.add_(buf, alpha=-lr)): the scaled copy of b in slices, so the
            # step's peak memory holds no temporary of the largest parameter's size
            fa, fb = a.reshape(-1), b.reshape(-1)
            al = _scalar_for(b, alpha)
            tmp = xp.empty(_AXPY_CHUNK, dtype=xp.result_type(fb, al))
            for i in range(0, fa.size, _AXPY_CHUNK):
                t = tmp[:min(_AXPY_CHUNK, fa.size - i)]
                xp.multiply(fb[i:i + t.size], al, out=t)
                xp.add(fa[i:i + t.size], t, out=fa[i:i + t.size], casting="unsafe")
        else:
            xp.add(a, xp.multiply(b, _scalar_for(b, alpha)), out=a, casting="unsafe")


def add_scalar_(be, selfs, scalar):
    xp = be.xp
    for a in _nat(be, selfs):
        xp.add(a, _scalar_for(a, scalar), out=a, casting="unsafe")


def mul_(be, selfs, scalar):
    xp = be.xp
    for a in _nat(be, selfs):
        xp.multiply(a, _scalar_for(a, scalar), out=a, casting="unsafe")


def mul_tensor_(be, selfs, scalar):
    xp = be.xp
    s = be.native(scalar)
    for a in _nat(be, selfs):
        xp.multiply(a, s, out=a, casting="unsafe")


def mul_list_(be, selfs, others):
    xp = be.xp
    for a, b in zip(_nat(be, selfs), _nat(be, others)):
        xp.multiply(a, b, out=a, casting="unsafe")


def div_list_(be, selfs, others):
    xp = be.xp
    for a, b in zip(_nat(be, selfs), _nat(be, others)):
        be.ieee(xp.true_divide, a, b, a)


def norm(be, selfs, ord):
    """Each tensor's vector norm, accumulated like ``linalg.vector_norm``'s kernel (2: the
    square root of the dot product with itself)."""
    xp = be.xp
    out = []
    for t, a in zip(selfs, _nat(be, selfs)):
        flat = a.reshape(-1)
        if ord == 2:
            r = xp.sqrt(xp.dot(flat, flat)) if flat.size else xp.zeros((), a.dtype)
        elif ord == float("inf"):
            r = xp.abs(flat).max() if flat.size else xp.zeros((), a.dtype)
        elif ord == -float("inf"):
            r = xp.abs(flat).min() if flat.size else xp.full((), xp.inf, a.dtype)
        elif ord == 0:
            r = xp.count_nonzero(flat)
        else:
            r = (xp.abs(flat) ** ord).sum() ** (1.0 / ord)
        out.append(be.wrap(xp.asarray(r, dtype=a.dtype).reshape(()), t.device))
    return out


def div_(be, selfs, scalar):
    xp = be.xp
    for a in _nat(be, selfs):
        be.ieee(xp.true_divide, a, _scalar_for(a, scalar), a)


def _lerp_into(xp, a, b, w, tmp=None):
    """a = lerp(a, b, w) with PyTorch's two-sided formula."""
    if w < 0.5:
        d = xp.subtract(b, a, out=tmp)
        d *= w
        a += d
    else:
        xp.subtract(a, b, out=a)
        a *= 1 - w
        a += b


def lerp_(be, selfs, ends, weight):
    xp = be.xp
    for a, b in zip(_nat(be, selfs), _nat(be, ends)):
        _lerp_into(xp, a, b, weight)


def addcmul_(be, selfs, t1, t2, value):
    xp = be.xp
    for a, b, c in zip(_nat(be, selfs), _nat(be, t1), _nat(be, t2)):
        p = xp.multiply(b, c)
        if value != 1:
            p *= value
        xp.add(a, p, out=a, casting="unsafe")


def addcdiv_(be, selfs, t1, t2, value):
    xp = be.xp
    for a, b, c in zip(_nat(be, selfs), _nat(be, t1), _nat(be, t2)):
        q = be.ieee(xp.true_divide, b, c)
        if value != 1:
            q *= value
        xp.add(a, q, out=a, casting="unsafe")


def maximum_(be, selfs, others):
    xp = be.xp
    for a, b in zip(_nat(be, selfs), _nat(be, others)):
        xp.maximum(a, b, out=a)


def sqrt(be, selfs):
    xp = be.xp
    return [be.wrap(be.ieee(xp.sqrt, a), t.device) for a, t in zip(_nat(be, selfs), selfs)]


def fused_sgd_(be, params, grads, bufs, weight_decay, momentum, lr, dampening, nesterov,
               maximize, is_first_step):
    xp = be.xp
    ps, gs = _nat(be, params), _nat(be, grads)
    bs = _nat(be, bufs) if bufs else [None] * len(ps)
    for p, g, buf in zip(ps, gs, bs):
        d = xp.negative(g) if maximize else g
        if weight_decay != 0:
            d = xp.add(d, xp.multiply(p, weight_decay))
        if momentum != 0:
            if is_first_step:
                buf[...] = d
            else:
                buf *= momentum
                buf += d if dampening == 0 else d * (1 - dampening)
            d = d + buf * momentum if nesterov else buf
        if lr == 1:
            p -= d
        else:
            p += d * -lr


def _adam_moments(xp, p, g, m, v, lr, beta1, beta2, weight_decay, maximize, decoupled):
    """Weight decay and the two moment updates of an Adam step (in place); returns a scratch
    array shaped like ``m`` for the rest of the update."""
    d = xp.negative(g) if maximize else g
    if weight_decay != 0:
        if decoupled:
            p *= 1 - lr * weight_decay
        else:
            d = xp.add(d, xp.multiply(p, weight_decay))
    tmp = xp.empty_like(m)
    _lerp_into(xp, m, d, 1 - beta1, tmp)
    v *= beta2
    xp.multiply(d, d, out=tmp)
    tmp *= 1 - beta2
    v += tmp
    return tmp


def _fused_adam(decoupled):
    def kernel(be, params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, lr, beta1, beta2,
               weight_decay, eps, amsgrad, maximize):
        xp = be.xp
        ms = _nat(be, max_sqs) if amsgrad else [None] * len(params)
        for p, g, m, v, mx, step in zip(_nat(be, params), _nat(be, grads), _nat(be, exp_avgs),
                                        _nat(be, exp_avg_sqs), ms, steps):
            tmp = _adam_moments(xp, p, g, m, v, lr, beta1, beta2, weight_decay, maximize,
                                decoupled)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            if amsgrad:
                xp.maximum(mx, v, out=mx)
                xp.sqrt(mx, out=tmp)
            else:
                xp.sqrt(v, out=tmp)
            tmp /= bias_correction2_sqrt
            tmp += eps
            xp.divide(m, tmp, out=tmp)
            tmp *= -(lr / bias_correction1)
            p += tmp
    return kernel


def fused_adam_capturable_(be, params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
                           lr_tensor, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                           decoupled):
    """The capturable update (ops/foreach.py's ``adam_capturable_one``) in array ops: the step
    count and a tensor lr are read where they live, as 0-d arrays in their own dtype."""
    xp = be.xp
    rate = be.native(lr_tensor[0]) if lr_tensor else lr
    ms = _nat(be, max_sqs) if amsgrad else [None] * len(params)
    for p, g, m, v, mx, st in zip(_nat(be, params), _nat(be, grads), _nat(be, exp_avgs),
                                  _nat(be, exp_avg_sqs), ms, _nat(be, steps)):
        st += 1
        tmp = _adam_moments(xp, p, g, m, v, rate, beta1, beta2, weight_decay, maximize,
                            decoupled)
        step_size_neg = -(rate / (1 - beta1 ** st))
        bias_correction2_sqrt = xp.sqrt(1 - beta2 ** st)
        if amsgrad:
            xp.maximum(mx, v, out=mx)
        xp.sqrt(mx if amsgrad else v, out=tmp)
        tmp /= bias_correction2_sqrt * step_size_neg
        tmp += eps / step_size_neg
        xp.divide(m, tmp, out=tmp)
        p += tmp


TABLE = {
    "_foreach_add_": add_, "_foreach_add_scalar_": add_scalar_, "_foreach_mul_": mul_,
    "_foreach_mul_tensor_": mul_tensor_, "_foreach_mul_list_": mul_list_,
    "_foreach_div_list_": div_list_, "_foreach_norm": norm,
    "_foreach_div_": div_, "_foreach_lerp_": lerp_, "_foreach_addcmul_": addcmul_,
    "_foreach_addcdiv_": addcdiv_, "_foreach_maximum_": maximum_, "_foreach_sqrt": sqrt,
    "_fused_sgd_": fused_sgd_, "_fused_adam_": _fused_adam(False),
    "_fused_adamw_": _fused_adam(True), "_fused_adam_capturable_": fused_adam_capturable_,
}


def register(backend) -> None:
    bind(backend, TABLE)
