"""Tangents of forward-mode AD, carried on the tensors themselves.

A dual tensor has ``_fw = {level: tangent}`` (one entry per active jvp/dual level that gave it a
tangent) and the ``BATCHED`` key in its key set, so its ops reach the ``ember.func`` handler, which
computes each output's tangent with the op's ``jvp`` facet. Leaving a level removes its tangents
from every tensor that got one there (the layer keeps weak references to them).
"""
from __future__ import annotations

import weakref

from ..dispatch import keys as K
from . import _levels

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
