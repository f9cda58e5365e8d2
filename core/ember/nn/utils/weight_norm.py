"""Weight normalization ``w = g * v / ||v||`` and the legacy hook form
``ember.nn.utils.weight_norm`` (deprecated in PyTorch in favour of
``nn.utils.parametrizations.weight_norm``, whose state dicts load either form).

``norm_except_dim(v, pow, dim)`` is PyTorch's: the norm over every dim but ``dim``, kept as
size-1 dims (shape ``[n, 1, 1…]`` for ``dim=0``), and over the whole tensor (a 0-d result) for
``dim=-1`` — PyTorch's special case, which is what ``dim=None`` means here.
"""
from __future__ import annotations

import warnings

from ..._tensor import Tensor
from ..parameter import Parameter
from ..._warn import user_stacklevel

__all__ = ["weight_norm", "remove_weight_norm", "norm_except_dim", "WeightNorm"]


def norm_except_dim(v, pow=2, dim=0):
    if not isinstance(v, Tensor):
        raise TypeError(f"norm_except_dim(): argument 'v' must be Tensor, not "
                        f"{type(v).__name__}")
    if dim == -1:
        return v.norm(pow)
    if not -v.ndim <= dim < v.ndim:
        raise IndexError(f"norm_except_dim: dim {dim} is out of range for a tensor of "
                         f"{v.ndim} dimensions")
    dim = dim % v.ndim
    others = [d for d in range(v.ndim) if d != dim]
    if not others:
        return v.abs() if pow != 0 else (v != 0).to(v.dtype)
    return v.norm(pow, dim=others, keepdim=True)


def _weight_norm(v, g, dim=0):
    """``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of the legacy ``weight_norm``: recomputes ``module.<name>`` from
    ``<name>_g`` and ``<name>_v`` before every forward."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`ember.nn.utils.weight_norm` is deprecated in favor of "
                      "`ember.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=user_stacklevel())
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name, None)
        if not isinstance(weight, Parameter):
            raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter "
                             f"named '{name}'")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Replace ``module.<name>`` by ``<name>_g`` (magnitude, ``norm_except_dim``) and
    ``<name>_v`` (direction) recombined before each forward. Deprecated in PyTorch: prefer
    ``ember.nn.utils.parametrizations.weight_norm``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Turn ``<name>_g``/``<name>_v`` back into one parameter ``<name>``."""
    return remove_hook_of(module, name, WeightNorm, "weight_norm")


def remove_hook_of(module, name, kind, what):
    """Remove the legacy reparametrization hook of class ``kind`` on ``module.<name>``
    (``what`` names it in the error when there is none)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")
