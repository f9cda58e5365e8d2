"""Symbolic tracing (torch.fx's ``Tracer`` and ``symbolic_trace``).

``Tracer.trace(root)`` calls ``root.forward`` (or a function) with a ``Proxy`` per parameter
and records what the proxies go through. ember has no ``__torch_function__`` protocol, so for
the length of a trace the tracer patches, and then restores:

* ``nn.Module.__call__`` — a leaf module (ember's own layers, by default; not containers)
  becomes one ``call_module`` node, any other module is traced through;
* ``nn.Module.__getattr__`` — a parameter read in ``forward`` becomes a ``get_attr`` node;
* ember's public functions (``ember.*``, ``ember.nn.functional.*``, ``special``, ``linalg``,
  ``fft``), and names bound to them in the traced code's globals — called with a proxy, one
  becomes a ``call_function`` node of the original function;
* ``Tensor``'s operators, so that ``tensor + proxy`` defers to the proxy;
* functions registered with ``wrap`` and the ``math`` module's functions (``autowrap``).

A patch only acts on the tracing thread; elsewhere it calls the original."""
from __future__ import annotations

import builtins
import inspect
import math
import operator
import sys
import threading

from .graph import Graph
from .proxy import GraphAppendingTracer, Proxy, TracerBase
from . import _public
from .._tensor import Tensor
from ..nn.modules.container import ModuleDict, ModuleList, Sequential
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph_module import GraphModule

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "GraphAppendingTracer"]

_local = threading.local()
_wrapped = []          # (globals dict, name) registered by wrap()


class _PH:
    """``concrete_args`` value meaning "a placeholder here anyway"."""

    def __repr__(self):
        return "PH"


PH = _PH()


def wrap(fn_or_name):
    """At module scope: calls of this global function inside traced code become
    ``call_function`` nodes instead of being traced through (torch.fx's ``wrap``)."""
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise AssertionError("Unsupported type for global function! Must be either a callable "
                             "or string name")
    frame = sys._getframe(1)
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped.append((frame.f_globals, name))
    return fn_or_name


def _assert(condition, message):
    """``torch._assert``: what a concrete argument's check node calls."""
    if not condition:
        raise AssertionError(message)


def _tracer():
    return getattr(_local, "tracer", None)


def _find_proxy(args, kwargs):
    found = []

    def visit(a):
        if isinstance(a, Proxy):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                if found:
                    return
                visit(x)
        elif isinstance(a, dict):
            for x in a.values():
                visit(x)
    visit(args)
    if not found:
        visit(kwargs)
    return found[0] if found else None


def _recording(fn):
    """``fn`` that records a ``call_function`` node when called with a proxy while tracing."""
    def recorded(*args, **kwargs):
        proxy = _find_proxy(args, kwargs) if _tracer() is not None else None
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    recorded.__wrapped__ = fn
    recorded.__name__ = getattr(fn, "__name__", "fn")
    recorded.__ember_fx_original__ = fn
    return recorded


class _Patcher:
    """Sets attributes/dict entries for the length of a trace and restores them."""

    def __init__(self):
        self.undo = []

    def setattr(self, obj, name, value):
        self.undo.append(("attr", obj, name, obj.__dict__.get(name, _MISSING)
                          if isinstance(obj, type) else getattr(obj, name, _MISSING)))
        setattr(obj, name, value)

    def setitem(self, d, name, value):
        self.undo.append(("item", d, name, d.get(name, _MISSING)))
        d[name] = value

    def restore(self):
        for kind, obj, name, old in reversed(self.undo):
            if kind == "attr":
                if old is _MISSING:
                    delattr(obj, name)
                else:
                    setattr(obj, name, old)
            elif old is _MISSING:
                obj.pop(name, None)
            else:
                obj[name] = old
        self.undo.clear()


_MISSING = object()
_TENSOR_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
                     "or", "xor", "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge")


