"""Batching rules (``ember.func.vmap``) every op family shares, made from an op's schema.

A rule is ``rule(args, bdims, layer) -> (outputs, out_dims)``: ``args`` are the op's arguments
with each batched tensor replaced by its physical tensor (the batch in dim ``bdims[i]``, always 0
here; ``None`` for arguments that are not batched; a tuple per element for a ``Tensor[]``);
``layer`` is the vmap running the rule (``batch_size``, ``randomness``, ``fallback(op, args,
bdims)``). Rules call ops on the physical tensors, so they work on every backend and under every
other transform. This module is part of the rules layer under the op families: the ops it calls
are reached through ``_primitives``, and it never imports ``ember.func``.

Family modules attach them beside their defines (``op.def_batch_rule(_batching.elementwise(op))``
in a loop over a table's rows); the makers here cover the shapes of ops ember has: elementwise
with broadcasting, reductions over ``int[] dim``, ops along one ``int dim``, and views.
"""
from __future__ import annotations

from .._tensor import Tensor
from . import _primitives as P


# -- physical tensors ---------------------------------------------------------------------------
def logical_ndim(x, bdim) -> int:
    return x.ndim - (bdim is not None)


def unsqueeze_at(x, pos, n=1):
    """``x`` with ``n`` size-1 dims inserted at physical position ``pos`` (a view)."""
    if n <= 0:
        return x
    return P.view_op(x, x._shape[:pos] + (1,) * n + x._shape[pos:])


def pad_logical(x, rank):
    """Physical ``x`` (batch in dim 0) with size-1 dims after the batch so its example has
    ``rank`` dims (how broadcasting lines up an example of lower rank)."""
    return unsqueeze_at(x, 1, rank - (x.ndim - 1))


def materialize(x, bdim, size):
    """``x`` with the batch in dim 0: an unbatched tensor is expanded (a view, no copy)."""
    if bdim is not None:
        return x
    return P.expand_op(unsqueeze_at(x, 0), (size,) + x._shape)


def batch_size_of(args, bdims, layer) -> int:
    for a, d in zip(args, bdims):
        if isinstance(d, tuple):
            for x, dx in zip(a, d):
                if dx is not None:
                    return x._shape[dx]
        elif d is not None:
            return a._shape[d]
    return layer.batch_size


def inplace_check(op, args, bdims):
    """An in-place op writes into its target: a batched value can't go into an unbatched one."""
    for i in op.mutates:   # an optional target left out (None) receives nothing
        if i < len(bdims) and bdims[i] is None and args[i] is not None:
            others = [d for j, d in enumerate(bdims) if j != i and
                      (d is not None if not isinstance(d, tuple) else any(
                          x is not None for x in d))]
            if others:
                raise inplace_error(op.name, op.schema.arg_names[i])


def _multi(op, out):
    return out, (0,) * len(out) if isinstance(out, (tuple, list)) else 0


def unbatched(op, args):
    out = op(*args)
    return out, ((None,) * len(out) if isinstance(out, (tuple, list)) else None)


# -- elementwise --------------------------------------------------------------------------------
def elementwise(op):
    """Tensors that broadcast together, output(s) of the broadcast shape: each batched operand
    gets size-1 dims after its batch so examples of lower rank broadcast as they would alone."""
    positions = op.schema.tensor_positions
    inplace = bool(op.mutates)

    def rule(args, bdims, layer):
        rank = 0
        any_batched = False
        for i in positions:
            if i < len(args):
                a = args[i]
                if isinstance(a, Tensor):
                    b = bdims[i] is not None
                    any_batched |= b
                    r = a.ndim - b
                    if r > rank:
                        rank = r
        if not any_batched:
            return unbatched(op, args)
        if inplace:
            inplace_check(op, args, bdims)
        new = list(args)
        for i in positions:
            if i < len(args) and bdims[i] is not None:
                new[i] = pad_logical(args[i], rank)
        return _multi(op, op(*new))
    rule.family = "elementwise"
    return rule


