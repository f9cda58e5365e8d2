"""``ember.fx``: torch.fx's program capture and transformation toolkit for ember modules.

* ``symbolic_trace`` / ``Tracer`` (``tracer.py``): runs a module's ``forward`` (or a function)
  on ``Proxy`` objects (``proxy.py``) and records a ``Graph`` (``graph.py``) of ``Node``s
  (``node.py``); leaf modules, ``concrete_args`` and ``wrap`` as in torch.fx.
* ``GraphModule`` (``graph_module.py``): a module whose ``forward`` is generated from the
  graph (``code``, ``recompile()``, ``print_readable()``).
* ``Interpreter`` / ``Transformer`` (``interpreter.py``): run a graph node by node, or into a
  new graph.
* ``subgraph_rewriter.replace_pattern`` and ``passes.shape_prop.ShapeProp``.

A ``GraphModule`` is an ordinary ``nn.Module``: ``ember.compile(gm)`` captures it through the
dispatcher like any module."""
from . import passes, subgraph_rewriter  # noqa: F401
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_aggregate, map_arg
from .proxy import Attribute, Proxy, TraceError
from .subgraph_rewriter import replace_pattern
from .tracer import PH, Tracer, symbolic_trace, wrap

__all__ = ["symbolic_trace", "Tracer", "wrap", "PH", "Graph", "GraphModule", "Node", "Proxy",
           "Attribute", "TraceError", "Interpreter", "Transformer", "replace_pattern",
           "map_arg", "map_aggregate", "has_side_effect", "PythonCode", "passes",
           "subgraph_rewriter"]
