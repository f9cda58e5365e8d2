"""Python side effects of a captured call, redone after each replay with the replay's values.

A replay runs the graph, not the function's Python, so whatever the call did to state that
outlives it would otherwise happen on the capture run only: ``self.last_loss = loss`` would
keep the first call's tensor forever. ``tracing.StateTracer`` reports the slots the call stored
to and the external lists/dicts/sets it mutated; at the end of the capture each becomes one
``Effect``:

* a store (attribute, global, closure variable, dict item) → set the slot to its final value
  again; a delete → delete it;
* a list that only grew → extend it by the items appended; a list changed in place → set
  those positions; a dict → set the changed keys and drop the removed ones; a set of plain
  values → make it equal to its final contents.

Final values are encoded like the function's output: tensors the graph made become extra
graph outputs (``(output, effect_values)``), so the replay stores *its* tensor, not the
captured one; numbers, strings and objects that existed before the call are constants; lists,
tuples and dicts of those are rebuilt. A value that can't be rebuilt — a new object of another
type made during the call — makes the call a graph break whose reason names the slot, so
nothing is silently stale."""
from __future__ import annotations

from .._tensor import Tensor
from .tracing import MISSING
from .._device import device as device_cls
from .._dtype import dtype as dtype_cls

_PLAIN = (int, float, bool, str, bytes, complex, type(None))


class Unreplayable(Exception):
    """A side effect whose value a replay can't rebuild (the message says which)."""


class Effect:
    __slots__ = ("kind", "slot", "container", "extra")

    def __init__(self, kind, slot=None, container=None, extra=None):
        self.kind, self.slot, self.container, self.extra = kind, slot, container, extra

    def apply(self, value):
        kind = self.kind
        if kind == "store":
            slot = self.slot
            if slot.owner is not None:
                setattr(slot.owner, slot.key, value)
            elif slot.kind == "cell":
                slot.container.cell_contents = value
            else:
                slot.container[slot.key] = value
        elif kind == "delete":
            slot = self.slot
            if slot.owner is not None:
                if hasattr(slot.owner, slot.key):
                    delattr(slot.owner, slot.key)
            elif slot.kind == "cell":
                try:
                    del slot.container.cell_contents
                except ValueError:
                    pass
            else:
                slot.container.pop(slot.key, None)
        elif kind == "extend":
            self.container.extend(value)
        elif kind == "setitems":
            for i, v in zip(self.extra, value):
                self.container[i] = v
        elif kind == "dict":
            self.container.update(value)
            for k in self.extra:
                self.container.pop(k, None)
        elif kind == "set":
            self.container.clear()
            self.container.update(value)

    def describe(self):
        if self.slot is not None:
            return f"{self.kind} {self.slot.describe()}"
        return f"{self.kind} {type(self.container).__name__}"


class Effects:
    """The side effects of one capture: ``values`` (encoded, for the graph's output) and
    ``items`` (what to do with each value on replay)."""

    def __init__(self, items, values, raw):
        self.items, self.values = items, values
        # the capture run's final values (tensors among them the joint graph differentiates)
        self.raw = raw

    def apply(self, values):
        for effect, value in zip(self.items, values):
            effect.apply(value)

    def __len__(self):
        return len(self.items)

    def __str__(self):
        return ", ".join(e.describe() for e in self.items)


def collect(tracer, encode):
    """The tracer's writes and mutations as ``Effects`` (None when there are none). ``encode``
    maps a tensor to its graph Ref. Raises ``Unreplayable`` naming the first slot whose value a
    replay couldn't rebuild."""
    items, values, raw = [], [], []

    def enc(v, where):
        raw.append(v)
        return _encode(v, where, encode, tracer.external)

    for slot in tracer.written.values():
        final = slot.read() if slot.kind != "attr" else getattr(slot.owner, slot.key, MISSING)
        if final is MISSING:
            items.append(Effect("delete", slot))
            values.append(None)
        else:
            items.append(Effect("store", slot))
            values.append(enc(final, slot.describe()))
    for container, before in list(tracer.mutated.values()) + tracer.changed_containers():
        where = f"a {type(container).__name__} the function mutates"
        if isinstance(container, list):
            after = list(container)
            n = len(before)
            if len(after) >= n and all(a is b for a, b in zip(after, before)):
                if len(after) > n:
                    items.append(Effect("extend", container=container))
                    values.append([enc(v, where) for v in after[n:]])
            elif len(after) == n:
                changed = [i for i in range(n) if after[i] is not before[i]]
                items.append(Effect("setitems", container=container, extra=changed))
                values.append([enc(after[i], where) for i in changed])
            else:
                raise Unreplayable(f"the function removes or reorders items of {where}; "
                                   f"a replay only redoes appends and item stores")
        elif isinstance(container, dict):
            changed = {k: enc(v, where) for k, v in container.items()
                       if k not in before or before[k] is not v}
            removed = [k for k in before if k not in container]
            if changed or removed:
                items.append(Effect("dict", container=container, extra=removed))
                values.append(changed)
        else:
            final = set(container)
            if not all(isinstance(v, _PLAIN) for v in final):
                raise Unreplayable(f"the function adds objects to {where}; a replay can "
                                   f"only rebuild sets of numbers and strings")
            if final != before:
                items.append(Effect("set", container=container))
                values.append(frozenset(final))
    if not items:
        return None
    return Effects(items, tuple(values), raw)


def _encode(v, where, encode, external):
    if isinstance(v, Tensor):
        return encode(v)
    if isinstance(v, _PLAIN):
        return v
    if id(v) in external:
        return _Constant(v)
    if isinstance(v, (list, tuple)):
        items = [_encode(x, where, encode, external) for x in v]
        return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
    if isinstance(v, dict) and type(v) is dict:
        return {k: _encode(x, where, encode, external) for k, x in v.items()}
    if isinstance(v, (dtype_cls, device_cls)):
        return v
    raise Unreplayable(f"the function stores a new {type(v).__name__} object in {where}; a "
                       f"replay can only rebuild tensors, numbers, strings, lists, tuples and "
                       f"dicts of them, and objects that existed before the call")


class _Constant:
    """An object stored by a side effect that existed before the call: the replay stores the
    same object (wrapped, so the graph's output encoding leaves it alone)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def unwrap(values):
    """The replayed effect values with ``_Constant`` wrappers removed."""
    return [_unwrap(v) for v in values]


def _unwrap(v):
    if isinstance(v, _Constant):
        return v.value
    if isinstance(v, list):
        return [_unwrap(x) for x in v]
    if isinstance(v, tuple):
        items = [_unwrap(x) for x in v]
        return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
    if isinstance(v, dict):
        return {k: _unwrap(x) for k, x in v.items()}
    return v

