"""``torch.<name>_(input, …)``: the function forms torch binds for in-place Tensor methods
(``torch.abs_``, ``torch.fill_``, ``torch.zero_``, ``torch.resize_as_``…), and ``torch.fill``
(issue #30). Each is the Tensor method of the same name called on ``input``, so it is the same
op — checks, autograd, version counter — as ``input.<name>_(…)``.
"""
from __future__ import annotations

import functools

from .. import _dtype
from .._tensor import Tensor
from ._util import require_tensor
from .elementwise import where

# torch's in-place function forms of Tensor methods (torch 2.13's torch namespace)
INPLACE_FORMS = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ as_strided_ "
    "asin_ asinh_ atan_ atanh_ ceil_ clamp_max_ clamp_min_ conj_physical_ cos_ cosh_ deg2rad_ "
    "detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ "
    "ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ "
    "resize_as_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ "
    "zero_").split()


def _function_form(name):
    method = getattr(Tensor, name)

    @functools.wraps(method)
    def form(input, *args, **kwargs):
        require_tensor(input, name)
        if input.__class__ is Tensor:  # the method itself: its arguments bind in this call
            return method(input, *args, **kwargs)
        return getattr(input, name)(*args, **kwargs)
    form.__qualname__ = name
    return form


FORMS = {name: _function_form(name) for name in INPLACE_FORMS}


def fill(input, value):
    """``torch.fill``: a new tensor like ``input`` (its dtype) holding ``value``; the gradient
    reaches a tensor ``value`` (summed) and is zero for ``input``, as torch's ``fill``."""
    require_tensor(input, "fill")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        return where(input.new_ones((), dtype=_dtype.bool_), value.to(input.dtype), input)
    return input.clone().fill_(value)


FORMS["fill"] = fill
__all__ = list(FORMS)
globals().update(FORMS)
