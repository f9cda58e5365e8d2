"""The transform stack: which ``ember.func`` transforms are active on this thread, each at a level.

Every transform call (``vmap``, ``grad``/``vjp``, ``jvp`` and ``forward_ad.dual_level``) pushes a
``Layer`` whose level is one more than the layer below; nesting order is level order, and a
tensor's annotations say which level they belong to: a ``BatchedTensor`` wraps its batch at
``level``, a dual tensor carries a tangent per level (``ember.autograd.dual``), and autograd on
a ``BatchedTensor`` wrapper (``_ag`` on the wrapper object) belongs to a grad transform above the
wrapper's level. The stack is dispatcher state (it decides which handler sees an op), so it
lives here, below autograd and ``ember.func`` which both push layers.

The dispatch handler (``ember.func._handler``) always works on the highest level it can see: it lowers
the ``ceiling`` while it runs the level below (an op inside a batching rule at level 3 sees levels
1 and 2 only), which is how nested transforms of one kind stay apart.

While a vmap is active the ``BATCHED`` key is in the thread's include mask, so every op — random
factories included, which have no tensor argument — reaches the handler; outside transforms no
tensor carries the key and nothing is included, so ops pay nothing.
"""
from __future__ import annotations

import threading

from . import keys as K

_BATCHED = K.BATCHED
_UNLIMITED = 1 << 30


class Layer:
    """One active transform. ``kind`` is "vmap", "grad" or "jvp"."""

    __slots__ = ("kind", "level", "batch_size", "randomness", "prev_grad_enabled", "alive",
                 "duals", "name")

    def __init__(self, kind, level, batch_size=None, randomness="error", name=None):
        self.kind = kind
        self.level = level
        self.batch_size = batch_size
        self.randomness = randomness
        self.prev_grad_enabled = K.state.grad_enabled
        self.alive = True
        self.duals = None   # jvp layers: weak references to the tensors given a tangent here
        self.name = name or kind

    def fallback(self, op, args, bdims):
        """The op once per example of this vmap, stacked: what a batching rule falls back to
        for a case it does not cover (``ember.ops._batching.loop``); ``ember.func`` provides
        it when it registers its dispatch layer (``set_fallback``)."""
        return _fallback[0](op, args, bdims, self)

    def __repr__(self):
        extra = f", batch_size={self.batch_size}" if self.kind == "vmap" else ""
        return f"Layer({self.kind}, level={self.level}{extra})"


_fallback = [None]


def set_fallback(fn) -> None:
    """``fn(op, args, bdims, layer)``: how a vmap runs an op once per example."""
    _fallback[0] = fn


class _State(threading.local):
    def __init__(self):
        self.stack = []
        self.ceiling = _UNLIMITED
        self.by_level = {}
        self.rule_layer = None   # the vmap layer whose batching rule is running


state = _State()


def push(kind, batch_size=None, randomness="error", name=None) -> Layer:
    st = state
    level = (st.stack[-1].level + 1) if st.stack else 1
    layer = Layer(kind, level, batch_size, randomness, name)
    st.stack.append(layer)
    st.by_level[level] = layer
    if kind == "vmap":
        _refresh_include()
    return layer


def pop(layer: Layer) -> None:
    st = state
    if not st.stack or st.stack[-1] is not layer:
        raise RuntimeError(f"ember.func: transform levels exited out of order ({layer} is not "
                           f"the innermost of {st.stack})")
    st.stack.pop()
    st.by_level.pop(layer.level, None)
    layer.alive = False
    if layer.kind == "vmap":
        _refresh_include()


def _refresh_include() -> None:
    """``BATCHED`` is included while any vmap layer is active (random factories inside vmap
    reach the handler); the bit is also set per tensor on batched and dual tensors."""
    st = K.state
    include, keep = st.masks
    on = any(layer.kind == "vmap" for layer in state.stack)
    st.masks = ((include | _BATCHED) if on else (include & ~_BATCHED), keep)


def layer_at(level: int):
    """The live layer at ``level``, or None."""
    return state.by_level.get(level)


def innermost_vmap():
    """The highest-level vmap layer under the ceiling, or None."""
    c = state.ceiling
    for layer in reversed(state.stack):
        if layer.kind == "vmap" and layer.level <= c:
            return layer
    return None


def first_grad_above(level: int):
    """The lowest grad layer above ``level`` (whose entry grad mode is ``level``'s mode)."""
    for layer in state.stack:
        if layer.kind == "grad" and layer.level > level:
            return layer
    return None


class Ceiling:
    """Context manager: only levels <= ``level`` are visible inside (the level below runs)."""

    __slots__ = ("level", "_prev")

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        st = state
        self._prev = st.ceiling
        st.ceiling = min(st.ceiling, self.level)
        return self

    def __exit__(self, *exc):
        state.ceiling = self._prev


def rule_layer():
    """The vmap layer whose batching rule is running (batch size, randomness)."""
    layer = state.rule_layer
    if layer is None:
        raise RuntimeError("ember.func: a batching rule ran outside vmap")
    return layer
