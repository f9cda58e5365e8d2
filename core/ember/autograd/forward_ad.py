"""``ember.autograd.forward_ad``: forward-mode automatic differentiation (PyTorch's API).

Inside ``with dual_level():``, ``make_dual(x, t)`` is a tensor whose ops also compute the
Jacobian-vector product with ``t``; ``unpack_dual(y)`` gives ``(primal, tangent)``. Tangents live
on the tensors (``ember.func``'s tangent levels) and each op's ``jvp`` facet propagates them, on
every backend. Leaving the level drops them. As in PyTorch, one dual level is active at a time
here (nest ``ember.func.jvp`` for higher orders); grad mode does not affect forward AD.
"""
from __future__ import annotations

from typing import NamedTuple

from .._tensor import Tensor
from ..dispatch import levels as _levels
from . import dual as _dual

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

_current = []   # the active dual level's layer (at most one)


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: ``primal`` (a view of the dual's values without the
    tangent) and ``tangent`` (None when there is none)."""
    primal: Tensor
    tangent: Tensor | None


def enter_dual_level():
    """Enter a new forward grad level; returns its index. Prefer ``with dual_level():``."""
    if _current:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    layer = _levels.push("jvp", name="forward_ad")
    _current.append(layer)
    return layer.level


def exit_dual_level(*, level=None):
    """Exit the forward grad level (its tangents are dropped from every tensor)."""
    if not _current or (level is not None and _current[-1].level != level):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    layer = _current.pop()
    _dual.clear_layer(layer)
    _levels.pop(layer)


def _level(level):
    if level is None:
        if not _current:
            raise RuntimeError("Trying to create a dual Tensor for forward AD but no level "
                               "exists, make sure to enter_dual_level() first.")
        return _current[-1].level
    if not _current or _current[-1].level != level:
        raise RuntimeError(f"Trying to use forward AD level {level} but it is not the current "
                           f"level; use the index enter_dual_level() returned")
    return level


def make_dual(tensor, tangent, *, level=None):
    """A tensor with ``tensor``'s values (it aliases them) whose tangent is ``tangent``."""
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual: expected Tensors, got {type(tensor).__name__} and "
                        f"{type(tangent).__name__}")
    lvl = _level(level)
    if tangent.dtype is not tensor.dtype:
        raise RuntimeError(f"Expected tangent to have the same dtype as the primal, but got "
                           f"tangent dtype {tangent.dtype} and primal dtype {tensor.dtype}")
    if tangent.device is not tensor.device:
        raise RuntimeError(f"Expected tangent to be on the same device as the primal, but got "
                           f"{tangent.device} and {tensor.device}")
    return _dual.make_dual_at(tensor, tangent, lvl)


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of a dual tensor at the current level (tangent None if none)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual: expected a Tensor, got {type(tensor).__name__}")
    if level is None and not _current:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _dual.unpack_at(tensor, _level(level))
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """``with dual_level():`` — the scope of dual tensors made with ``make_dual``."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
