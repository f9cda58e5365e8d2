"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum, L2 weight
decay and maximize, following PyTorch's update (``torch.optim.SGD``). Three implementations
with the same results (``optimizer.implementation``): ``fused=True`` runs one ``_fused_sgd_``
op per parameter group, ``foreach`` (the default) a few ``_foreach_*`` ops per group, and
``foreach=False`` (or ``differentiable=True``) the single-tensor loop."""
from __future__ import annotations

from ..ops import foreach as _fe
from .._tensor import Tensor
from .optimizer import (Optimizer, add_scaled_, check_hparams, check_impl_flags,
                        check_no_grad_scaling, functional_implementation, impl_defaults,
                        implementation, lr_on)
from ..ops.factories import zeros_like

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    _group_defaults = {"nesterov": False, "maximize": False, "foreach": None,
                       "differentiable": False, "fused": None}

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        check_hparams("SGD", lr, tensor_lr=True, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_impl_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        **impl_defaults(foreach, fused, differentiable))
        super().__init__(params, defaults)

    def _step_group(self, group, params, grads):
        momentum = group["momentum"]
        states = [self.state[p] for p in params] if momentum else []
        bufs = [state.get("momentum_buffer") for state in states]
        new = [i for i, buf in enumerate(bufs) if buf is None]
        impl = implementation(group)
        sgd(params, grads, bufs, foreach=impl == "foreach",
            fused=impl == "fused", weight_decay=group["weight_decay"], momentum=momentum,
            lr=group["lr"], dampening=group["dampening"], nesterov=group["nesterov"],
            maximize=group["maximize"])
        for i in new:                # the buffers this first step made
            states[i]["momentum_buffer"] = bufs[i]


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov,
        maximize):
    """``torch.optim.sgd.sgd``: one SGD step over lists, in place. ``momentum_buffer_list``
    holds each parameter's buffer or None (then the step creates it and stores it in the
    list, as PyTorch's). ``SGD.step`` calls this."""
    check_no_grad_scaling("sgd", grad_scale, found_inf)
    impl = functional_implementation(foreach, fused)
    if impl == "single":
        _single_tensor_sgd(params, d_p_list, momentum_buffer_list, weight_decay=weight_decay,
                           momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                           maximize=maximize)
    elif params:
        _multi_tensor_sgd(params, d_p_list, momentum_buffer_list, fused=impl == "fused",
                          weight_decay=weight_decay, momentum=momentum, lr=lr,
                          dampening=dampening, nesterov=nesterov, maximize=maximize)


def _single_tensor_sgd(params, grads, bufs, *, weight_decay, momentum, lr, dampening, nesterov,
                       maximize):
    for i, p in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        if momentum != 0:
            buf = bufs[i]
            if buf is None:
                buf = bufs[i] = grad.clone().detach()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        add_scaled_(p, grad, lr_on(lr, p.device))


def _multi_tensor_sgd(params, grads, bufs, *, fused, weight_decay, momentum, lr, dampening,
                      nesterov, maximize):
    """The update in a few multi-tensor ops: parameters whose momentum buffer is new (first
    step: the buffer becomes the gradient) and the others, separately."""
    first, later = [], []
    for i, (p, g) in enumerate(zip(params, grads)):
        if momentum == 0:
            later.append((p, g, None))
            continue
        buf = bufs[i]
        if buf is None:
            buf = bufs[i] = zeros_like(p)
            first.append((p, g, buf))
        else:
            later.append((p, g, buf))
    for items, is_first in ((first, True), (later, False)):
        if not items:
            continue
        ps, gs, bs = (list(x) for x in zip(*items))
        bs = bs if momentum != 0 else []
        if fused:
            _fe._fused_sgd_(ps, gs, bs, weight_decay=weight_decay, momentum=momentum,
                            lr=float(lr.item()) if isinstance(lr, Tensor) else lr,
                            dampening=dampening, nesterov=nesterov, maximize=maximize,
                            is_first_step=is_first)
        else:
            _foreach_sgd(ps, gs, bs, is_first, weight_decay=weight_decay, momentum=momentum,
                         lr=lr, dampening=dampening, nesterov=nesterov, maximize=maximize)


def _foreach_sgd(params, grads, bufs, is_first, *, weight_decay, momentum, lr, dampening,
                 nesterov, maximize):
    if maximize:
        grads = _fe._foreach_mul(grads, -1)
    if weight_decay != 0:
        grads = _fe._foreach_add(grads, params, alpha=weight_decay)
    if momentum != 0:
        if is_first:
            _fe._foreach_add_(bufs, grads)  # the zero buffers become the gradients
        else:
            _fe._foreach_mul_(bufs, momentum)
            _fe._foreach_add_(bufs, grads, alpha=1 - dampening)
        grads = _fe._foreach_add(grads, bufs, alpha=momentum) if nesterov else bufs
    if isinstance(lr, (int, float)):
        _fe._foreach_add_(params, grads, alpha=-lr)
    else:                            # a tensor lr (updated in place by a scheduler)
        for p, g in zip(params, grads):
            add_scaled_(p, g, lr_on(lr, p.device))
