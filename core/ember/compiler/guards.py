"""Guards on Python state: the values a captured call read (``tracing.StateTracer``), checked
before each replay by one generated function.

Each read slot (a globals entry, a closure cell, an instance or class ``__dict__`` entry, a
module's parameter/buffer/submodule entry, a dict or list item) is compared with what the
capture saw: numbers, strings, ``None`` and tuples of them by type and value (so ``S = 3.0``
after ``S = 2.0`` recompiles, and ``True`` is not ``1``); everything else by identity (a
global tensor rebound to a new tensor, a replaced submodule or function). A list, dict or set
read as a whole is also compared element by element (by length only past 16 items), so a
config dict changed in place or a ``ModuleList`` entry replaced is caught; containers the
call itself mutates are its side effects (``effects.py``), not guards.

The check is Python source built once (``m3.get('scale', M).__class__ is float and ...``), so
a replay costs one dictionary lookup and compare per slot (measured in
tests/test_compile_state.py's guard-cost test: well under a microsecond per slot)."""
from __future__ import annotations

from .tracing import MISSING

_SCALARS = (int, float, bool, str, bytes, complex, type(None))
_CONTENT_LIMIT = 16


def _scalar_like(v, depth=0):
    if type(v) in _SCALARS:
        return True
    if type(v) in (tuple, frozenset) and depth < 3 and len(v) <= 64:
        return all(_scalar_like(x, depth + 1) for x in v)
    return False


class StateGuard:
    """``check()`` is True while every slot holds what the capture read; ``why()`` names the
    first slot that changed (for ``explain``'s recompile reasons)."""

    def __init__(self, reads, skip=()):
        self.slots = []
        ns = {"M": MISSING}
        terms = []
        for n, (slot, value) in enumerate(reads):
            access = self._access(ns, n, slot)
            term = self._compare(ns, f"s{n}", access, value, mutated=id(value) in skip)
            terms.append(term)
            self.slots.append((slot, value, term))
        self.n_terms = len(terms)
        body = " and\n            ".join(terms) if terms else "True"
        source = (f"def guard():\n    try:\n        return bool({body})\n"
                  f"    except Exception:\n        return False\n")
        exec(compile(source, "<ember.compile state guard>", "exec"), ns)
        self._ns = ns
        self.source = source
        #: the generated check: True while every slot holds what the capture read
        self.check = ns["guard"]

    @staticmethod
    def _access(ns, n, slot):
        c = f"c{n}"
        ns[c] = slot.container
        k = f"k{n}"
        ns[k] = slot.key
        if slot.kind == "map":
            return f"{c}.get({k}, M)"
        if slot.kind == "cell":
            return f"_cell({c})"
        if slot.kind == "seq":
            return f"_seq({c}, {k})"
        return f"getattr({c}, {k}, M)"

    @staticmethod
    def _compare(ns, name, access, value, mutated=False):
        ns["_cell"], ns["_seq"] = _cell, _seq
        e = f"e_{name}"
        ns[e] = value
        if value is MISSING or type(value) is bool or value is None:
            return f"{access} is {e}"
        if _scalar_like(value):
            t = f"t_{name}"
            ns[t] = type(value)
            if isinstance(value, float) and value != value:
                return f"(_v := {access}).__class__ is {t} and _v != _v"
            return f"(_v := {access}).__class__ is {t} and _v == {e}"
        term = f"(_v := {access}) is {e}"
        if mutated:
            return term
        if isinstance(value, (list, dict, set)):
            return term + " and " + _contents(ns, name, "_v", value)
        return term

    def why(self):
        """The first slot that no longer holds the captured value, in words (None: all do)."""
        for slot, value, term in self.slots:
            ns = dict(self._ns)
            try:
                ok = eval(term, ns)
            except Exception:  # noqa: BLE001 - a vanished slot counts as changed
                ok = False
            if not ok:
                now = slot.read()
                return (f"{slot.describe()} changed (was {_short(value)}, now "
                        f"{_short(now)})")
        return None


def _contents(ns, name, var, value):
    n = len(value)
    if n > _CONTENT_LIMIT:
        return f"len({var}) == {n}"
    if isinstance(value, set):
        if all(_scalar_like(x) for x in value):
            f = f"f_{name}"
            ns[f] = frozenset(value)
            return f"{var} == {f}"
        return f"len({var}) == {n}"
    parts = [f"len({var}) == {n}"]
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    for i, (k, v) in enumerate(items):
        ek, ev = f"ck_{name}_{i}", f"cv_{name}_{i}"
        ns[ek], ns[ev] = k, v
        get = f"{var}.get({ek}, M)" if isinstance(value, dict) else f"{var}[{ek}]"
        if _scalar_like(v) and type(v) is not bool and v is not None:
            parts.append(f"{get} == {ev}")
        else:
            parts.append(f"{get} is {ev}")
    return " and ".join(parts)


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return MISSING


def _seq(container, key):
    return container[key] if -len(container) <= key < len(container) else MISSING


def _short(v):
    if v is MISSING:
        return "absent"
    text = repr(v) if _scalar_like(v) else f"a {type(v).__name__} object at {id(v):#x}"
    return text if len(text) < 60 else text[:57] + "..."
