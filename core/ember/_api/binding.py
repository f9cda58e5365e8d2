"""The binding layer: ember's public functions and Tensor methods called as torch binds them.

``install()`` (run once, at the end of ``import ember``) replaces every public Python function of
the namespaces in ``NAMESPACES`` — and every public Tensor method — with a thin wrapper. A call
that binds costs the wrapper's one extra Python call and nothing else: no argument is looked at.
Only when Python refuses the arguments (a ``TypeError`` raised by the call itself, not from inside
the function) does the wrapper consult torch's signature snapshot (``torch_signatures.json``,
loaded then):

* keywords torch accepts under another name are renamed and the call retried — numpy's aliases
  that torch's argument parser takes (``axis`` for ``dim``, ``keepdims`` for ``keepdim``,
  ``x``/``a``/``x1`` for ``input``, ``x2`` for ``other``), torch's parameter names where ember's
  function names the same position differently, a keyword given for a ``*args`` parameter, and
  ``out=`` for functions that do not take it (the result is written into ``out`` as torch does);
* otherwise the ``TypeError`` is torch's: for parser-bound torch functions the argument parser's
  own messages (``sum() received an invalid combination of arguments - got (Tensor, dims=int),
  but expected one of: ...``), for Python-level ones CPython's message for torch's signature —
  always naming the public op, never the closure or module that implements it.

Wrapping happens in one place so that no op module has to know about it; the wrapped function is
``__wrapped__`` (``inspect.signature`` reports ember's own signature).
"""
from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
import types
import warnings

from .._tensor import Tensor
from ..dispatch.grad_mode import is_grad_enabled
from ..ops._util import write_out
from .shared_names import SHARED

from .. import _fastpath
from .._warn import first_time, user_stacklevel

SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_signatures.json")

#: snapshot namespace -> (ember attribute path, whether its callables are methods)
NAMESPACES = {
    "torch": ("", False),
    "Tensor": ("Tensor", True),
    "nn.functional": ("nn.functional", False),
    "linalg": ("linalg", False),
    "fft": ("fft", False),
    "special": ("special", False),
    "nn.init": ("nn.init", False),
    "autograd": ("autograd", False),
    "autograd.functional": ("autograd.functional", False),
    "func": ("func", False),
    "masked": ("masked", False),
    "signal.windows": ("signal.windows", False),
    "nn.utils": ("nn.utils", False),
}

_snapshot = None
_WARNED: set = set()  # functions whose deprecated overload was used (torch warns once)


def snapshot() -> dict:
    """torch's signatures (loaded on first use: only failed calls and the tests need them)."""
    global _snapshot
    if _snapshot is None:
        with open(SNAPSHOT) as f:
            _snapshot = json.load(f)
    return _snapshot


def torch_entry(ns: str, name: str):
    return snapshot()["namespaces"].get(ns, {}).get(name)


def _alias_of() -> dict:
    """numpy alias -> torch parameter name (``axis`` -> ``dim``)."""
    return {alias: canon for canon, aliases in snapshot()["numpy_aliases"].items()
            for alias in aliases}


class NoMatchingSignature(TypeError):
    """Raised by a public function that parses its own ``*args``/``**kwargs`` (``Tensor.to``,
    ``random_``, ``torch.lstm``…) when they match none of torch's overloads: the binding layer
    words it as torch's argument parser would, from the snapshot."""

    def __init__(self, name: str, detail: str = ""):
        super().__init__(f"{name}() received an invalid combination of arguments"
                         + (f": {detail}" if detail else ""))


# ----------------------------------------------------------------------------- the wrapper

