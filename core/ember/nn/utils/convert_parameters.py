"""``parameters_to_vector`` / ``vector_to_parameters``."""
from __future__ import annotations

from ..._tensor import Tensor
from ...ops.shape import cat


def _check_same_device(param, old_device):
    if old_device is not None and param.device != old_device:
        raise TypeError(f"Found two parameters on different devices, this is currently not "
                        f"supported (got {old_device} and {param.device})")
    return param.device


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (a differentiable copy)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    device, parts = None, []
    for p in parameters:
        device = _check_same_device(p, device)
        parts.append(p.reshape(-1))
    if not parts:
        raise RuntimeError("parameters_to_vector: expected at least one parameter")
    return cat(parts)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D ``vec`` into the parameters (their ``.data``)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if vec.ndim != 1:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vector, got shape "
                           f"{list(vec.shape)}")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if total != vec.numel():
        raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements but the "
                           f"parameters need {total}")
    device, offset = None, 0
    for p in parameters:
        device = _check_same_device(p, device)
        n = p.numel()
        p.data = vec[offset:offset + n].view_as(p).data
        offset += n
