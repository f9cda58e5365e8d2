"""What ``ember info --op NAME`` looks up: a registry op, or a public name and the ops it calls.

Users know ops by their public names — ``F.cross_entropy``, ``conv2d``, ``Tensor.add_``,
``torch.nn.functional.linear`` — which are Python functions over registry ops with other names
(``nll_loss_forward``, ``convolution``, ``addmm``). ``resolve(name)`` finds the function and
the ops it dispatches: the ops the profiler records while it runs on its conformance sample
(``ember_conformance.opdb``, on the CPU), else — no sample — the ``Op`` objects its code and
the ember helpers it calls name (a few calls deep; what it *may* call). ``near_misses(name)``
suggests names for a typo (difflib).
"""
from __future__ import annotations

import difflib
import functools
import inspect
import types
from dataclasses import dataclass, field
import importlib
import warnings
import ember

from .dispatch.describe import where_defined
from .dispatch.dispatcher import Op, all_ops
from .profiler import profile

# where a bare public name may live, in the order torch users look
_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.fft", "ember.special",
               "ember.func")
# spellings of those namespaces in a dotted name
_PREFIXES = {"torch": "ember", "F": "ember.nn.functional", "functional": "ember.nn.functional",
             "nn.functional": "ember.nn.functional"}
_DEPTH = 3


@dataclass
class Resolution:
    """A public name: the object it names, where it is defined, and the ops it may call."""
    name: str                 # the canonical spelling (ember.nn.functional.cross_entropy)
    obj: object
    defined_at: str
    ops: list = field(default_factory=list)   # registry op names, first reached first
    how: str = ""             # how the ops were found


def _module(path: str):
    try:
        return importlib.import_module(path)
    except ImportError:
        return None


def _lookup(name: str):
    """(canonical name, object) for a public spelling, or None."""
    parts = name.strip().split(".")
    if parts[0] in ("ember", "torch"):
        parts = parts[1:]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    if parts[0] == "Tensor" and len(parts) == 2:
        obj = getattr(ember.Tensor, parts[1], None)
        return None if obj is None else (f"ember.Tensor.{parts[1]}", obj)
    head = ".".join(parts[:-1])
    homes = [_PREFIXES.get(head, f"ember.{head}")] if head else list(_NAMESPACES)
    for home in homes:
        mod = _module(home)
        obj = getattr(mod, parts[-1], None) if mod is not None else None
        if obj is not None and callable(obj):
            return f"{home}.{parts[-1]}", obj
    if not head:
        obj = getattr(ember.Tensor, parts[-1], None)
        if obj is not None:
            return f"ember.Tensor.{parts[-1]}", obj
    return None


def _function(obj):
    """The plain function behind a public callable (methods, partials, wrappers, properties)."""
    for _ in range(8):
        if isinstance(obj, property):
            obj = obj.fget
        elif isinstance(obj, functools.partial):
            obj = obj.func
        elif isinstance(obj, (staticmethod, classmethod)) or inspect.ismethod(obj):
            obj = obj.__func__
        elif hasattr(obj, "__wrapped__"):
            obj = obj.__wrapped__
        else:
            break
    return obj if isinstance(obj, types.FunctionType) else None


def _code_names(code) -> list:
    names = list(code.co_names)
    for const in code.co_consts:   # lambdas and inner functions
        if isinstance(const, types.CodeType):
            names += _code_names(const)
    return names


def ops_called(obj, depth: int = _DEPTH) -> list:
    """Names of the registry ops ``obj`` may dispatch, read from its code: globals (and
    attributes of imported ember modules) that are ``Op`` objects, and the same in the ember
    functions it names, up to ``depth`` calls deep."""
    found, seen = [], set()

    def visit(fn, level):
        fn = _function(fn)
        if fn is None or fn in seen:
            return
        seen.add(fn)
        modules = [v for v in fn.__globals__.values()
                   if isinstance(v, types.ModuleType) and v.__name__.startswith("ember")]
        for name in _code_names(fn.__code__):
            for obj in [fn.__globals__.get(name)] + [getattr(m, name, None) for m in modules]:
                if isinstance(obj, Op):
                    if obj.name not in found:
                        found.append(obj.name)
                elif level < depth and obj is not None and \
                        (getattr(obj, "__module__", "") or "").startswith("ember"):
                    visit(obj, level + 1)

    visit(obj, 0)
    return found


def _entry_key(canonical: str) -> str:
    """The name below ``ember.`` (``cross_entropy``, ``linalg.solve``, ``add_``)."""
    for prefix in ("ember.nn.functional.", "ember.Tensor.", "ember."):
        if canonical.startswith(prefix):
            return canonical[len(prefix):]
    return canonical


def _entry_names(canonical: str) -> tuple:
    """Conformance entry names that may exercise a public function (nn entries are
    ``nn.<name>``; ``ember.conv2d`` is ``F.conv2d``)."""
    key = _entry_key(canonical)
    if canonical.startswith("ember.Tensor.") or "." in key:
        return (key,)
    return (f"nn.{key}", key) if canonical.startswith("ember.nn.") else (key, f"nn.{key}")


def ops_on_sample(canonical: str):
    """(sample description, op names the profiler records while the function runs on its
    conformance sample on the CPU), or None when it has no sample (or the suite is absent)."""
    try:
        # optional: the conformance suite's own package
        from ember_conformance.opdb import all_opinfos
    except ImportError:
        return None

    names = _entry_names(canonical)
    entries = sorted((e for e in all_opinfos() if e.name.split()[0] in names and not e.random),
                     key=lambda e: names.index(e.name.split()[0]))
    for entry in entries:
        for dtype in entry.dtypes:
            for sample in entry.samples(dtype):
                try:
                    args, kwargs = sample.build("cpu")
                    with warnings.catch_warnings(), profile() as prof:
                        warnings.simplefilter("ignore")
                        entry.fn(*args, **kwargs)
                except Exception:   # a sample that raises (an error-case entry) says nothing
                    continue
                return f"{entry.name}: {sample.desc} ({dtype})", \
                    [event.key for event in prof.key_averages()]
    return None


def resolve(name: str):
    """A ``Resolution`` for a public name, or None when nothing public has that name."""
    found = _lookup(name)
    if found is None:
        return None
    canonical, obj = found
    fn = _function(obj)
    res = Resolution(canonical, obj, where_defined(fn) if fn is not None else "")
    traced = ops_on_sample(canonical)
    if traced is not None:
        res.how, res.ops = f"dispatched on the conformance sample {traced[0]}", traced[1]
    elif canonical.startswith("ember.Tensor.") and _entry_key(canonical) in all_ops():
        res.how, res.ops = "the op of the same name", [_entry_key(canonical)]
    elif fn is not None:
        res.how, res.ops = "named in its code (what it may call)", ops_called(obj)
    return res


def _public_names() -> list:
    names = set()
    for home in _NAMESPACES:
        mod = _module(home)
        if mod is not None:
            names.update(n for n in dir(mod) if not n.startswith("_") and
                         callable(getattr(mod, n, None)))
    names.update(f"Tensor.{n}" for n in dir(ember.Tensor) if not n.startswith("_"))
    return sorted(names)


def near_misses(name: str, n: int = 6) -> list:
    """Op and public names close to ``name`` (difflib), best first."""
    tail = name.split(".")[-1]
    pool = sorted(set(all_ops()) | set(_public_names()))
    close = difflib.get_close_matches(name, pool, n=n, cutoff=0.75)
    close += [c for c in difflib.get_close_matches(tail, pool, n=n, cutoff=0.75)
              if c not in close]
    return close[:n]
