"""Translating a captured graph to ONNX: each node by its op's ``onnx`` facet (PyTorch's
symbolic_opset files' role, kept beside each op's define in ``ember/ops``).

A rule is ``rule(b, c, *args)``: ``b`` the ``Builder`` (``b.op(type, inputs, **attrs)`` adds a
node, ``b.const``/``b.ints`` an initializer), ``c`` the node's ``Context`` (``c.shape(i)`` the
captured shape of tensor argument i, ``c.out_dtype``, ``c.scalar(v)``, ``c.refuse(detail)``),
and the node's schema arguments with tensors replaced by ONNX value names. It returns the output
name, or a list for ops with several outputs (None where an output has no ONNX counterpart: a
batch norm's saved statistics; reading one raises). Everything exporter-specific a rule needs
comes through ``b`` and ``c``: ops never import ``ember.onnx``."""
from __future__ import annotations

import numpy as np

from .errors import OnnxExporterError, UnsupportedOperatorError
from ..compiler import _call
from ..compiler.dynamic import SymInt, has_symbols
from ..compiler.graph import Ref, rebuild
from ..dispatch.grad_mode import no_grad


class Context:
    """What a rule may ask about the node it translates."""

    def __init__(self, b, graph, node, inputs, dyn_sizes, probe=None, index=None):
        self.b, self.graph, self.node, self.inputs = b, graph, node, inputs
        self.dyn_sizes = dyn_sizes
        self.probe = probe           # (graph, inputs) captured at other dynamic sizes, or None
        self.index = index
        meta = node.meta
        first = meta[0] if isinstance(meta, list) else meta
        self.out_shape = first[0] if first else None
        self.out_dtype = first[1] if first else None

    def meta(self, pos):
        ref = self.node.args[pos]
        if not isinstance(ref, Ref):
            return None
        if ref.kind == "input":
            t = self.inputs[ref.index]
            return tuple(t.shape), t.dtype, self.graph.input_layouts[ref.index]
        if ref.kind == "const":
            c = self.graph.constants[ref.index]
            return tuple(c.shape), c.dtype, (c._stride, c._offset)
        n = self.graph.nodes[ref.index]
        m, lay = n.meta, getattr(n, "layout", None)
        if ref.item is not None:
            m, lay = m[ref.item], lay[ref.item] if lay else None
        return m[0], m[1], lay

    def shape(self, pos):
        return self.meta(pos)[0]

    def dynamic_dims(self, pos):
        """The dimensions of tensor argument ``pos`` whose size follows a dynamic axis (they
        differ between the two captures)."""
        ref = self.node.args[pos]
        if self.probe is None or not isinstance(ref, Ref) or ref.kind == "const":
            return set()
        graph_b, inputs_b = self.probe
        if ref.kind == "input":
            other = tuple(inputs_b[ref.index].shape)
        else:
            m = graph_b.nodes[ref.index].meta
            other = (m[ref.item] if ref.item is not None else m)[0]
        return {d for d, (x, y) in enumerate(zip(self.shape(pos), other)) if x != y}

    def concrete(self, v):
        """A ``SymInt`` at the example sizes (ints pass through)."""
        return v.value(self.inputs) if isinstance(v, SymInt) else v

    def sym(self, v):
        """A ``SymInt`` as a 1-element int64 ONNX value: ``k * Shape(input)[dim] + c``."""
        b = self.b
        name = self.input_name(v.tensor)
        dim = b.op("Gather", [b.op("Shape", [name]), b.ints([v.dim])], axis=0)
        if v.k != 1:
            dim = b.op("Mul", [dim, b.ints([v.k])])
        if v.c:
            dim = b.op("Add", [dim, b.ints([v.c])])
        return dim

    def input_name(self, index):
        return self.b.input_names[index]

    def is_symbolic(self, v):
        """Whether ``v`` is a ``SymInt``: an int that follows a dynamic axis."""
        return isinstance(v, SymInt)

    def refuse(self, detail="", op=None):
        """Raise ``UnsupportedOperatorError`` for this node's op (or the public name ``op``)."""
        raise UnsupportedOperatorError(op or self.node.op.name, self.b.opset, detail=detail)

    def fail(self, message):
        """Raise ``OnnxExporterError(message)``: the program can't be exported as it is."""
        raise OnnxExporterError(message)

    def scalar(self, value, dtype=None):
        dtype = dtype or self.out_dtype
        return self.b.const(np.asarray(value, dtype=np.dtype(dtype.np)), "scalar")

    def operand(self, x, dtype=None):
        return x if isinstance(x, str) else self.scalar(x, dtype)

    def shape_tensor(self, target):
        """A reshape/full target as an ONNX int64 tensor: entries that are a dynamic input
        dimension (or a multiple of one, a flatten) are read from the input's runtime
        ``Shape``; the rest stay constants."""
        if any(isinstance(t, SymInt) for t in target):
            return self._symbolic_shape(target)
        target = [int(t) for t in target]
        if not self.dyn_sizes or -1 in target and sum(
                1 for t in target if t in self.dyn_sizes) == 0:
            return self.b.ints(target)
        exact = any(t in self.dyn_sizes for t in target)
        parts, static = [], []
        for t in target:
            # a dimension equal to a dynamic size is that size; only when none is, one
            # multiple of it is a flattened dynamic dimension
            src = self._dynamic_source(t, multiples=not exact)
            if src is not None and not exact:
                exact = True
            if src is None:
                static.append(t)
                continue
            if static:
                parts.append(self.b.ints(static))
                static = []
            parts.append(src)
        if static:
            parts.append(self.b.ints(static))
        if len(parts) == 1:
            return parts[0]
        return self.b.op("Concat", parts, axis=0)

    def _symbolic_shape(self, target):
        parts, static = [], []
        for t in target:
            if isinstance(t, SymInt):
                if static:
                    parts.append(self.b.ints(static))
                    static = []
                parts.append(self.sym(t))
            else:
                static.append(int(t))
        if static:
            parts.append(self.b.ints(static))
        return parts[0] if len(parts) == 1 else self.b.op("Concat", parts, axis=0)

    def _dynamic_source(self, t, multiples):
        b = self.b
        if t <= 0:
            return None
        for size, (name, axis) in self.dyn_sizes.items():
            if t == size or (multiples and size > 1 and t % size == 0):
                dim = b.op("Gather", [b.op("Shape", [name]), b.ints([axis])], axis=0)
                if t != size:
                    dim = b.op("Mul", [dim, b.ints([t // size])])
                return dim
        return None


def translate(b, graph, values, inputs, dyn_sizes, const_arrays, probe=None):
    """Emit every node of ``graph``; ``values`` maps (kind, index, item) to ONNX names.
    ``probe``: the (graph, inputs) of a second capture at other dynamic sizes."""
    b.input_names = [values[("input", i, None)] for i in range(len(inputs))]

    folded = {}             # graph key -> ember tensor, for constant folding
    for i, c in enumerate(graph.constants):
        folded[("const", i, None)] = c

    def key(ref):
        return (ref.kind, ref.index, ref.item)

    for i, node in enumerate(graph.nodes):
        name = getattr(node.op, "name", str(node.op))
        rule = getattr(node.op, "onnx", None)
        refs = [a for a in _flat(node.args) if isinstance(a, Ref)]
        # a rule marked foldable whose every input is a constant: computed once, stored
        foldable = b.fold and getattr(rule, "fold", False)
        if foldable and refs and all(key(r) in folded for r in refs) and not node.kwargs \
                and not has_symbols(node.args):
            def load(a):
                if isinstance(a, Ref):
                    return folded[key(a)]
                if isinstance(a, (list, tuple)):
                    return rebuild(a, [load(x) for x in a])
                return a
            with no_grad():
                value = _call(node, load)
            folded[("node", i, None)] = value
            values[("node", i, None)] = b.const(value.detach().cpu().numpy(), f"fold_{name}")
            continue
        if rule is None:
            raise UnsupportedOperatorError(name, b.opset)

        def resolve(a):
            if isinstance(a, Ref):
                k = key(a)
                if k not in values:
                    raise OnnxExporterError(
                        f"ember.onnx.export: {name} reads output {a.item} of "
                        f"{graph.nodes[a.index].op.name}, which has no ONNX counterpart")
                v = values[k]
                if v is None:
                    raise OnnxExporterError(
                        f"ember.onnx.export: {name} reads output {a.item} of "
                        f"{graph.nodes[a.index].op.name}, which has no ONNX counterpart")
                return v
            if isinstance(a, (list, tuple)):
                return rebuild(a, [resolve(x) for x in a])
            return a
        ctx = Context(b, graph, node, inputs, dyn_sizes, probe, i)
        out = rule(b, ctx, *[resolve(a) for a in node.args])
        if isinstance(out, list):
            for k, o in enumerate(out):
                values[("node", i, k)] = o
        else:
            values[("node", i, None)] = out


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a
