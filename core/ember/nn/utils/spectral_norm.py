"""The legacy hook form of spectral normalization, ``ember.nn.utils.spectral_norm``:
``module.<name>`` becomes ``<name>_orig / sigma``, sigma estimated by power iteration on the
buffers ``<name>_u``/``<name>_v`` (one or more steps before each forward in training mode).
State dicts hold ``<name>_orig``, ``<name>_u`` and ``<name>_v``, as PyTorch's.
``nn.utils.parametrizations.spectral_norm`` is the parametrization form.
"""
from __future__ import annotations

from ...dispatch.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from .weight_norm import remove_hook_of
from ..modules.conv import _ConvTransposeNd

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


def _default_dim(module):
    return 1 if isinstance(module, _ConvTransposeNd) else 0


class SpectralNorm:
    """The forward pre-hook that recomputes the normalized weight."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        mat = weight
        if self.dim != 0:
            mat = mat.permute(self.dim, *[d for d in range(mat.dim()) if d != self.dim])
        return mat.reshape(mat.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(mat.t().mv(u), dim=0, eps=self.eps, out=v)
                    u = F.normalize(mat.mv(v), dim=0, eps=self.eps, out=u)
                # the buffers keep changing in place: the graph gets copies
                u, v = u.clone(), v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter "
                             f"named '{name}' (or it is None)")
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization of ``module.<name>`` through a forward pre-hook (``dim``
    defaults to 1 for transposed convolutions, else 0)."""
    SpectralNorm.apply(module, name, n_power_iterations,
                       _default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Turn the normalized weight back into a plain parameter."""
    return remove_hook_of(module, name, SpectralNorm, "spectral_norm")