class Tracer(TracerBase):
    """torch.fx's ``Tracer``: override ``is_leaf_module`` (and ``call_module``,
    ``create_arg``, ...) to customise what is traced through."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        super().__init__()
        self._autowrap_modules = tuple(autowrap_modules)
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.root = None
        self.graph = None
        self.submodule_paths = None
        self.tensor_attrs = {}

    # -- what is a leaf -------------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        """ember's own layers are leaves; containers and user modules are traced through."""
        return type(m).__module__.startswith("ember.nn") and \
            not isinstance(m, (Sequential, ModuleList, ModuleDict))

    def path_of_module(self, mod):
        if self.submodule_paths is None:
            self.submodule_paths = {}
            for name, m in self.root.named_modules(remove_duplicate=False):
                self.submodule_paths.setdefault(m, name)
        path = self.submodule_paths.get(mod)
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        """A leaf module → one ``call_module`` node; anything else is traced through."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A parameter read from a module: a ``get_attr`` proxy (one per parameter)."""
        if isinstance(attr_val, Parameter):
            for n, p in self.root.named_parameters():
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
        return attr_val

    def create_arg(self, a):
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", n, (), {})
            name = self.tensor_attrs.get(a)
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                setattr(self.root, name, a)
                self.tensor_attrs[a] = name
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, Module):
            raise NotImplementedError(f"argument of type: {type(a)} (call the module instead "
                                      f"of passing it)")
        return super().create_arg(a)

    # -- tracing --------------------------------------------------------------------------------
    def trace(self, root, concrete_args=None):
        """The ``Graph`` of ``root`` (a module's ``forward``, or a function)."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            self_arg = [root]
        else:
            self.root = Module()
            fn = root
            self_arg = []
        self.traced_func_name = fn.__name__
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = None
        self.tensor_attrs = {}
        args = self._placeholders(fn, self_arg, concrete_args or {})
        patcher = _Patcher()
        previous = _tracer()
        _local.tracer = self
        try:
            self._patch(patcher, root, fn)
            result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=fn.__annotations__.get("return", None))
        finally:
            patcher.restore()
            _local.tracer = previous
        self.submodule_paths = None
        return self.graph

    def _placeholders(self, fn, self_arg, concrete_args):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[len(self_arg):]
        for name in concrete_args:
            if name not in sig.parameters:
                raise RuntimeError(f"concrete_args: {fn.__name__} has no parameter {name!r}")
        args = list(self_arg)
        for p in params:
            default = p.default
            if p.name in concrete_args and not isinstance(concrete_args[p.name], _PH):
                value = concrete_args[p.name]
                if isinstance(value, (bool, int, float, str, type(None))):
                    # the value is baked in; a check node says so if another is passed
                    ph = self.create_proxy("placeholder", f"{p.name}_1",
                                           () if default is p.empty else (default,), {},
                                           name=f"{p.name}_1")
                    eq = self.create_proxy("call_function", operator.eq, (ph, value), {},
                                           name="eq")
                    self.create_proxy("call_function", _assert,
                                      (eq, f"{p.name} has been specialized to have value "
                                           f"{value} but got another value"), {},
                                      name="_assert")
                args.append(value)
                continue
            name = p.name
            if p.kind is p.VAR_POSITIONAL:
                name = "*" + name
            elif p.kind is p.VAR_KEYWORD:
                name = "**" + name
            proxy = self.create_proxy("placeholder", name,
                                      () if default is p.empty else (default,), {},
                                      name=p.name,
                                      type_expr=fn.__annotations__.get(p.name, None))
            args.append(proxy)
        return args

    def _patch(self, patcher, root, fn):
        tracer = self
        original_call = Module.__call__
        original_getattr = Module.__getattr__
        cache = {}

        def module_call(mod, *args, **kwargs):
            if _tracer() is not tracer:
                return original_call(mod, *args, **kwargs)
            return tracer.call_module(mod, lambda *a, **k: original_call(mod, *a, **k),
                                      args, kwargs)

        def module_getattr(mod, attr):
            value = original_getattr(mod, attr)
            if _tracer() is not tracer:
                return value
            return tracer.getattr(attr, value, cache)
        patcher.setattr(Module, "__call__", module_call)
        patcher.setattr(Module, "__getattr__", module_getattr)

        recorded = {}

        def recording(f):
            r = recorded.get(id(f))
            if r is None:
                r = recorded[id(f)] = _recording(f)
            return r
        for mod, name, f in _public.functions():
            patcher.setattr(mod, name, recording(f))
        for m in self._autowrap_modules:
            for name, f in list(vars(m).items()):
                if callable(f) and not name.startswith("_") and not isinstance(f, type):
                    patcher.setattr(m, name, recording(f))
        originals = recorded                # id(ember function) -> its recording form
        extra = {id(f): f for f in self._autowrap_functions}
        # names in the traced code's globals bound to ember functions (``from ember import
        # relu``), to autowrapped functions, and names registered with wrap()
        scopes = {id(fn.__globals__): fn.__globals__}
        if isinstance(root, Module):
            for m in root.modules():
                fwd = getattr(type(m), "forward", None)
                g = getattr(fwd, "__globals__", None)
                if g is not None and not str(g.get("__name__", "")).startswith("ember"):
                    scopes[id(g)] = g
        for g in scopes.values():
            for name, value in list(g.items()):
                if callable(value) and not isinstance(value, type):
                    if id(value) in originals:
                        patcher.setitem(g, name, originals[id(value)])
                    elif id(value) in extra:
                        patcher.setitem(g, name, recording(value))
        for g, name in _wrapped:
            value = g.get(name, builtins.__dict__.get(name))
            if value is not None and callable(value):
                patcher.setitem(g, name, recording(getattr(value, "__ember_fx_original__",
                                                           value)))

        def deferring(op_name):
            original = getattr(Tensor, f"__{op_name}__", None)
            if original is None:
                return

            def op(self, other):
                if isinstance(other, Proxy) and _tracer() is not None:
                    return NotImplemented
                return original(self, other)
            op.__name__ = f"__{op_name}__"
            patcher.setattr(Tensor, f"__{op_name}__", op)
        for op_name in _TENSOR_OPERATORS:
            deferring(op_name)


def symbolic_trace(root, concrete_args=None):
    """The ``GraphModule`` of ``root`` (a module or function) traced with proxies."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

