"""``Node``: one operation of an fx ``Graph`` (torch.fx's ``Node``).

A node is an ``op`` — ``placeholder`` (a function input), ``get_attr`` (a parameter, buffer
or constant of the owning module), ``call_function`` (a free function, ``operator.add``
included), ``call_method`` (a method on the first argument), ``call_module`` (a submodule's
``forward``) or ``output`` — with a ``target``, ``args``/``kwargs`` holding other nodes and
plain Python values, and the reverse edges ``users``. Nodes of a graph form a doubly linked list
in program order (``prev``/``next``, ``append``/``prepend``)."""
from __future__ import annotations

import builtins
import types

from . import _public

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = object
Target = object

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output",
        "root")


def map_aggregate(a, fn):
    """``fn`` applied to every leaf of ``a`` (tuples, lists, dicts and slices are walked;
    named tuples keep their type)."""
    if isinstance(a, tuple):
        items = [map_aggregate(x, fn) for x in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """``fn`` applied to every ``Node`` inside ``a`` (other values kept)."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _nodes_in(a):
    found = {}
    map_arg(a, lambda n: found.setdefault(n, None))
    return list(found)


class Node:
    """One operation of a ``Graph``; made by the graph's ``create_node`` and friends."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"Node: op must be one of {_OPS[:-1]}, got {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node {name}: target {target!r} of a call_function must be "
                             f"callable")
        if op in ("get_attr", "call_method", "call_module") and not isinstance(target, str):
            raise ValueError(f"Node {name}: target of a {op} must be a string, got "
                             f"{type(target).__name__}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta = {}
        self._update_args_kwargs(map_arg(tuple(args), lambda n: n),
                                 map_arg(dict(kwargs), lambda n: n))

    # -- linked list ----------------------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Move ``x`` right before this node."""
        if self is x:
            raise AssertionError("Cannot prepend a node to itself")
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Move ``x`` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- arguments ------------------------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, value):
        self._update_args_kwargs(map_arg(tuple(value), lambda n: n), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value):
        self._update_args_kwargs(self._args, map_arg(dict(value), lambda n: n))

    @property
    def all_input_nodes(self):
        """The distinct nodes this one reads, in order of first appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self._kwargs, key: arg}

    def _update_args_kwargs(self, args, kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        self._input_nodes = {}
        for n in _nodes_in((args, kwargs)):
            if n.graph is not self.graph:
                raise AssertionError(f"Node {self.name} reads {n.name} of another graph")
            self._input_nodes[n] = None
            n.users[self] = None

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Every user of this node reads ``replace_with`` instead; returns those users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue
            changed.append(user)
            user.replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input, new_input):
        """This node reads ``new_input`` wherever it read ``old_input``."""
        swap = (lambda n: new_input if n is old_input else n)
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # -- queries --------------------------------------------------------------------------------
    def is_impure(self):
        """Whether dead-code elimination must keep this node even without users."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _SIDE_EFFECTFUL or getattr(self.target, "__name__", "") \
                .endswith("_") and not getattr(self.target, "__name__", "").startswith("__")
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.startswith("__")
        if self.op == "call_module" and self.graph.owning_module is not None:
            try:
                mod = self.graph.owning_module.get_submodule(self.target)
            except AttributeError:
                return False
            return bool(getattr(mod, "_is_impure", False))
        return False

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        """A one-line description: ``%name : [num_users=1] = op[target=...](args=..., ...)``."""
        if self.op == "placeholder":
            default = f" = {self.args[0]!r}" if self.args else ""
            if placeholder_names is not None:
                placeholder_names.append(self.target)
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder" \
                   f"[target={self.target}]{default}"
        if self.op == "output":
            if maybe_return_typename is not None and self.type is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {_format_arg(self.args[0])}"
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}"
                f"[target={_target_repr(self.target)}](args = {_format_arg(self.args)}, "
                f"kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self):
        return self.name


_SIDE_EFFECTFUL = set()


def has_side_effect(fn):
    """Marks ``fn`` as impure: dead-code elimination keeps its calls (torch.fx's decorator)."""
    _SIDE_EFFECTFUL.add(fn)
    return fn


def _type_repr(t):
    if isinstance(t, type):
        return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    return repr(t)


def _target_repr(target):
    """A call target's qualified name as torch.fx prints it (``operator.add``,
    ``ember.relu``)."""
    if isinstance(target, str):
        return target
    if isinstance(target, (types.BuiltinFunctionType, types.FunctionType)) and \
            getattr(builtins, target.__name__, None) is target:
        return target.__name__
    public = _public.lookup(target)
    if public is not None:
        return public
    mod = getattr(target, "__module__", None)
    if mod == "_operator":
        mod = "operator"
    name = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
    return f"{mod}.{name}" if mod else name


def _format_arg(arg, max_list_len=float("inf")):
    if isinstance(arg, Node):
        return "%" + arg.name
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)
