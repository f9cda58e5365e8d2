"""Scatter inputs across devices and gather outputs back (``torch.nn.parallel.scatter_gather``):
tensors are split along ``dim`` in ``Tensor.chunk``'s sizes and moved with differentiable
copies, so gradients flow back to the inputs; lists, tuples, dicts and dataclasses are walked;
any other object is given to every device as is."""
from __future__ import annotations

import dataclasses
import warnings

from ..._device import as_device
from ..._tensor import Tensor
from ...ops.shape import cat
from ..._warn import user_stacklevel

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """``inputs`` split into one piece per device (fewer when a tensor has fewer slices)."""
    devices = [as_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            if obj.ndim == 0:
                raise ValueError("scatter: can't split a 0-d tensor along a dimension; give "
                                 "tensors with a batch dimension")
            pieces = obj.chunk(len(devices), dim)
            return [p.to(d) for p, d in zip(pieces, devices)]
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # noqa: F841 - break the closure's reference cycle (as torch does)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """Scatter positional and keyword arguments; the shorter list is padded with empty ones."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """The replicas' outputs joined along ``dim`` on ``target_device`` (0-d outputs become a
    vector, with PyTorch's warning)."""
    target = as_device(target_device)

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            if all(t.ndim == 0 for t in outs) and dim == 0:
                warnings.warn("Was asked to gather along dimension 0, but all input tensors were "
                              "scalars; will instead unsqueeze and return a vector.",
                              UserWarning, stacklevel=user_stacklevel())
                outs = [t.unsqueeze(0) for t in outs]
            return cat([t.to(target) for t in outs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if dataclasses.is_dataclass(out) and not isinstance(out, type):
            return type(out)(**{f.name: gather_map([getattr(o, f.name) for o in outs])
                                for f in dataclasses.fields(out)})
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None  # noqa: F841
