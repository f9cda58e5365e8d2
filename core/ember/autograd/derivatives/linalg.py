"""Derivatives of the linear algebra primitives (``ops/linalg.py``). addmm, outer, tensordot and
the other composites decompose into matmul and elementwise ops above autograd."""
from __future__ import annotations

from ...ops.linalg import matmul_op
from ...ops.views import permute_op, reshape, view_op
from . import derivative
from ._common import conj


def _mT(t):
    n = t.ndim
    dims = list(range(n))
    dims[-1], dims[-2] = dims[-2], dims[-1]
    return permute_op(t, tuple(dims))


def _col_major(t):
    """A 2-D operand laid out as the transpose of a contiguous matrix."""
    return t.ndim == 2 and t._stride[0] == 1 and t._stride[1] != 1 and t._shape[1] > 1


def _matmul_name(self, other):
    a, b = self.ndim, other.ndim
    if a == 1 and b == 1:
        return "DotBackward0"
    if a == 2 and b == 1:
        return "MvBackward0"
    if a == 2 and b == 2:
        return "MmBackward0"
    if a == 3 and b == 3 and self._shape[0] == other._shape[0]:
        return "BmmBackward0"
    return "MatmulBackward0"


@derivative("matmul", save={"self": "other", "other": "self"}, complex_ok=True,
            name=_matmul_name, setup=lambda a, b: (a.ndim, b.ndim, _col_major(b)))
def _matmul(ctx, g, self, other):
    # 1-D operands take part as (1, k) and (k, 1) matrices; the node sums the batch dims
    # that broadcasting added back to each operand's shape
    a_vec, b_vec = ctx.info[0] == 1, ctx.info[1] == 1
    if a_vec and b_vec:
        g2 = view_op(g, (1, 1))
    elif a_vec:
        g2 = g.unsqueeze(-2)
    elif b_vec:
        g2 = g.unsqueeze(-1)
    else:
        g2 = g
    ga = gb = None
    if ctx.needs(0):
        b2 = other.unsqueeze(-1) if b_vec else other
        ga = matmul_op(g2, _mT(conj(b2)))
        if a_vec:
            ga = reshape(ga, ga._shape[:-2] + ga._shape[-1:])
    if ctx.needs(1):
        a2 = self.unsqueeze(0) if a_vec else self
        if ctx.info[2] and ctx.info[0] == 2:
            # other is a transposed view (x @ W.t() in linear): make its gradient as
            # (g^T a)^T so it arrives at W contiguous and the engine need not copy it
            gb = _mT(matmul_op(_mT(g2), conj(a2)))
        else:
            gb = matmul_op(_mT(conj(a2)), g2)
        if b_vec:
            gb = reshape(gb, gb._shape[:-1])
    return ga, gb


@derivative("einsum", save=("operands",))
def _einsum(ctx, g, equation, operands):
    from ...ops.linalg import einsum_op
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    metas = ctx.metas_of(1)
    grads = []
    for i, term in enumerate(terms):
        if metas[i] is None:
            grads.append(None)
            continue
        if len(set(term)) != len(term):
            raise NotImplementedError(f"einsum backward: operand {i} repeats a subscript "
                                      f"({term!r}); taking diagonals is not supported")
        others = [t for j, t in enumerate(terms) if j != i]
        present = set(out).union(*others) if others else set(out)
        kept = "".join(c for c in term if c in present)
        eq = ",".join([out] + others) + "->" + kept
        r = einsum_op(eq, [g] + [operands[j] for j in range(len(terms)) if j != i])
        shape = metas[i][0]
        if kept != term:  # subscripts summed away inside this operand alone: broadcast back
            full = tuple(r._shape[kept.index(c)] if c in kept else 1 for c in term)
            sizes = [n if c not in kept else -1 for c, n in zip(term, shape)]
            r = reshape(r, full).expand(*sizes)
        grads.append(r)
    return None, grads
