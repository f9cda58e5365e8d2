"""Dynamic shapes: one graph for every size of the dimensions that vary between calls.

A captured graph holds Python ints taken from shapes (``view(x, [64, -1])``). When a compiled
function meets a new size of a dimension (``dynamic=True``, or by default after the first such
change, torch's "automatic dynamic"), it captures once more and compares the two graphs: every
int that differs must be explained by a varying input dimension ``s`` as ``k * s`` (a flatten
of s with static dimensions) or ``s + c``. Then those ints become ``SymInt``s evaluated from
the inputs' shapes on each call, and new sizes replay the same graph without capturing.

The generalized graph is guarded by ``ShapeGuard``: static dimensions must be equal, the
dimensions that moved together in the two captures (one symbol) must still be equal to each
other, and sizes 0 and 1 are never symbolic (they change broadcasting and emptiness, as
torch's specialization). Graphs whose differences aren't explained stay specialized per
shape (a recompile each, counted against the recompile limit)."""
from __future__ import annotations

from dataclasses import dataclass

from .graph import Graph, Ref, rebuild


@dataclass(frozen=True)
class SymInt:
    """``k * inputs[tensor].shape[dim] + c`` at run time."""
    tensor: int
    dim: int
    k: int = 1
    c: int = 0

    def value(self, inputs):
        return self.k * inputs[self.tensor]._shape[self.dim] + self.c

    def __repr__(self):
        base = f"s{self.tensor}_{self.dim}"
        if self.k != 1:
            base = f"{self.k}*{base}"
        return base if not self.c else f"({base}{self.c:+d})"


def family_key(shapes):
    """The part of the tensor shapes a dynamic family shares: ranks, and which sizes are 0/1."""
    return tuple(tuple(s if s in (0, 1) else -1 for s in shape) for shape in shapes)


class ShapeGuard:
    """Which input dimensions are static (with their size) and which share a symbol."""

    def __init__(self, shapes_a, shapes_b):
        self.static = {}
        self.symbols = {}          # (a_size, b_size) -> [(tensor, dim), ...]
        for t, (sa, sb) in enumerate(zip(shapes_a, shapes_b)):
            for d, (x, y) in enumerate(zip(sa, sb)):
                if x == y:
                    self.static[(t, d)] = x
                else:
                    self.symbols.setdefault((x, y), []).append((t, d))

    def holds(self, shapes):
        for (t, d), size in self.static.items():
            if shapes[t][d] != size:
                return False
        for members in self.symbols.values():
            first = shapes[members[0][0]][members[0][1]]
            if first in (0, 1) or any(shapes[t][d] != first for t, d in members[1:]):
                return False
        return True


def generalize(a: Graph, b: Graph, shapes_a, shapes_b):
    """A graph valid for every size of the dimensions that changed from ``shapes_a`` to
    ``shapes_b`` and its guard, or None when the two captures differ in another way."""
    guard = ShapeGuard(shapes_a, shapes_b)
    if not guard.symbols or len(a.nodes) != len(b.nodes) or \
            len(a.constants) != len(b.constants) or \
            any(x is not y for x, y in zip(a.constants, b.constants)):
        return None
    symbols = [(x, y, members[0]) for (x, y), members in guard.symbols.items()]

    def explain(va, vb):
        for x, y, (t, d) in symbols:
            if va * y == vb * x and va % x == 0:
                return SymInt(t, d, k=va // x)
        for x, y, (t, d) in symbols:
            if va - x == vb - y:
                return SymInt(t, d, c=va - x)
        raise _Unexplained

    def merge(va, vb):
        if isinstance(va, Ref) or isinstance(vb, Ref):
            if va != vb:
                raise _Unexplained
            return va
        if isinstance(va, (list, tuple)) and isinstance(vb, (list, tuple)):
            if len(va) != len(vb) or type(va) is not type(vb):
                raise _Unexplained
            return rebuild(va, [merge(x, y) for x, y in zip(va, vb)])
        if isinstance(va, dict) and isinstance(vb, dict):
            if va.keys() != vb.keys():
                raise _Unexplained
            return {k: merge(va[k], vb[k]) for k in va}
        if type(va) is int and type(vb) is int and va != vb:
            return explain(va, vb)
        if va is vb or (type(va) is type(vb) and _equal(va, vb)):
            return va
        raise _Unexplained

    try:
        nodes = []
        for x, y in zip(a.nodes, b.nodes):
            if x.op is not y.op:
                return None
            node = x.moved(args=merge(x.args, y.args), kwargs=merge(x.kwargs, y.kwargs))
            if x.view_of is not None and (x.layout != y.layout or x.meta != y.meta):
                node.view_of = None          # the view's geometry follows the sizes
            nodes.append(node)
        output = merge(a.output, b.output)
    except _Unexplained:
        return None
    graph = Graph(nodes=nodes, constants=a.constants, n_inputs=a.n_inputs, output=output)
    graph.plain = getattr(a, "plain", False) and getattr(b, "plain", False)
    return graph, guard


def _equal(x, y):
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - objects without a usable == are different
        return False


class _Unexplained(Exception):
    pass


def has_symbols(x):
    if isinstance(x, SymInt):
        return True
    if isinstance(x, (list, tuple)):
        return any(has_symbols(v) for v in x)
    if isinstance(x, dict):
        return any(has_symbols(v) for v in x.values())
    return False
