"""``ember.export``: a function or module captured whole into an inspectable graph
(``torch.export.export``'s role).

``ember.export(fn_or_module, args)`` — also spelled ``ember.export.export`` as in torch — runs
the call once under ember.compile's capture with ``fullgraph=True`` (data-dependent Python
raises ``GraphBreak`` naming the line) and returns an ``ExportedProgram``: the op graph, the
example inputs, and the tensors the graph closed over, named by their module paths
(``state_dict``). ``ember.onnx.export`` writes the same graph as an ONNX model."""
from __future__ import annotations

import sys
import types

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..compiler.capture import Capture
from ..compiler import _encode_output, run_graph
from ..nn.modules.module import Module
from ..utils._pytree import leaves_of_type

__all__ = ["export", "ExportedProgram"]


class ExportedProgram:
    """A captured program: ``graph`` (``print`` shows it), ``example_inputs``, ``constants``
    (the tensors read from outside, in graph order) with ``constant_names`` and
    ``state_dict``; ``module()`` gives a callable running the graph on new inputs."""

    def __init__(self, graph, example_inputs, constant_names):
        self.graph = graph
        self.example_inputs = tuple(example_inputs)
        self.constants = list(graph.constants)
        self.constant_names = list(constant_names)
        self.state_dict = dict(zip(self.constant_names, self.constants))

    def module(self):
        graph = self.graph

        def call(*args):
            tensors = leaves_of_type(args, Tensor)
            if len(tensors) != graph.n_inputs:
                raise TypeError(f"exported program takes {graph.n_inputs} tensor inputs, got "
                                f"{len(tensors)}")
            return run_graph(graph, tensors)
        return call

    def __str__(self):
        names = "\n".join(f"  c{i}: {n}" for i, n in enumerate(self.constant_names))
        return f"ExportedProgram:\n{self.graph}\nconstants:\n{names}"

    __repr__ = __str__


def export(mod, args, kwargs=None, *, strict=False, dynamic_shapes=None, grad=False):
    """Capture ``mod(*args, **kwargs)`` into an ``ExportedProgram`` (under ``no_grad`` unless
    ``grad=True``: an exported graph is an inference program, as torch.export's default)."""
    if not isinstance(args, tuple):
        raise TypeError(f"ember.export: expected args to be a tuple, got {type(args).__name__}")
    kwargs = kwargs or {}
    inputs = leaves_of_type([args, kwargs], Tensor)
    fn = mod.forward if isinstance(mod, Module) else mod
    if not callable(fn):
        raise TypeError(f"ember.export: expected an nn.Module or a callable, got "
                        f"{type(mod).__name__}")
    names = {}
    if isinstance(mod, Module):
        for name, t in list(mod.named_parameters()) + list(mod.named_buffers()):
            names.setdefault(id(t), name)
    ctx = no_grad() if not grad else _Nothing()
    with ctx, Capture(inputs, fullgraph=True) as cap:
        out = mod(*args, **kwargs) if isinstance(mod, Module) else fn(*args, **kwargs)
        cap.graph.output = _encode_output(cap, out)
    graph = cap.graph
    graph.input_layouts = [(t._stride, t._offset) for t in inputs]
    graph.input_meta = [(tuple(t.shape), t.dtype, t.device) for t in inputs]
    constant_names = [names.get(id(c), f"c{i}") for i, c in enumerate(graph.constants)]
    return ExportedProgram(graph, inputs, constant_names)


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class _CallableModule(types.ModuleType):
    """``ember.export(...)`` works as well as ``ember.export.export(...)``."""

    def __call__(self, *args, **kwargs):
        return export(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