# -- reductions and ops along dims ----------------------------------------------------------------
def over_dims(op, dim_pos=1):
    """``op(self, int[] dim, ...)`` with the dims already wrapped: dims shift past the batch."""
    def rule(args, bdims, layer):
        if bdims[0] is None:
            return unbatched(op, args)
        new = list(args)
        new[dim_pos] = tuple(d + 1 for d in args[dim_pos])
        return _multi(op, op(*new))
    rule.family = "reduction"
    return rule


def along_dim(op, dim_pos=1, optional=False):
    """``op(self, int dim, ...)``: the dim shifts past the batch. A 0-d example (whose only
    valid dim is 0) gets a size-1 dim first and loses it afterwards; an optional dim that is
    None (argmax over everything) reduces the flattened example."""
    def rule(args, bdims, layer):
        x = args[0]
        if bdims[0] is None:
            return unbatched(op, args)
        new = list(args)
        dim = args[dim_pos]
        if dim is None and optional:
            size = x._shape[0]
            flat = P.reshape(x, (size, -1))
            new[0], new[dim_pos] = flat, 1
            out = op(*new)
            return _restore_keepdim(out, x, args), 0
        if x.ndim == 1:  # a 0-d example
            new[0] = unsqueeze_at(x, 1)
            new[dim_pos] = 1
            out = op(*new)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            fixed = [P.view_op(o, (o._shape[0],)) if isinstance(o, Tensor) and o.ndim == 2
                     else o for o in outs]
            out = type(out)(fixed) if isinstance(out, (tuple, list)) else fixed[0]
            return _multi(op, out)
        new[dim_pos] = dim + 1
        return _multi(op, op(*new))
    rule.family = "along_dim"
    return rule


def _restore_keepdim(out, x, args):
    keepdim = any(a is True for a in args[2:])
    if keepdim:
        return P.view_op(out, (x._shape[0],) + (1,) * (x.ndim - 1))
    return out


# -- views ----------------------------------------------------------------------------------------
def view_rule(op):
    """view(self, size): the example's view with the batch in front. When the batch's stride does
    not allow a view (a batch taken from an inner dim), the example is copied first."""
    def rule(args, bdims, layer):
        x, size = args[0], tuple(args[1])
        if bdims[0] is None:
            return unbatched(op, args)
        target = (x._shape[0],) + size
        try:
            return op(x, target), 0
        except RuntimeError:
            return op(P.to_copy_op(x, x.dtype), target), 0
    rule.family = "view"
    return rule


def permute_rule(op):
    def rule(args, bdims, layer):
        if bdims[0] is None:
            return unbatched(op, args)
        return op(args[0], (0,) + tuple(d + 1 for d in args[1])), 0
    rule.family = "view"
    return rule


def expand_rule(op):
    def rule(args, bdims, layer):
        x, size = args[0], tuple(args[1])
        if bdims[0] is None:
            return unbatched(op, args)
        x = pad_logical(x, len(size))
        return op(x, (x._shape[0],) + size), 0
    rule.family = "view"
    return rule


def shift_dims(op, *positions):
    """A view or shape op whose int (or int[]) arguments at ``positions`` are dims."""
    def rule(args, bdims, layer):
        if bdims[0] is None:
            return unbatched(op, args)
        new = list(args)
        for p in positions:
            d = args[p]
            new[p] = tuple(x + 1 for x in d) if isinstance(d, (list, tuple)) else d + 1
        return _multi(op, op(*new))
    rule.family = "view"
    return rule


def as_strided_rule(op):
    """as_strided(self, size, stride, offset): each example's geometry, stepped by the batch's
    stride (the offset given is the first example's, which is the batched tensor's own)."""
    def rule(args, bdims, layer):
        x, size, stride, offset = args
        if bdims[0] is None:
            return unbatched(op, args)
        return op(x, (x._shape[0],) + tuple(size), (x._stride[0],) + tuple(stride), offset), 0
    rule.family = "view"
    return rule


def last_dims(op):
    """Ops on the trailing dims of their one tensor (tril, triu, svdvals): the batch is one
    more leading dim."""
    def rule(args, bdims, layer):
        if bdims[0] is None:
            return unbatched(op, args)
        return _multi(op, op(*args))
    rule.family = "trailing"
    return rule


