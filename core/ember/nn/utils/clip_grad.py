"""Gradient clipping: ``clip_grad_norm_`` (any p-norm, inf included) and ``clip_grad_value_``.

The total norm and the scale stay on the gradients' device (no host round trip) unless
``error_if_nonfinite`` asks for a check.
"""
from __future__ import annotations

import math
import warnings

from ..._tensor import Tensor
from ...dispatch.grad_mode import no_grad
from ...ops.factories import tensor
from ...ops.foreach import _foreach_mul_, _foreach_norm
from ...ops.shape import stack
from ..._warn import user_stacklevel

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _vector_norm(t, p):
    flat = t.reshape(-1)
    if p == math.inf:
        return flat.abs().amax()
    if p == -math.inf:
        return flat.abs().amin()
    if p == 0:
        return (flat != 0).sum().to(t.dtype)
    return flat.abs().pow(p).sum().pow(1.0 / p) if p != 2 else (flat * flat).sum().sqrt()


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of ``tensors`` (as if they were concatenated into one vector)."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = [t for t in tensors if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        device = tensors[0].device
        norms = []
        for group in _by_device_and_dtype(tensors):
            if group[0].is_floating_point() or group[0].is_complex():
                # one multi-tensor op per device and dtype (torch's _foreach_norm)
                found = _foreach_norm(group, norm_type)
            else:
                found = [_vector_norm(t, norm_type) for t in group]
            norms.extend(n.to(device) for n in found)
        total = _vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           f"is non-finite, so it cannot be clipped. To disable this error and "
                           f"scale the gradients by the non-finite norm anyway, set "
                           f"`error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by ``min(1, max_norm / (total_norm + 1e-6))`` in place."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for group in _by_device_and_dtype(grads):
            scale = coef.to(group[0].device, group[0].dtype)
            if group[0].is_floating_point() or group[0].is_complex():
                _foreach_mul_(group, scale)       # one multi-tensor op per device and dtype
            else:
                for g in group:
                    g.mul_(scale)


def _by_device_and_dtype(tensors):
    """The tensors grouped by (device, dtype), in first-seen order."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return list(groups.values())


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Rescale the gradients so their total ``norm_type`` norm is at most ``max_norm``; returns
    the total norm before clipping. ``foreach`` is accepted and ignored (one code path)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=user_stacklevel())
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
