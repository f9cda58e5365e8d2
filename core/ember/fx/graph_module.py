"""``GraphModule``: an ``nn.Module`` whose ``forward`` is generated from an fx ``Graph``
(torch.fx's ``GraphModule``).

It copies from ``root`` the submodules, parameters, buffers and constants the graph's
``get_attr``/``call_module`` nodes name (making intermediate container modules for dotted
paths), and ``recompile()`` turns the graph into Python source (``code``), registered in
``linecache`` so tracebacks and ``inspect`` show it. Each instance gets its own class, so the
generated ``forward`` can live on the class as a normal method. It is an ordinary module:
``ember.compile(gm)`` captures it like any other."""
from __future__ import annotations

import copy
import linecache
import itertools

from ..nn.modules.module import Module
from .graph import Graph
from .._tensor import Tensor
from ..nn.parameter import Parameter

__all__ = ["GraphModule"]

_counter = itertools.count()


def _copy_attr(from_module, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter) and \
            field in getattr(from_module, "_buffers", {}):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(obj, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    setattr(to_module, field, obj)


class GraphModule(Module):
    """``GraphModule(root, graph, class_name="GraphModule")``: ``root`` is the module the
    graph's attributes come from, or a dict of qualified name → object."""

    def __new__(cls, *args, **kwargs):
        # a class per instance: recompile() puts the generated forward on it
        if not getattr(cls, "_per_instance", False):
            cls = type(cls.__name__, (cls,), {"_per_instance": True})
        return super().__new__(cls)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           f"that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self.meta = {}

    # -- the graph ------------------------------------------------------------------------------
    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f"Expected a Graph, got {type(g).__name__}")
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The generated Python source of ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to ember")
        return self._code

    def recompile(self):
        """Regenerates ``forward`` from ``self.graph`` (after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        src = python_code.src
        object.__setattr__(self, "_code", src)
        key = f"<eval_with_key>.{next(_counter)}"
        linecache.cache[key] = (len(src), None, src.splitlines(True), key)
        namespace = dict(python_code.globals)
        exec(compile(src, key, "exec"), namespace)
        cls = type(self)
        cls.forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        """The module as Python source (``class Name(ember.nn.Module): def forward...``),
        with the readable forms of submodules that are GraphModules too."""
        lines = [f"class {type(self).__name__}(ember.nn.Module):"]
        body = self.code.strip("\n").rstrip() + "\n"
        lines += ["    " + line if line.strip() else "" for line in body.splitlines()]
        for name, m in self.named_children():
            if isinstance(m, GraphModule):
                sub = m.print_readable(print_output=False).splitlines()
                lines += [""] + ["    " + line for line in sub]
        text = "\n".join(lines) + "\n"
        if print_output:
            print(text)
        return text

    # -- submodules -----------------------------------------------------------------------------
    def add_submodule(self, target, m):
        """Installs ``m`` at the dotted path ``target`` (making containers as needed)."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, field):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self):
        """Drops submodules no ``call_module``/``get_attr`` node uses."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
                if node.op == "call_module":
                    try:
                        sub = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    for name, _ in sub.named_modules():
                        if name:
                            used.add(node.target + "." + name)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    # -- copies ---------------------------------------------------------------------------------
    def __deepcopy__(self, memo):
        fake = Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        graph = copy.deepcopy(self._graph, memo)
        out = GraphModule(fake, graph, type(self).__name__)
        out.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return out

    def __copy__(self):
        out = GraphModule(self, self.graph, type(self).__name__)
        out.meta = dict(getattr(self, "meta", {}))
        return out

    def __str__(self):
        return super().__str__() + "\n\n" + self.code
