"""Tangents of forward-mode AD, carried on the tensors themselves (``ember.autograd.forward_ad``
and ``ember.func.jvp`` both make and read them).

A dual tensor has ``_fw = {level: tangent}`` (one entry per active jvp/dual level that gave it a
tangent) and the ``BATCHED`` key in its key set, so its ops reach the ``ember.func`` handler, which
computes each output's tangent with the op's ``jvp`` facet. Leaving a level removes its tangents
from every tensor that got one there (the layer keeps weak references to them).
"""
from __future__ import annotations

import weakref

from .. import _dtype
from .._tensor import Tensor
from ..dispatch import keys as K
from ..dispatch import levels as _levels
from ..ops import _grad
from ..ops import views as _views

_BATCHED = K.BATCHED


def tangents_of(t):
    """The ``{level: tangent}`` dict of ``t``, or None."""
    return getattr(t, "_fw", None)


def tangent_at(t, level):
    fw = getattr(t, "_fw", None)
    return None if fw is None else fw.get(level)


def set_tangent(t, level, tangent) -> None:
    fw = getattr(t, "_fw", None)
    if fw is None:
        t._fw = fw = {}
    fw[level] = tangent
    t._ks |= _BATCHED
    layer = _levels.layer_at(level)
    if layer is not None:
        if layer.duals is None:
            layer.duals = {}
        duals = layer.duals
        key = id(t)
        if key not in duals:   # a weak reference that removes itself with the tensor
            duals[key] = weakref.ref(t, lambda _, key=key, duals=duals: duals.pop(key, None))


def share_tangents(src, dst) -> None:
    """``dst`` sees ``src``'s tangents, now and later (a saved alias of an op's output)."""
    fw = getattr(src, "_fw", None)
    if fw is None:
        src._fw = fw = {}
    dst._fw = fw
    dst._ks |= _BATCHED


def drop_level(t, level) -> None:
    fw = getattr(t, "_fw", None)
    if fw is None:
        return
    fw.pop(level, None)
    if not fw and not hasattr(t, "_value"):
        t._ks &= ~_BATCHED


def clear_layer(layer) -> None:
    """Remove the tangents of ``layer`` from every tensor that got one there."""
    duals, layer.duals = layer.duals, None
    for ref in list((duals or {}).values()):
        t = ref()
        if t is not None:
            drop_level(t, layer.level)


def visible_level(t, ceiling) -> int:
    """The highest level <= ceiling at which ``t`` has a tangent (0 if none)."""
    fw = getattr(t, "_fw", None)
    if not fw:
        return 0
    best = 0
    for lvl in fw:
        if best < lvl <= ceiling:
            best = lvl
    return best


# -- attaching a rule's tangents to an op's outputs ------------------------------------------------
def attach(out, t_out, level):
    if isinstance(out, (tuple, list)):
        ts = t_out if isinstance(t_out, (tuple, list)) else (t_out,) + (None,) * (len(out) - 1)
        for o, t in zip(out, ts):
            _attach_one(o, t, level)
    else:
        _attach_one(out, t_out, level)


def _attach_one(o, t, level):
    if t is None or not isinstance(o, Tensor) or o.dtype.category < _dtype.FLOATING:
        return
    with _levels.Ceiling(level - 1):
        t = conform(t, o._shape, o.dtype, o.device)
    set_tangent(o, level, t)
    _share_with_saved_output(o)


def conform(t, shape, dtype, device):
    """A tangent brought to its primal's shape (expanded), dtype and device."""
    if not isinstance(t, Tensor):
        return _grad.ones(shape, _Like(dtype, device)) * t
    if t._shape != shape:
        t = _views.expand_op(t, tuple(shape))
    if t.dtype is not dtype:
        if t.dtype.category == _dtype.COMPLEX and dtype.category != _dtype.COMPLEX:
            t = _views.real(t)
        t = _grad.cast(t, dtype)
    if t.device is not device:
        t = t.to(device)
    return t


class _Like:
    __slots__ = ("dtype", "device")

    def __init__(self, dtype, device):
        self.dtype, self.device = dtype, device


def _share_with_saved_output(o):
    """The output an autograd node saved (an alias) sees the tangent too: a backward run under
    forward AD (forward-over-reverse) needs the saved result's tangent."""
    ag = o._ag
    if ag is None or ag.grad_fn is None:
        return
    saved = getattr(ag.grad_fn, "_result", None)
    if isinstance(saved, tuple):
        saved = saved[ag.output_nr] if ag.output_nr < len(saved) else None
    data = getattr(saved, "data", None)
    if data is not None and getattr(saved, "output_nr", None) == ag.output_nr:
        share_tangents(o, data)


# -- dual aliases (forward_ad.make_dual / unpack_dual, ember.func.jvp) ------------------------------
def make_dual_at(primal, tangent, level):
    """A differentiable alias of ``primal`` carrying ``tangent`` at ``level``."""
    if tangent._shape != primal._shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(primal._shape)} while the given forward gradient is of "
                           f"size {list(tangent._shape)}.")
    if primal.dtype.category < 2:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{primal.dtype}")
    if tangent.dtype.category < 2:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    dual = _views.view_op(primal, primal._shape)
    if getattr(dual, "_view_base", None) is not None and not primal.requires_grad:
        del dual._view_base
    set_tangent(dual, level, tangent)
    return dual


def unpack_at(dual, level):
    """(primal, tangent at ``level`` or None): the primal is an alias without that tangent."""
    tangent = tangent_at(dual, level)
    with _levels.Ceiling(level - 1):
        primal = _views.view_op(dual, dual._shape)
    if getattr(primal, "_view_base", None) is not None and not dual.requires_grad:
        del primal._view_base
    return primal, tangent
