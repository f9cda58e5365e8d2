"""Forward-mode rules (the ``jvp`` facet) every op family shares.

A rule is ``jvp(ctx, tangents, *args)``: ``tangents`` mirrors ``args`` (the tangent of each tensor
argument, None where it has none or is not a tensor, a list for a ``Tensor[]``), ``ctx.result`` is
the primal output. It returns the output's tangent (a tuple for several outputs; None means
zero). Rules are written in ember ops, so they run on every backend and under other transforms.

Two makers cover most ops:

* ``elementwise(op)`` — derived from the op's backward formula. An elementwise op's Jacobian is
  diagonal per input, so the forward derivative along input i is the backward formula applied to
  the tangent instead of the output gradient (conjugated around it for complex inputs, where the
  backward multiplies by the conjugate derivative).
* ``linear(op, positions)`` — for ops linear in the tensors at ``positions`` (views, shape ops,
  gathers, sums, copies): the op applied to their tangents (zeros where one is missing).
"""
from __future__ import annotations

from .._tensor import Tensor
from . import _batching, _grad
from ..dispatch.facets import Derivative


class FormulaContext:
    """The node-like ``ctx`` a backward formula reads, outside any graph: ``needs(i)`` is true
    only for ``wanted``; ``info`` is the setup of ``formula`` (default: the op's derivative)."""

    __slots__ = ("_op", "_args", "result", "_wanted", "info")

    def __init__(self, op, args, result, wanted, formula=None):
        self._op = op
        self._args = args
        self.result = result
        self._wanted = wanted
        d = op.derivative if formula is None else formula
        self.info = d.setup(*args) if d.setup is not None else None

    def name(self):
        return self._op.name

    def needs(self, i):
        return i in self._wanted

    @property
    def needs_input_grad(self):
        return tuple(i in self._wanted for i in range(len(self._args)))

    def meta(self, i):
        a = self._args[i]
        return (a._shape, a.dtype, a.device)


def add(a, b):
    """Sum of two tangents, None standing for zero."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def or_zeros(t, like):
    return _grad.zeros_like(like) if t is None else t


def elementwise(op):
    """The jvp of an elementwise op from its backward formula (see the module doc)."""
    def jvp(ctx, tangents, *args):
        d = op.derivative
        total = None
        for i, t in enumerate(tangents):
            if t is None or not isinstance(args[i], Tensor):
                continue
            res = d.backward(FormulaContext(op, args, ctx.result, (i,)), _grad.conj(t), *args)
            r = res[i] if i < len(res) else None
            if r is not None:
                total = add(total, _grad.conj(r))
        return total
    jvp.family = "elementwise"
    return jvp


def linear(op, positions=(0,)):
    """The jvp of an op linear in its tensors at ``positions``: the op on their tangents."""
    def jvp(ctx, tangents, *args):
        if all(_absent(tangents[p]) for p in positions if p < len(tangents)):
            return None
        new = list(args)
        for p in positions:
            if p >= len(args):
                continue
            t, a = tangents[p], args[p]
            if isinstance(a, (list, tuple)):
                new[p] = type(a)(or_zeros(ti, ai) if isinstance(ai, Tensor) else ai
                                 for ti, ai in zip(t or [None] * len(a), a))
            elif isinstance(a, Tensor):
                new[p] = or_zeros(t, a)
        return op(*new)
    jvp.family = "linear"
    return jvp


def _absent(t):
    return t is None or (isinstance(t, list) and all(x is None for x in t))


def zero(ctx, tangents, *args):
    """Piecewise-constant or non-reparameterized outputs: no tangent."""
    return None


def attach_elementwise(*ops):
    """Give elementwise ops (and their in-place twins) their vmap rule and, when they have a
    backward formula, their jvp (``ember.func``)."""
    for op in ops:
        if op is None:
            continue
        op.def_batch_rule(_batching.elementwise(op))
        if not op.mutates and op.derivative.__class__ is Derivative:
            op.def_jvp(elementwise(op))