class Binding:
    """One public callable: the ember function behind it and where torch names it."""

    __slots__ = ("fn", "ns", "name", "method", "_signature", "_targets", "_stub")

    def __init__(self, fn, ns: str, name: str, method: bool):
        self.fn, self.ns, self.name, self.method = fn, ns, name, method
        self._signature = None
        self._targets = {}
        self._stub = None

    @property
    def signature(self) -> inspect.Signature:
        if self._signature is None:
            self._signature = inspect.signature(self.fn)
        return self._signature

    @property
    def entry(self):
        return torch_entry(self.ns, self.name)

    def accepts_keyword(self, kw: str) -> bool:
        params = self.signature.parameters
        p = params.get(kw)
        if p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return not (self.method and next(iter(params)) == kw)
        return any(q.kind == q.VAR_KEYWORD for q in params.values())

    # -- where a keyword torch accepts goes in ember's function
    def target(self, kw: str):
        """``("name", p)``: pass as ember's keyword ``p``; ``("position", i)``: pass as the
        i-th positional argument (ember's ``*args``); ``("out", None)``: write the result into
        it; None: torch does not accept ``kw`` either (or ember cannot take it)."""
        if kw not in self._targets:
            self._targets[kw] = self._find_target(kw)
        return self._targets[kw]

    def _find_target(self, kw: str):
        entry = self.entry
        if self.accepts_keyword(kw):
            return ("name", kw)
        if entry is None or entry.get("kind") not in ("parser", "python"):
            return None
        sigs = entry.get("signatures") or []
        canon = kw
        if entry["kind"] == "parser" and kw not in _param_names(sigs):
            canon = _alias_of().get(kw, kw)
        if canon not in _param_names(sigs):
            return None
        if self.accepts_keyword(canon):
            return ("name", canon)
        if canon == "out":
            return ("out", None)
        # the same position in ember's function under another name, or its *args
        ember_params = [p for p in self.signature.parameters.values()
                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                      p.VAR_POSITIONAL)]
        offset = 1 if self.method else 0
        for sig in sigs:
            positional = [p["name"] for p in sig["params"]
                          if not p["kwonly"] and p.get("kind") not in ("varargs", "varkw")]
            if canon not in positional:
                continue
            i = positional.index(canon) + offset
            for j, p in enumerate(ember_params):
                if p.kind == p.VAR_POSITIONAL and j <= i:
                    return ("position", i)
                if j == i and p.kind == p.POSITIONAL_OR_KEYWORD:
                    return ("name", p.name)
        return None

    def rebind(self, args: tuple, kwargs: dict):
        """(args, kwargs, out) that ember's function binds, from a call torch's signatures
        accept: keywords renamed, or a deprecated overload's argument order (torch warns about
        those, once per function); None when torch would refuse the call too."""
        if kwargs:
            attempt = self._renamed(args, kwargs)
            if attempt is not None:
                return attempt
        return self._deprecated_overload(args, kwargs)

    def _renamed(self, args, kwargs, *, force=False):
        new_kwargs, positional, out, changed = {}, {}, None, force
        for kw, value in kwargs.items():
            t = self.target(kw)
            if t is None:
                return None
            kind, where = t
            if kind == "name":
                if where in new_kwargs:
                    return None
                new_kwargs[where] = value
                changed |= where != kw
            elif kind == "position":
                positional[where] = value
                changed = True
            else:
                out, changed = value, True
        if not changed:
            return None
        args = list(args)
        for i in sorted(positional):
            if i != len(args):
                return None
            value = positional[i]
            args.extend(value if isinstance(value, (tuple, list)) else (value,))
        try:
            self.signature.bind(*args, **new_kwargs)
        except TypeError:
            return None
        return tuple(args), new_kwargs, out

    def _deprecated_overload(self, args, kwargs):
        entry = self.entry
        if entry is None or entry.get("kind") != "parser":
            return None
        head, given = (args[:1], args[1:]) if self.method else ((), args)
        for sig in entry["signatures"]:
            if not sig.get("hidden"):
                continue
            positional = [p for p in sig["params"] if not p["kwonly"]]
            if len(given) > len(positional):
                continue
            named = {p["name"]: v for p, v in zip(positional, given)}
            if any(k in named for k in kwargs):
                continue
            named.update(kwargs)
            if any(p["name"] not in named and p["default"] is None for p in sig["params"]):
                continue
            attempt = self._renamed(head, named, force=True)
            if attempt is not None:
                self._warn_deprecated(sig, entry)
                return attempt
        return None

    def _warn_deprecated(self, sig, entry):
        if not first_time(_WARNED, self.name):
            return
        from . import parser_errors  # start-up: ~3 ms, read only when a call is refused
        instead = "\n".join(f"\t{self.name}{o}" for o in parser_errors.options(entry))
        warnings.warn(f"This overload of {self.name} is deprecated:\n\t{self.name}"
                      f"{parser_errors.render(sig)}\nConsider using one of the following "
                      f"signatures instead:\n{instead}", UserWarning, stacklevel=user_stacklevel())

    # -- torch's message for a call that matches no signature
    def error(self, args: tuple, kwargs: dict, python_error: TypeError) -> TypeError:
        entry = self.entry
        given = args[1:] if self.method else args
        # hand-written torch bindings known only from their docs are not exact enough to word
        # the parser's errors from: CPython's message for ember's own signature then
        exact = entry is not None and entry.get("source", "torchgen") in ("torchgen", "listing")
        if entry is not None and entry.get("kind") == "parser":
            if exact or entry.get("noarg"):
                from . import parser_errors  # start-up: ~3 ms, read only when a call is refused
                return TypeError(parser_errors.message(self.display_name, entry, given, kwargs,
                                                       method=self.method))
            return TypeError(_renamed(str(python_error), self.display_name))
        if entry is not None and entry.get("kind") == "python":
            message = self._python_message(given, kwargs)
            if message is not None:
                return TypeError(message)
        return TypeError(_renamed(str(python_error), self.public_qualname))

    @property
    def public_qualname(self) -> str:
        return f"Tensor.{self.name}" if self.method else self.name

    @property
    def display_name(self) -> str:
        """The op's name in parser messages: ``linalg.cholesky`` where torch's binding says
        ``linalg_cholesky``."""
        return f"{self.ns}.{self.name}" if self.ns in ("linalg", "fft", "special") else self.name

    def _python_message(self, given, kwargs):
        """CPython's own message for the call against torch's Python signature."""
        if self._stub is None:
            self._stub = _stub_function(self.entry["signatures"][0]["params"],
                                        self.public_qualname)
        try:
            self._stub(*given, **kwargs)
        except TypeError as e:
            return str(e)
        return None


