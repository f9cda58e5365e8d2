"""``ASGD``: averaged stochastic gradient descent (Polyak & Juditsky, 1992), following PyTorch's
update: SGD with a decaying step size ``eta`` and a running average ``ax`` of the iterates that
starts at step ``t0``.

``eta`` and ``mu`` are host scalars of the state (0-d CPU tensors in the step counter's dtype,
like PyTorch's non-capturable ones), so reading them never synchronizes a device."""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .optimizer import (Optimizer, as_real, bump, check_hparams, check_impl_flags, decayed_grad,
                        host_value, impl_defaults, step_counter)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    _host_state_keys = ("step", "eta", "mu")
    _group_defaults = {"maximize": False, **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_hparams("ASGD", lr, weight_decay=weight_decay)
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group, params, grads):
        states = [self._lazy_state(p, zeros=("ax",), eta=group["lr"], mu=1.0)
                  for p in params]
        for state in states:         # a plain number from an old state dict
            for key in ("eta", "mu"):
                if not isinstance(state[key], Tensor):
                    state[key] = step_counter(host_value(state[key]))
        asgd(params, grads, [s["ax"] for s in states],
             [s["mu"] for s in states], [s["eta"] for s in states],
             [s["step"] for s in states], foreach=group["foreach"],
             maximize=group["maximize"], differentiable=group["differentiable"],
             capturable=group["capturable"], lambd=group["lambd"], lr=group["lr"],
             t0=group["t0"], alpha=group["alpha"], weight_decay=group["weight_decay"])


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False,
         differentiable=False, capturable=False, has_complex=False, *, lambd, lr, t0, alpha,
         weight_decay):
    """``torch.optim.asgd.asgd``: one ASGD step over lists, in place (``etas``/``mus``/step
    counts included). ``ASGD.step`` calls this. ember has one (single-tensor) implementation;
    ``foreach=True`` only changes how the new ``etas``/``mus`` round, as PyTorch's does."""
    for i, p in enumerate(params):
        step = bump(state_steps[i])
        grad = decayed_grad(p, grads[i], weight_decay, maximize)
        param, grad, ax = as_real(p), as_real(grad), as_real(axs[i])
        eta = host_value(etas[i])
        param.mul_(1 - lambd * eta)
        param.add_(grad, alpha=-eta)
        mu = host_value(mus[i])
        if mu != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        eta, mu = lr / ((1 + lambd * lr * step) ** alpha), 1 / max(1, step - t0)
        if foreach:                      # PyTorch's multi-tensor update: in the counts' dtype
            etas[i].fill_(eta)
            mus[i].fill_(mu)
        else:                            # its single-tensor one: through a default-dtype scalar
            etas[i].fill_(_as_default_scalar(eta))
            mus[i].fill_(_as_default_scalar(mu))


def _as_default_scalar(value):
    """``value`` rounded as ``torch.as_tensor(value)`` stores it (the default dtype, as
    ``step_counter``'s: float64 or float32)."""
    return value if _dtype.get_default_dtype() is _dtype.float64 else float(np.float32(value))
