"""``Rprop``: resilient backpropagation (Riedmiller & Braun, 1993), following PyTorch's update:
each coordinate keeps its own step size, grown by ``etas[1]`` while the gradient keeps its sign
and shrunk by ``etas[0]`` when it flips (the update is then skipped for that coordinate)."""
from __future__ import annotations

from .optimizer import (Optimizer, as_real, check_hparams, check_impl_flags, check_state_steps,
                        impl_defaults, neg_if, step_counter, zeros_state)
from ..ops.factories import full_like

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    _group_defaults = {"maximize": False, **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_hparams("Rprop", lr)
        etaminus, etaplus = etas
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"Invalid eta values: {etaminus}, {etaplus}")
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group, params, grads):
        states = []
        for p, grad in zip(params, grads):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = step_counter()
                state["prev"] = zeros_state(p)
                lr = group["lr"]
                state["step_size"] = full_like(grad, complex(lr, lr) if p.is_complex()
                                               else lr)
            states.append(state)
        step_size_min, step_size_max = group["step_sizes"]
        etaminus, etaplus = group["etas"]
        rprop(params, grads, [s["prev"] for s in states],
              [s["step_size"] for s in states], [s["step"] for s in states],
              foreach=group["foreach"], capturable=group["capturable"],
              maximize=group["maximize"], differentiable=group["differentiable"],
              step_size_min=step_size_min, step_size_max=step_size_max, etaminus=etaminus,
              etaplus=etaplus)


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False,
          maximize=False, differentiable=False, has_complex=False, *, step_size_min,
          step_size_max, etaminus, etaplus):
    """``torch.optim.rprop.rprop``: one Rprop step over lists, in place (``prevs``,
    ``step_sizes`` and step counts included). ``Rprop.step`` calls this. ember has one
    (single-tensor) implementation: the ``foreach`` flag is accepted and gives the same
    results."""
    check_state_steps(state_steps)
    for i, p in enumerate(params):
        grad = neg_if(grads[i], maximize)
        state_steps[i].add_(1)
        param, grad = as_real(p), as_real(grad)
        prev, step_size = as_real(prevs[i]), as_real(step_sizes[i])
        # (differentiable: the product must not save prev, which copy_ overwrites)
        sign = (grad * (prev.clone() if differentiable else prev)).sign()
        flipped = sign < 0
        factor = sign.masked_fill(sign > 0, etaplus).masked_fill(flipped, etaminus)
        factor = factor.masked_fill(sign == 0, 1.0)
        if differentiable:
            step_size.copy_((step_size.clone() * factor).clamp(step_size_min, step_size_max))
        else:
            step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        # where the sign flipped, this step moves nothing and forgets the gradient
        grad = grad.masked_fill(flipped, 0)
        param.add_(grad.sign() * step_size, alpha=-1)
        prev.copy_(grad)
