"""Does ember accept every call torch's signatures accept? (issue #30, tests and bench)

For each public callable of the snapshot that ember has, every torch overload (deprecated ones
too) is checked against what the binding layer would do with it:

* ``keyword``  — each of torch's parameter names (and, for parser-bound functions, numpy's
  aliases of them) is accepted as a keyword (directly, renamed, into ``*args`` or as ``out=``);
* ``optional`` — a parameter torch lets you omit, ember lets you omit;
* ``arity``    — ember takes as many positional arguments as torch's overload has;
* ``position`` — a positional parameter of torch's is at the same position in ember.

``default`` differences (both defaults literals, and different) are counted separately: ember
often writes ``None`` for "computed", which is not compared.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

from . import binding as _binding

KINDS = ("keyword", "optional", "arity", "position")


@dataclass(frozen=True)
class Problem:
    ns: str
    name: str
    kind: str
    detail: str

    def __str__(self):
        return f"{self.ns}.{self.name}: {self.kind}: {self.detail}"


def ember_object(ember, ns: str, name: str):
    """The ember callable at the snapshot's ``ns.name``, or None."""
    path = _binding.NAMESPACES.get(ns, (ns, False))[0]
    holder = _binding.attribute_path(ember, path)
    if holder is None:
        return None
    if ns == "Tensor":
        return holder.__dict__.get(name, getattr(holder, name, None))
    return getattr(holder, name, None)


def binding_of(obj, ns: str, name: str):
    """The Binding the wrapper uses, or one made for an unwrapped callable (classes: their
    constructor, which takes exactly its own keywords: no renaming)."""
    b = getattr(obj, "_binding", None)
    if b is not None:
        return b
    if inspect.isclass(obj):
        return _ClassBinding(obj, ns, name, False)
    if callable(obj):
        try:
            inspect.signature(obj)
        except (TypeError, ValueError):
            return None
        return _binding.Binding(obj, ns, name, ns == "Tensor")
    return None


class _ClassBinding(_binding.Binding):
    """Keywords taken as they are (a class's constructor; ``raw`` checks)."""
    __slots__ = ()

    def target(self, kw):
        return ("name", kw) if self.accepts_keyword(kw) else None


def _positional(params):
    return [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def check(ember, ns: str, name: str, *, raw: bool = False) -> tuple[list, list]:
    """(problems, default differences) for one snapshot entry ember has; ``raw``: judge ember's
    own function, without the binding layer's renaming and deprecated overloads."""
    entry = _binding.torch_entry(ns, name)
    obj = ember_object(ember, ns, name)
    if entry is None or obj is None or entry.get("kind") not in ("parser", "python"):
        return [], []
    b = binding_of(obj, ns, name)
    if raw and b is not None:
        b = _ClassBinding(b.fn, ns, name, b.method)
    if b is None:
        return [Problem(ns, name, "keyword", "ember's callable has no inspectable signature")], []
    sig = b.signature
    params = list(sig.parameters.values())
    if b.method and params:
        params = params[1:]
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    positional = _positional(params)
    by_name = {p.name: p for p in params}
    parser = entry["kind"] == "parser"
    aliases = _binding.snapshot()["numpy_aliases"]
    problems, defaults = [], []
    seen = set()

    def add(kind, detail):
        if (kind, detail) not in seen:
            seen.add((kind, detail))
            problems.append(Problem(ns, name, kind, detail))

    # docstring- and lambda-derived signatures do not say which parameters are keyword-only
    exact = entry.get("source", "torchgen") in ("torchgen", "listing")
    for tsig in entry.get("signatures") or []:
        tparams = [p for p in tsig["params"] if p.get("kind") != "varkw"]
        tpos = [p for p in tparams if not p["kwonly"] and p.get("kind") != "varargs"]
        # a deprecated overload is rebound by name (binding.py): only its names matter
        ordered = exact and (raw or not tsig.get("hidden"))
        if ordered and len(tpos) > len(positional) and not has_varargs:
            add("arity", f"torch takes {len(tpos)} positional arguments "
                         f"({', '.join(p['name'] for p in tpos)}), ember {len(positional)}")
        for i, tp in enumerate(tpos if ordered else ()):
            p = by_name.get(tp["name"])
            if p is not None and p in positional and positional.index(p) != i:
                add("position", f"'{tp['name']}' is argument {i + 1} in torch, "
                                f"{positional.index(p) + 1} in ember")
        for tp in tparams:
            if tp.get("kind") in ("varargs", "positional_only"):
                continue
            names = [tp["name"]] + (aliases.get(tp["name"], []) if parser else [])
            for kw in names:
                target = b.target(kw)
                if target is None:
                    add("keyword", f"'{kw}'" + (f" (torch's alias of '{tp['name']}')"
                                                if kw != tp["name"] else ""))
                    continue
                if kw != tp["name"]:
                    continue
                if target[0] == "name" and tp["default"] is not None and exact:
                    ep = sig.parameters.get(target[1])
                    if ep is not None and ep.default is ep.empty and \
                            ep.kind != ep.VAR_KEYWORD:
                        add("optional", f"'{tp['name']}' has a default in torch "
                                        f"({tp['default']}), none in ember")
                    elif ep is not None and _differs(tp["default"], ep.default):
                        defaults.append(Problem(ns, name, "default",
                                                f"'{tp['name']}': torch {tp['default']}, "
                                                f"ember {ep.default!r}"))
    return problems, defaults


_TORCH_LITERALS = {"True": True, "False": False, "None": None, "[]": [], "{}": None}


def _literal(text):
    if text in _TORCH_LITERALS:
        return True, _TORCH_LITERALS[text]
    if text.startswith("{") and text.endswith("}"):  # C++ brace lists: {0,1}
        text = f"[{text[1:-1]}]"
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError):
        return False, None


# torch's default and ember's that mean the same: conv's string-padding overload defaults to
# "valid", its int overload (ember's one function takes both) to 0
_SAME = {("valid", 0)}


def _differs(torch_default: str, ember_default) -> bool:
    ok, value = _literal(torch_default)
    if not ok or ember_default is None or value is None:
        return False
    if isinstance(value, str) and (value, ember_default) in _SAME:
        return False
    if not isinstance(ember_default, (bool, int, float, str, tuple, list)):
        return False
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(ember_default, list):
        ember_default = tuple(ember_default)
    if isinstance(value, (int, float)) and isinstance(ember_default, (tuple,)) and \
            all(v == value for v in ember_default):
        return False  # torch's "IntArrayRef[2] stride=1" is (1, 1)
    if isinstance(value, tuple) and isinstance(ember_default, (int, float)) and \
            all(v == ember_default for v in value):
        return False
    return value != ember_default or type(value) is bool and type(ember_default) is not bool


def run(ember, namespaces=None, *, raw: bool = False):
    """{ns: (names checked, [Problem], [default Problem])} over the snapshot."""
    out = {}
    for ns, table in _binding.snapshot()["namespaces"].items():
        if namespaces is not None and ns not in namespaces:
            continue
        checked, problems, defaults = 0, [], []
        for name in sorted(table):
            if ember_object(ember, ns, name) is None:
                continue
            checked += 1
            p, d = check(ember, ns, name, raw=raw)
            problems += p
            defaults += d
        out[ns] = (checked, problems, defaults)
    return out
