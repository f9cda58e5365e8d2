"""``Interpreter`` and ``Transformer`` (torch.fx's): run a ``GraphModule`` node by node.

``Interpreter.run(*args)`` keeps each node's value in ``env`` and calls one method per opcode
(``placeholder``, ``get_attr``, ``call_function``, ``call_method``, ``call_module``,
``output``); override them (or ``run_node``) to observe or change execution — a profiler that
times each node is a subclass overriding ``run_node``. Values are dropped after their last use.
``Transformer`` runs the same way but over proxies, so its result is a new ``GraphModule``
whose graph the overridden methods rewrote."""
from __future__ import annotations

import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy
from .tracer import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            last_use = {}
            for node in self.graph.nodes:
                for n in node.all_input_nodes:
                    last_use[n] = node
            self.user_to_last_uses = {}
            for value, user in last_use.items():
                self.user_to_last_uses.setdefault(user, []).append(value)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Runs the graph on ``args``; returns the output node's value."""
        self.env = dict(initial_env) if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    e.args = ((f"{e.args[0]}\n\n{msg}" if e.args else msg),) + e.args[1:]
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    self.env.pop(to_delete, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list):
        args_iter = list(args_list)
        args_list.clear()
        return self.run(*args_iter)

    def run_node(self, n):
        """One node: its arguments fetched from ``env``, then the method for its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per opcode ------------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as e:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               f"was not passed in!") from e

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return submod(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # -- helpers --------------------------------------------------------------------------------
    def fetch_attr(self, target):
        attr_itr = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n):
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args, n):
        def load(n_arg):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph):
        super().__init__()
        self.graph = graph

    def is_leaf_module(self, m, module_qualified_name):
        return True


class Transformer(Interpreter):
    """Runs the graph over proxies into a new graph: ``transform()`` returns a new
    ``GraphModule``. Override ``call_function`` etc. to emit different nodes."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self):
        """The transformed ``GraphModule``."""
        self.tracer.submodule_paths = None
        result = super().run(enable_io_processing=False)
        if result is not None:
            def strip(a):
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip))
        return GraphModule(self.module, self.new_graph)