def _param_names(sigs) -> set:
    return {p["name"] for s in sigs for p in s["params"]}


def _renamed(message: str, qualname: str) -> str:
    head, sep, rest = message.partition("() ")
    if sep and " " not in head:
        return f"{qualname}() {rest}"
    return message


def _stub_function(params, qualname):
    """A function with torch's parameter names and kinds (defaults None), named like torch's."""
    parts, seen_star = [], False
    for p in params:
        kind = p.get("kind")
        if kind == "varargs":
            parts.append("*" + p["name"])
            seen_star = True
        elif kind == "varkw":
            parts.append("**" + p["name"])
        else:
            if p["kwonly"] and not seen_star:
                parts.append("*")
                seen_star = True
            parts.append(p["name"] + ("=None" if p["default"] is not None else ""))
            if kind == "positional_only" and not any(
                    q.get("kind") == "positional_only" for q in params[params.index(p) + 1:]):
                parts.append("/")
    namespace: dict = {}
    exec(f"def stub({', '.join(parts)}):\n    pass\n", namespace)  # noqa: S102 - our own text
    stub = namespace["stub"]
    stub.__qualname__ = qualname
    return stub


_BINDING_MESSAGE = re.compile(
    r"^[\w.<>]+\(\) (got an unexpected keyword argument|missing \d+ required|takes (from )?\d+ "
    r"positional|takes no arguments|got multiple values for argument|got some positional-only)")


