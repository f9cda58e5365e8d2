"""Samplers that ``ember.distributions`` builds on: standard gamma (with PyTorch's implicit
reparameterization gradient ``_standard_gamma_grad``), Dirichlet, Poisson and binomial
counts. Like the other random ops they take the backend implementation of a Generator, so
each backend draws on its own device (``ember.manual_seed`` reproduces the numbers).

Kernel conventions: ``_standard_gamma(Tensor self, Generator generator)`` draws Gamma(self, 1)
in self's dtype, clamped below to the dtype's smallest normal number (PyTorch's rule);
``_standard_gamma_grad(Tensor self, Tensor output)`` is d output / d self for a gamma sample
of fixed CDF value (the implicit reparameterization, Figurnov et al. 2018);
``poisson(Tensor self, Generator generator)`` and ``binomial(Tensor count, Tensor prob,
Generator generator)`` return counts in their input's dtype. ``_sample_dirichlet`` is a
composite: normalized gammas, so its gradient is the gammas' implicit one.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from . import _grad, _meta
from . import random as _random
from ._util import _broadcast_pair, _dtype_title, require_tensor

__all__ = ["poisson", "binomial", "_standard_gamma", "_standard_gamma_grad",
           "_sample_dirichlet"]


def _same(op):
    return lambda self, *rest: (_meta.shape_of(_meta.tensor_arg(op, self)), self.dtype)


def _gamma_backward(ctx, g, self, generator):
    return (g * standard_gamma_grad_op(self, ctx.result),)


standard_gamma_op = define("_standard_gamma(Tensor self, Generator generator) -> Tensor",
                           meta=_same("_standard_gamma"),
                           derivative=Derivative(_gamma_backward, save=("self", "result"),
                                                 name="StandardGammaBackward0"),
                           doc="Gamma(self, 1) samples (Marsaglia-Tsang).")
standard_gamma_grad_op = define("_standard_gamma_grad(Tensor self, Tensor output) -> Tensor",
                                meta=_same("_standard_gamma_grad"),
                                derivative=NOT_DIFFERENTIABLE,
                                doc="d sample / d alpha at fixed CDF value (PyTorch's "
                                    "approximation: series, saddle point, rational fit).")
poisson_op = define("poisson(Tensor self, Generator generator) -> Tensor",
                    meta=_same("poisson"), derivative=Derivative(_grad.zero_grad),
                    doc="Poisson(self) counts in self's dtype; a negative rate raises.")


def _binomial_meta(count, prob, generator):
    return _meta.broadcast("binomial", count, prob), count.dtype


binomial_op = define("binomial(Tensor count, Tensor prob, Generator generator) -> Tensor",
                     meta=_binomial_meta, derivative=NOT_DIFFERENTIABLE,
                     doc="Binomial(count, prob) counts (BTRS / inversion); operands of one "
                         "shape and dtype.")


def _dirichlet(alpha, generator):
    g = standard_gamma_op(alpha, generator)
    return g / g.sum(-1, keepdim=True)


sample_dirichlet_op = define("_sample_dirichlet(Tensor self, Generator generator) -> Tensor",
                             composite=_dirichlet,
                             doc="Dirichlet(self) samples over the last dim (normalized "
                                 "gammas).")


def _float_input(t, op):
    require_tensor(t, op)
    if t.dtype.category != _dtype.FLOATING:
        raise NotImplementedError(f"\"{op}\" not implemented for '{_dtype_title(t.dtype)}'")


def _standard_gamma(input, generator=None):
    _float_input(input, "_standard_gamma")
    return standard_gamma_op(input, _random._generator(generator, input.device,
                                                       "_standard_gamma"))


def _standard_gamma_grad(input, output):
    return standard_gamma_grad_op(input, output)


def _sample_dirichlet(input, generator=None):
    _float_input(input, "_sample_dirichlet")
    return sample_dirichlet_op(input, _random._generator(generator, input.device,
                                                         "_sample_dirichlet"))


def poisson(input, generator=None):
    _float_input(input, "poisson")
    return poisson_op(input, _random._generator(generator, input.device, "poisson"))


def binomial(count, prob, generator=None):
    _float_input(count, "binomial")
    if not isinstance(prob, Tensor):
        raise TypeError(f"binomial(): argument 'prob' (position 2) must be Tensor, not "
                        f"{type(prob).__name__}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {_dtype_title(prob.dtype)} but expected "
                           f"{_dtype_title(count.dtype)}")
    shape = _broadcast_pair(count._shape, prob._shape)
    c = count if count._shape == shape else count.expand(*shape)
    p = prob if prob._shape == shape else prob.expand(*shape)
    return binomial_op(c, p, _random._generator(generator, count.device, "binomial"))