def loop(op, args, bdims, layer):
    """Run ``op`` once per example and stack (the vmap's fallback), for the rare cases a rule
    does not cover; it warns once per op like any fallback."""
    return layer.fallback(op, tuple(args), tuple(bdims))


def fold_into_leading(op, tensor_positions=(0,)):
    """Ops whose tensors at ``tensor_positions`` carry a leading batch dim of their own (N in
    conv/pool/norm's (N, C, ...)) and whose other tensors (weights) are not batched: vmap's
    batch folds into N, one call for the whole batch. Batched weights take the fallback."""
    def rule(args, bdims, layer):
        if all(bdims[i] is None for i in range(len(args)) if i not in tensor_positions):
            if all(bdims[i] is None for i in tensor_positions):
                return unbatched(op, args)
            size = batch_size_of(args, bdims, layer)
            new = list(args)
            for i in tensor_positions:
                x = materialize(args[i], bdims[i], size)
                new[i] = P.reshape(x, (size * x._shape[1],) + x._shape[2:])
            out = op(*new)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            folded = [P.reshape(o, (size, o._shape[0] // size) + o._shape[1:])
                      if isinstance(o, Tensor) and o.ndim else o for o in outs]
            out = type(out)(folded) if isinstance(out, (tuple, list)) else folded[0]
            return _multi(op, out)
        return loop(op, args, bdims, layer)
    rule.family = "leading"
    return rule


# -- what every vmap needs: running per example, and vmap's errors --------------------------------
def per_example(op, args, bdims, size, before_each=None):
    """``op`` on each example (``before_each(b)`` first), the outputs stacked along dim 0; an
    in-place op writes each example's slice of its (batched) target."""
    select_op = P.select_op
    name = op.name
    results = []
    for b in range(size):
        lane = []
        for a, d in zip(args, bdims):
            if d is None:
                lane.append(a)
            elif isinstance(d, tuple):
                lane.append(type(a)(x if dx is None else select_op(x, dx, b)
                                    for x, dx in zip(a, d)))
            else:
                lane.append(select_op(a, d, b))
        if before_each is not None:
            before_each(b)
        results.append(op(*lane))
    # an in-place op returns its target (Tensor(a!)); an op that also writes an argument on
    # the side (batch norm's running statistics) returns fresh outputs, stacked like any op's
    returns_target = bool(op.mutates) and (not op.schema.returns or
                                           any(r.mutated for r in op.schema.returns))
    if returns_target and all(d is None for d in bdims):
        return results[0], None
    first = results[0]
    if returns_target:
        i = op.mutates[0]
        return args[i], bdims[i]
    if isinstance(first, (tuple, list)):
        stacked = tuple(_stack(name, [r[k] for r in results]) for k in range(len(first)))
        return (stacked if isinstance(first, tuple) else list(stacked)), 0
    return _stack(name, results), 0


def _stack(name, items):
    # an output an op leaves undefined (a backward op's gradient its output_mask leaves out)
    # is None for every example: it stays None
    if all(x is None for x in items):
        return None
    for x in items:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"vmap: {name} returned a {type(x).__name__} for an example of "
                               f"the batch; only Tensors can be stacked")
    shape = items[0]._shape
    for x in items[1:]:
        if x._shape != shape:
            raise RuntimeError(f"vmap: {name} gives outputs of different shapes across the batch "
                               f"({list(shape)} and {list(x._shape)}): its output shape depends "
                               f"on the values, which vmap can't batch")
    return P.cat_op([P.view_op(x, (1,) + shape) for x in items], 0, items[0].dtype)


def inplace_error(op_name, arg_name="self"):
    return RuntimeError(
        f"vmap: {op_name}({arg_name}, *extra_args) is not possible because there exists a Tensor "
        f"`other` in extra_args that has more elements than `{arg_name}`. This happened due to "
        f"`other` being vmapped over but `{arg_name}` not being vmapped over in a vmap. Please "
        f"try to use out-of-place operators instead of {op_name}. If said operator is being "
        f"called inside the PyTorch framework, please file a bug report instead.")


RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                    "use the 'same' or 'different' randomness flags on vmap or perform the "
                    "randomness operation out of vmap")