_PASSES_ON = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _binding_error(e: TypeError, passthrough: bool) -> bool:
    """Whether Python raised ``e`` binding the call's arguments: to the wrapped function itself
    (no frame of it in the traceback), or to a function it reached by handing its ``*args`` and
    ``**kwargs`` on (every frame of the traceback takes them)."""
    tb = e.__traceback__.tb_next
    if tb is None:
        return True
    if not passthrough or _BINDING_MESSAGE.match(str(e)) is None:
        return False
    while tb is not None:
        if not tb.tb_frame.f_code.co_flags & _PASSES_ON:
            return False
        tb = tb.tb_next
    return True


def _write_out(name, result, out):
    """``out=`` for an ember function without it: torch's checks, then copy into ``out``."""
    if isinstance(result, Tensor):
        return write_out(out, result, name)
    if not isinstance(out, (tuple, list)) or len(out) != len(result):
        raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors")
    written = [write_out(o, r, name) for o, r in zip(out, result)]
    return type(result)(*written) if hasattr(type(result), "_fields") else tuple(written)


def _check_out_autograd(name, args, kwargs):
    if not is_grad_enabled():
        return
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor) and a.requires_grad:
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               f"automatic differentiation, but one of the arguments requires "
                               f"grad.")


_REFUSED = object()


def _torch_function(func, args, kwargs):
    """torch's ``__torch_function__`` protocol, for the calls ember refuses: the first type
    among the arguments (and the items of list arguments: ``cat([proxy, ...])``) that is not a
    Tensor and defines ``__torch_function__`` gets ``func`` and the call (fx proxies outside a
    trace, tensor-likes); ``_REFUSED`` when there is none or each returns NotImplemented.
    Checked only after ``func`` raised TypeError, so calls with Tensors pay nothing."""
    overloaded = []
    for a in (*args, *kwargs.values()):
        for x in (a if type(a) in (list, tuple) else (a,)):
            t = type(x)
            if t not in overloaded and not issubclass(t, Tensor) and \
                    getattr(t, "__torch_function__", None) is not None:
                overloaded.append(t)
    for t in overloaded:
        result = t.__torch_function__(func, tuple(overloaded), args, kwargs)
        if result is not NotImplemented:
            return result
    return _REFUSED


