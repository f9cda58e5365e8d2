"""Forward-mode AD in the ``ember.func`` handler: one op at one tangent level.

The op runs one level down (the level's tangents are invisible there), then its tangent comes
from, in order: the op's ``jvp`` facet (``jvp(ctx, tangents, *args)``, ``ctx.result`` is the
primal output); a core composite's decomposition (its inner ops carry the tangents); the
transpose of its backward formula (the backward is linear in the output gradient, so the
vector-Jacobian product of the backward with respect to that gradient is the Jacobian-vector
product); else PyTorch's "not implemented" error naming the op. An in-place op is its
functional twin followed by ``copy_``, whose rule moves the tangent into the target.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.facets import NOT_DIFFERENTIABLE, CustomDerivative, Derivative
from ..ops import _grad, _tangents
from ..ops import conversion as _conv
from ..ops import views as _views
from ..autograd import dual as _dual
from ..dispatch import levels as _levels
from ._calls import _decomposes, _positional
from ..autograd.nodes import bind, validate
from ._autodiff import vjp


class JvpContext:
    """What a jvp rule reads besides the tangents and arguments."""

    __slots__ = ("op", "result")

    def __init__(self, op, result):
        self.op = op
        self.result = result


def not_implemented(op_name):
    return NotImplementedError(f"Trying to use forward AD with {op_name} that does not support "
                               f"it because it has not been implemented yet.")


def tangents_for(args, level):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(_dual.tangent_at(a, level))
        elif isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
            out.append([_dual.tangent_at(x, level) if isinstance(x, Tensor) else None for x in a])
        else:
            out.append(None)
    return tuple(out)


def forward_level(op, args, kwargs, level):
    args = _positional(op, args, kwargs)
    if op.mutates:
        return _inplace(op, args, level)
    d = op.derivative
    rule = op.jvp
    if rule is None:
        if d is NOT_DIFFERENTIABLE:
            with _levels.Ceiling(level - 1):
                return op(*args)
        if _decomposes(op):
            return op.composite(*args)
        if d.__class__ is Derivative:
            rule = _transposed_backward(d)
        elif d.__class__ is CustomDerivative or d is None:
            raise not_implemented(op.name)
    tangents = tangents_for(args, level)
    with _levels.Ceiling(level - 1):
        out = op(*args)
        t_out = rule(JvpContext(op, out), tangents, *args)
        if t_out is NotImplemented:   # the op's rule leaves this case to the general one
            t_out = transposed_jvp(op, d, args, out, tangents)
    _dual.attach(out, t_out, level)
    return out


# -- in-place ops -------------------------------------------------------------------------------
def _inplace(op, args, level):
    target = args[op.mutates[0]]
    if op.jvp is not None:  # ops that overwrite without reading (copy_, fill_, random fills)
        tangents = tangents_for(args, level)
        with _levels.Ceiling(level - 1):
            new_t = op.jvp(JvpContext(op, None), tangents, *args)
            op(*args)
        set_inplace_tangent(target, new_t, level)
        return target
    twin, adapt = functional_twin(op)
    if twin is None:
        raise not_implemented(op.name)
    result = twin(*adapt(args))  # at this level: the twin's tangent is computed
    _conv.copy_op(target, result)
    return target


def set_inplace_tangent(target, new_t, level):
    """The target of an in-place op now has tangent ``new_t`` (None: zero): written into its
    existing tangent when there is one (views of it see the change), else attached."""
    if target.dtype.category < _dtype.FLOATING:
        return
    old = _dual.tangent_at(target, level)
    if old is None and new_t is not None:
        old = _view_of_base_tangent(target, level)
    if new_t is None:
        if old is not None:
            with _levels.Ceiling(level - 1):
                old.zero_()
        return
    with _levels.Ceiling(level - 1):
        new_t = _dual.conform(new_t, target._shape, target.dtype, target.device)
        if old is not None and old.__class__ is new_t.__class__ and old._shape == target._shape:
            _conv.copy_op(old, new_t)
            return
        if old is None:
            new_t = new_t.clone()
    _dual.set_tangent(target, level, new_t)


def _root(t):
    b = getattr(t, "_view_base", None)
    while b is not None:
        t = b
        b = getattr(t, "_view_base", None)
    return t


def _view_of_base_tangent(view, level):
    """An in-place write into a view changes its base: the view's tangent must be the same view
    of the base's tangent (a zero one is made for a base without). Possible when the base's
    tangent is laid out like the base; otherwise None (the view alone gets the tangent)."""
    base = _root(view)
    if base is view or base.dtype is not view.dtype:
        return None
    with _levels.Ceiling(level - 1):
        bt = _dual.tangent_at(base, level)
        if bt is None:
            if not base.is_contiguous():
                return None
            bt = _grad.zeros_like(base)
            _dual.set_tangent(base, level, bt)
        if bt._shape != base._shape or bt._stride != base._stride:
            return None
        vt = _views.as_strided_op(bt, view._shape, view._stride, bt._offset + view._offset -
                           base._offset)
    _dual.set_tangent(view, level, vt)
    return vt


def functional_twin(op):
    twin = op.functional or dispatcher.find_op(op.name[:-1])
    if twin is None:
        return None, None
    n_in, n_tw = len(op.schema.arguments), len(twin.schema.arguments)
    if n_tw == n_in + 1:  # unary in-place ops leave out the compute dtype
        return twin, lambda args: tuple(args) + (args[0].dtype,)
    if n_tw == n_in:
        return twin, tuple
    return None, None


# -- the transpose of a backward formula ---------------------------------------------------------
def _transposed_backward(d):
    def rule(ctx, tangents, *args):
        return transposed_jvp(ctx.op, d, args, ctx.result, tangents)
    return rule


class _FormulaCtx(_tangents.FormulaContext):
    """The context of a bound backward formula (``spec``), whose arguments may be tensor lists."""

    __slots__ = ()

    def __init__(self, op, spec, args, result, needs):
        super().__init__(op, args, result, {i for i, n in enumerate(needs) if n}, spec.formula)

    def name(self):
        return f"{self._op.name} (forward AD from its backward)"

    def meta(self, i):
        a = self._args[i]
        if isinstance(a, (list, tuple)):
            a = a[0]
        return (a._shape, a.dtype, a.device)

    def metas_of(self, i):
        return [(x._shape, x.dtype, x.device) for x in self._args[i]]


def transposed_jvp(op, d, args, out, tangents):
    """Σ_i J_i t_i, as the vjp of ``g -> backward(g)`` (which is J^T g) with cotangents t_i."""
    spec = bind(op, d)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    flags = spec.diff_out * len(outs) if spec.list_out else spec.diff_out
    diff_out = [k for k, o in enumerate(outs) if flags[k] and isinstance(o, Tensor)
                and o.dtype.category >= _dtype.FLOATING]
    if not diff_out:
        return None
    needs = [False] * len(args)
    wanted = []   # (position, element or None, tangent, meta)
    for i, is_list in spec.slots:
        t = tangents[i] if i < len(tangents) else None
        if t is None:
            continue
        if is_list:
            for j, tj in enumerate(t):
                if tj is not None:
                    wanted.append((i, j, tj))
                    needs[i] = True
        else:
            wanted.append((i, None, t))
            needs[i] = True
    if not wanted:
        return None
    ctx = _FormulaCtx(op, spec, args, out, needs)

    def backward_of(*gs):
        if spec.n_out == 1:
            g = gs[0]
        else:
            g = [None] * len(outs)
            for k, gk in zip(diff_out, gs):
                g[k] = gk
        res = d.backward(ctx, g, *args)
        picked = []
        for i, j, _ in wanted:
            r = res[i] if i < len(res) else None
            if j is not None:
                r = r[j] if r is not None else None
                x = args[i][j]
            else:
                x = args[i]
            meta = (x._shape, x.dtype, x.device)
            if r is None:
                r = _grad.zeros(x._shape, x)
            picked.append(validate(r, meta, ctx, i))
        return tuple(picked)

    g0 = [_grad.zeros_like(outs[k]) for k in diff_out]
    _, pullback = vjp(backward_of, *g0)
    got = pullback(tuple(t for _, _, t in wanted))
    if spec.n_out == 1:
        return got[0]
    result = [None] * spec.n_out
    for k, gk in zip(diff_out, got):
        result[k] = gk
    return tuple(result)
