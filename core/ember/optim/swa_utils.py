"""``ember.optim.swa_utils``: weight averaging, following ``torch.optim.swa_utils``.

``AveragedModel`` keeps a copy of a model whose parameters (and, with ``use_buffers=True``, its
buffers) are a running average of the model's: the equal-weight SWA average by default, an
exponential moving average with ``multi_avg_fn=get_ema_multi_avg_fn(decay)`` (or any per-tensor
``avg_fn`` / list-at-once ``multi_avg_fn``). ``SWALR`` anneals each group's lr to a constant SWA
rate; ``update_bn`` recomputes BatchNorm statistics for the averaged weights with one pass over
the data.
"""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _format_param
from .. import _dtype
from ..ops.factories import tensor
from .optimizer import lerp_
from .._warn import user_stacklevel

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def _is_inexact(t):
    return t.is_floating_point() or t.is_complex()


def _lerp_(t, end, weight):
    """t += weight * (end - t) (PyTorch's ``_foreach_lerp_`` for one tensor)."""
    return lerp_(t, end, weight)


def get_ema_multi_avg_fn(decay=0.999):
    """An exponential moving average over lists of tensors: ema = decay * ema + (1 - decay) * p,
    updated in place."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _num_averaged):
        with no_grad():
            if _is_inexact(ema_param_list[0]):
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    _lerp_(p_ema, p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """The equal-weight running average over lists of tensors, updated in place."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = _count(num_averaged)
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if _is_inexact(p_avg):
                    _lerp_(p_avg, p_model, 1 / (n + 1))
                else:
                    # integer running averages: PyTorch's foreach path adds the true division
                    p_avg.copy_(p_avg + (p_model - p_avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An exponential moving average of one tensor, returned (not in place)."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The equal-weight running average of one tensor, returned (not in place)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (_count(num_averaged) + 1)

    return swa_update


def _count(num_averaged):
    return int(num_averaged.item()) if isinstance(num_averaged, Tensor) else num_averaged


class AveragedModel(Module):
    """A deep copy of ``model`` (on ``device`` if given) whose parameters are averaged by
    ``update_parameters(model)``; ``n_averaged`` (an int64 buffer) counts the updates. The first
    update copies the model's values. Without ``use_buffers`` the buffers are copied from the
    model at each update; with it they are averaged like the parameters."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=_int64(), device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current values into the average."""
        with no_grad():
            self._update(model)

    def _update(self, model):
        if self.use_buffers:
            self_params = itertools.chain(self.module.parameters(), self.module.buffers())
            model_params = itertools.chain(model.parameters(), model.buffers())
        else:
            self_params, model_params = self.parameters(), model.parameters()
        averaged, current = [], []
        copy_param = int(self.n_averaged.item()) == 0
        for p_avg, p_model in zip(self_params, model_params):
            p_model_ = p_model.detach().to(p_avg.device)
            averaged.append(p_avg.detach())
            current.append(p_model_)
            if copy_param:
                p_avg.detach().copy_(p_model_)
        if not copy_param:
            if self.multi_avg_fn is not None:
                # one call per (device, dtype) group, like PyTorch's grouped foreach path
                groups = {}
                for p_avg, p_model in zip(averaged, current):
                    avg_list, model_list = groups.setdefault((p_avg.device, p_avg.dtype),
                                                             ([], []))
                    avg_list.append(p_avg)
                    model_list.append(p_model)
                for (dev, _), (avg_list, model_list) in groups.items():
                    self.multi_avg_fn(avg_list, model_list, self.n_averaged.to(dev))
            else:
                # PyTorch's per-tensor path (its CPU path): ember's ops are single-tensor
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for p_avg, p_model in zip(averaged, current):
                    p_avg.copy_(avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
        if not self.use_buffers:
            # the buffers (e.g. BatchNorm statistics) follow the model; update_bn can
            # recompute them for the averaged weights
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged.add_(1)


def _int64():
    return _dtype.int64


def update_bn(loader, model, device=None):
    """Recompute the running statistics of every BatchNorm in ``model`` with one pass over
    ``loader`` (batches, or ``(input, ...)`` tuples/lists whose first item is the input), as a
    cumulative average; the model's train/eval mode is restored afterwards."""
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for inp in loader:
            if isinstance(inp, (list, tuple)):
                inp = inp[0]
            if device is not None:
                inp = inp.to(device)
            model(inp)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr from its current value to ``swa_lr`` over ``anneal_epochs``
    epochs (cosine or linear), then hold it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=user_stacklevel())
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # undo the previous annealing step to recover the lr the schedule started from
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