def public(fn, ns: str, name: str, *, method: bool = False, module: str = "ember"):
    """``fn`` as the public ``ns.name``: torch's keywords accepted, torch's errors raised."""
    binding = Binding(fn, ns, name, method)
    # a function taking *args/**kwargs that hands them on: the call it makes binds them
    passthrough = bool(fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            handled = _torch_function(call, args, kwargs)
            if handled is not _REFUSED:
                return handled
            if not (isinstance(e, NoMatchingSignature) or _binding_error(e, passthrough)):
                raise  # raised inside fn, not by binding it
            rebound = binding.rebind(args, kwargs)
            if rebound is None:
                raise binding.error(args, kwargs, e) from None
        args, kwargs, out = rebound
        if out is None:
            return fn(*args, **kwargs)
        _check_out_autograd(name, args, kwargs)
        return _write_out(name, fn(*args, **kwargs), out)

    functools.update_wrapper(call, fn)
    call.__name__ = name
    call.__qualname__ = f"Tensor.{name}" if method else name
    call.__module__ = module
    call._binding = binding
    return call


# ----------------------------------------------------------------------------- installing

def _is_wrappable(obj) -> bool:
    return (isinstance(obj, types.FunctionType) or _fastpath.compiled_parts(obj) is not None) \
        and not hasattr(obj, "_binding")


def _public_behind_fast_path(obj, ns, name, *, method, module):
    """``public`` for a plain function; for a compiled API function (ember._C.ApiFunction: a
    compiled first test in front of a Python function), the same compiled test in front of the
    public wrapper of that Python function, so the common call stays compiled and every other
    call (keywords, torch's aliases, errors) goes through the binding."""
    compiled = _fastpath.compiled_parts(obj)
    if compiled is None:
        return public(obj, ns, name, method=method, module=module)
    kind, op, fn = compiled
    wrapper = public(fn, ns, name, method=method, module=module)
    fast = _fastpath.api_function(kind, op, wrapper)
    fast._binding = wrapper._binding
    return fast


def install(ember) -> dict:
    """Wrap the public functions of every namespace in ``NAMESPACES``; then point every public
    ember module attribute that still holds a wrapped original at its wrapper, so one name is
    one object wherever it is imported from. Each public name gets its own wrapper (ember's
    ``absolute`` is its ``abs`` function, but errors name ``absolute()``, as torch's do); the
    same name in two namespaces is one object where torch's is (``F.conv2d`` is
    ``ember.conv2d``: ``shared_names.py``). Returns {(original, name, namespace): wrapper}."""
    wrappers: dict = {}
    for ns, (path, method) in NAMESPACES.items():
        holder = attribute_path(ember, path)
        if holder is None:
            continue
        module = ember.__name__ + (f".{path}" if path and not method else "")
        names = vars(holder) if method else dir(holder)
        for name in list(names):
            if name.startswith("_"):
                continue
            obj = holder.__dict__.get(name) if method else getattr(holder, name, None)
            if not _is_wrappable(obj):
                continue
            owner = SHARED.get(f"{ns}.{name}")
            if owner is not None and (obj, name, owner) in wrappers:
                _replace(holder, name, wrappers[obj, name, owner])
                continue
            wrapper = _public_behind_fast_path(obj, ns, name, method=method,
                                               module=ember.__name__ if method else module)
            if not method:
                wrappers[obj, name, ns] = wrapper
            _replace(holder, name, wrapper)
    _point_public_modules(ember.__name__, wrappers)
    return wrappers


_INSTALLED: list = []  # (holder, name, original): what uninstall() puts back


def _replace(holder, name, wrapper):
    _INSTALLED.append((holder, name, getattr(holder, name)))
    setattr(holder, name, wrapper)


def uninstall() -> None:
    """Put every original back (for measuring what the layer costs: bench/bench_binding.py)."""
    while _INSTALLED:
        holder, name, original = _INSTALLED.pop()
        setattr(holder, name, original)


def attribute_path(root, path):
    """``root.a.b`` for ``path`` "a.b" (``root`` for ""), or None where an attribute is missing."""
    obj = root
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


_INTERNAL = ("ops", "kit", "dispatch", "runtime", "compiler", "onnx", "export")


def _point_public_modules(root: str, wrappers: dict) -> None:
    by_name, by_function = {}, {}
    for (fn, name, _), w in wrappers.items():
        by_name.setdefault((fn, name), w)
        by_function.setdefault(fn, w)
    for modname, module in list(sys.modules.items()):
        if module is None or not (modname == root or modname.startswith(root + ".")):
            continue
        parts = modname.split(".")[1:]
        if any(p.startswith("_") for p in parts) or (parts and parts[0] in _INTERNAL):
            continue
        d = vars(module)
        for name, value in list(d.items()):
            if not name.startswith("_") and (isinstance(value, types.FunctionType) or
                                             _fastpath.compiled_parts(value) is not None):
                w = by_name.get((value, name)) or by_function.get(value)
                if w is not None:
                    _replace(module, name, w)
            elif isinstance(value, type) and value.__module__ == modname:
                _point_held_functional(value, by_function)


def _point_held_functional(cls, by_function) -> None:
    """A module class that is one functional holds it as ``_fn`` (nn/modules): the public
    wrapper, so that ``ReLU()(x)`` calls ``F.relu`` as torch's does -- fx proxies and other
    ``__torch_function__`` arguments reach their protocol through it."""
    held = cls.__dict__.get("_fn")
    w = by_function.get(held.__func__) if isinstance(held, staticmethod) else None
    if w is not None:
        _INSTALLED.append((cls, "_fn", held))
        setattr(cls, "_fn", staticmethod(w))
