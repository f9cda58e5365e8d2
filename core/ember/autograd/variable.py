"""``ember.autograd.Variable``: PyTorch's pre-0.4 wrapper, kept as torch keeps it.

Variables and Tensors were merged in PyTorch 0.4: ``Variable(t)`` returns a Tensor (a new leaf
sharing ``t``'s data) and ``isinstance(t, Variable)`` holds for every Tensor. Old scripts
still write ``Variable(x, requires_grad=True)``, so the name behaves exactly that way.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from ..ops.factories import empty
from .._warn import user_stacklevel


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)

    def __call__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", UserWarning, stacklevel=user_stacklevel())
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if not isinstance(requires_grad, bool):
            raise TypeError(f"Variable(): argument 'requires_grad' must be bool, not "
                            f"{type(requires_grad).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)`` -> Tensor (see the module
    docstring); ``isinstance(tensor, Variable)`` is True."""
