"""Contractions: ``tensordot`` (a composite of permutes, reshapes and one matmul) and
``einsum`` (an op with an explicit equation; the public function validates the equation like
PyTorch and spells ellipses out as letters)."""
from __future__ import annotations

import math
import string

from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import reduction as _reduction
from .. import views as _views
from .. import _grad
from .._util import _broadcast_pair, _dtype_title, contiguous_strides, write_out
from . import products as _products
from ._rules import check_tensors, no_bool


# -- tensordot ----------------------------------------------------------------------------------
def _tensordot(a, b, dims_a, dims_b):
    sum_op, permute_op, reshape = _reduction.sum_op, _views.permute_op, _views.reshape
    # a contracted dim of size 1 broadcasts against the other side: sum that side first
    for x, y in zip(dims_a, dims_b):
        if a._shape[x] != b._shape[y]:
            if a._shape[x] == 1:
                b = sum_op(b, (y,), True, b.dtype)
            else:
                a = sum_op(a, (x,), True, a.dtype)
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    shape_a = tuple(a._shape[d] for d in free_a)
    shape_b = tuple(b._shape[d] for d in free_b)
    k = math.prod(a._shape[d] for d in dims_a)
    a2 = reshape(permute_op(a, tuple(free_a) + tuple(dims_a)), (math.prod(shape_a), k))
    b2 = reshape(permute_op(b, tuple(dims_b) + tuple(free_b)), (k, math.prod(shape_b)))
    return reshape(_products.matmul_op(a2, b2), shape_a + shape_b)


tensordot_op = define("tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) "
                      "-> Tensor", composite=_tensordot,
                      doc="Contract dims_self of self with dims_other of other (validated, "
                          "non-negative; sizes equal or 1).")


def _dim_list(dims, ndim):
    dims = [dims] if isinstance(dims, int) else list(dims)
    out = [_wrap_dim(d, ndim, "tensordot") for d in dims]
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims, out


def tensordot(a, b, dims=2, out=None):
    check_tensors("tensordot", a=a, b=b)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        given_a, given_b = list(range(-dims, 0)), list(range(dims))
    else:
        try:
            given_a, given_b = dims
        except (TypeError, ValueError):
            raise RuntimeError(f"tensordot expects dims to be an int or a pair of dim lists, "
                               f"got {dims!r}") from None
    given_a, dims_a = _dim_list(given_a, a.ndim)
    given_b, dims_b = _dim_list(given_b, b.ndim)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"tensordot: both dimension lists should have same length, got "
                           f"{len(dims_a)} and {len(dims_b)}")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for ga, gb, x, y in zip(given_a, given_b, dims_a, dims_b):
        sa, sb = a._shape[x], b._shape[y]
        if sa != sb and 1 not in (sa, sb):
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in "
                               f"dim {ga} and second has size {sb} in dim {gb}")
    no_bool("tensordot", a)
    r = tensordot_op(a, b, tuple(dims_a), tuple(dims_b))
    return r if out is None else write_out(out, r, "tensordot")


# -- einsum -------------------------------------------------------------------------------------
def _einsum_meta(equation, operands):
    """The op gets an explicit equation (``"ij,jk->ik"``, ellipses spelled out): each output
    label takes the broadcast size that label has among the operands."""
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum: the equation {equation!r} names {len(terms)} operands, "
                           f"got {len(operands)}")
    sizes = {}
    for i, (term, t) in enumerate(zip(terms, operands)):
        if len(term) != t.ndim:
            raise RuntimeError(f"einsum: operand {i} has shape {list(t._shape)} but the "
                               f"equation {equation!r} gives it {len(term)} subscripts")
        for c, n in zip(term, t._shape):
            old = sizes.get(c, 1)
            if n != old and 1 not in (n, old):
                raise RuntimeError(f"einsum: subscript {c} has size {n} for operand {i}, which "
                                   f"does not broadcast with size {old} seen before")
            sizes[c] = n if old == 1 else old
    return tuple(sizes[c] for c in rhs), operands[0].dtype


def _einsum_backward(ctx, g, equation, operands):
    """Each operand's gradient is the einsum of the output gradient with the other operands
    conjugated (einsum is holomorphic in each operand: PyTorch's convention ``g * conj(f')``),
    onto that operand's distinct subscripts. Then, undoing what the forward did to the operand:
    a subscript only it has was summed over, so its gradient is broadcast back; a size-1 dim
    that broadcast against the others is summed back to size 1; and a repeated subscript (a
    diagonal, a trace) read a diagonal, so the gradient is written onto that diagonal of zeros —
    the gradients torch's composite einsum (diagonal, sum, bmm) gets."""
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    metas = ctx.metas_of(1)
    grads = []
    for i, term in enumerate(terms):
        if metas[i] is None:
            grads.append(None)
            continue
        shape = metas[i][0]
        others = [t for j, t in enumerate(terms) if j != i]
        labels = "".join(dict.fromkeys(term))   # distinct subscripts, in order
        present = set(out).union(*others)
        kept = "".join(c for c in labels if c in present)
        conj_others = [_grad.conj(operands[j]) for j in range(len(terms)) if j != i]
        r = einsum_op(",".join([out] + others) + "->" + kept, [g] + conj_others)
        size = {c: shape[term.index(c)] for c in labels}
        wide = tuple(k for k, c in enumerate(kept) if size[c] == 1 and r._shape[k] != 1)
        if wide:
            r = _reduction.sum_op(r, wide, True, r.dtype)
        if kept != labels:
            r = _views.reshape(r, tuple(size[c] if c in kept else 1 for c in labels))
            r = r.expand(*(size[c] for c in labels))
        if labels != term:
            strides = contiguous_strides(shape)
            diagonal = tuple(sum(st for d, st in zip(term, strides) if d == c) for c in labels)
            r = _views.as_strided_scatter_op(_grad.zeros(shape, g), r,
                                             tuple(size[c] for c in labels), diagonal, 0)
        grads.append(r)
    return None, grads


einsum_op = define("einsum(str equation, Tensor[] operands) -> Tensor", meta=_einsum_meta,
                   derivative=Derivative(_einsum_backward, save=("operands",),
                                         complex_ok=True),
                   doc="Explicit equation of letters only; operands of one dtype.")

# sublist labels 0..51 name A..Z then a..z, so the implicit output order matches PyTorch's
_SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _sublist_equation(args):
    def term(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                out.append(_SUBLIST_LETTERS[s])
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid "
                                 f"range [0, 52), got {s!r}")
        return "".join(out)

    operands, terms = list(args[0::2]), [term(s) for s in args[1::2]]
    if len(terms) == len(operands):
        return ",".join(terms), operands
    return ",".join(terms) + "->" + term(operands.pop()), operands


def _parse_term(term, start, i, ndim):
    """(labels before the ellipsis, labels after it or None) of operand ``i``'s subscripts."""
    before, after = [], None
    j = 0
    while j < len(term):
        c = term[j]
        if c == ".":
            if term[j:j + 3] != "...":
                raise RuntimeError(f"einsum(): found '.' for operand {i} that is not part of any "
                                   f"ellipsis")
            if after is not None:
                raise RuntimeError(f"einsum(): found '.' for operand {i} for which an ellipsis "
                                   f"was already found")
            after = []
            j += 3
            continue
        if c not in string.ascii_letters:
            raise RuntimeError(f"einsum(): invalid subscript given at index {start + j} in the "
                               f"equation string, subscripts must be in [a-zA-Z]")
        (before if after is None else after).append(c)
        j += 1
    n = len(before) + len(after or ())
    if after is None and n != ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) does not "
                           f"match the number of dimensions ({ndim}) for operand {i} and no "
                           f"ellipsis was given")
    if n > ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) is more than "
                           f"the number of dimensions ({ndim}) for operand {i}")
    return before, after


def _einsum_equation(equation, operands):  # noqa: C901 - one pass over the equation
    """Validate like PyTorch and return the equation with ellipses spelled out as letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    sizes, counts = {}, {}
    ell_shape = ()
    parsed = []
    start = 0
    for i, (term, t) in enumerate(zip(terms, operands)):
        before, after = _parse_term(term, start, i, t.ndim)
        start += len(term) + 1
        n_ell = t.ndim - len(before) - len(after or ())
        labels = before + [None] * n_ell + (after or [])
        seen = {}
        for lab, size in zip(labels, t._shape):
            if lab is None:
                continue
            counts[lab] = counts.get(lab, 0) + 1
            if lab in seen:
                if seen[lab] != size:
                    raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand {i} but "
                                       f"the sizes don't match, {size} != {seen[lab]}")
                continue
            seen[lab] = size
            old = sizes.get(lab)
            if old is not None and old != size and 1 not in (old, size):
                raise RuntimeError(f"einsum(): subscript {lab} has size {size} for operand {i} "
                                   f"which does not broadcast with previously seen size {old}")
            sizes[lab] = size if old in (None, 1) else old
        if after is not None:
            mine = t._shape[len(before):len(before) + n_ell]
            try:
                ell_shape = _broadcast_pair(ell_shape, mine)
            except RuntimeError:
                k = len(ell_shape) - len(mine)
                j = next(j for j, s in enumerate(mine)
                         if k + j >= 0 and s != 1 and ell_shape[k + j] not in (1, s))
                raise RuntimeError(f"einsum(): dimension {j} covered by ellipsis in operand {i} "
                                   f"has size {mine[j]} which does not broadcast with previously "
                                   f"seen ellipsis with size {ell_shape[k + j]} for the "
                                   f"respective dimension") from None
        parsed.append((before, n_ell, after))

    free = [c for c in string.ascii_letters if c not in sizes]
    if len(ell_shape) > len(free):
        raise RuntimeError("einsum(): too many subscripts and ellipsis dimensions (at most 52)")
    ell = free[len(free) - len(ell_shape):]  # right-aligned: operands with fewer dims use a tail

    def spell(before, n, after):
        return "".join(before) + "".join(ell[len(ell) - n:]) + "".join(after or ())

    if arrow:
        out_before, out_after = [], None
        j = 0
        while j < len(rhs):
            if rhs[j:j + 3] == "...":
                if out_after is not None:
                    raise RuntimeError("einsum(): found '.' for output that is part of a repeated "
                                       "ellipsis")
                out_after = []
                j += 3
                continue
            c = rhs[j]
            if c not in string.ascii_letters:
                raise RuntimeError(f"einsum(): invalid subscript given at index {len(lhs) + 2 + j} "
                                   f"in the equation string, subscripts must be in [a-zA-Z]")
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
            if c in out_before or c in (out_after or ()):
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the "
                                   f"output")
            (out_before if out_after is None else out_after).append(c)
            j += 1
        out = spell(out_before, len(ell) if out_after is not None else 0, out_after)
    else:
        out = "".join(ell) + "".join(sorted(c for c, n in counts.items() if n == 1))
    return ",".join(spell(*p) for p in parsed) + "->" + out


def einsum(*args):
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, not {type(t).__name__}")
    equation = _einsum_equation(equation, operands)
    for t in operands[1:]:
        if t.dtype is not operands[0].dtype:
            raise RuntimeError(f"einsum(): expected scalar type "
                               f"{_dtype_title(operands[0].dtype)} but found "
                               f"{_dtype_title(t.dtype)}")
    no_bool("einsum", operands[0])
    return einsum_op(equation, operands)


# -- ember.func ---------------------------------------------------------------------------------
def _einsum_batch_rule(args, bdims, layer):
    """A fresh subscript for the batch, on each batched operand and in front of the output."""
    equation, operands = args
    flags = bdims[1]
    if all(d is None for d in flags):
        return einsum_op(equation, operands), None
    lhs, out = equation.split("->")
    letter = next(c for c in string.ascii_letters if c not in equation)
    terms = [(letter + t) if d is not None else t for t, d in zip(lhs.split(","), flags)]
    return einsum_op(",".join(terms) + "->" + letter + out, operands), 0


def _einsum_jvp(ctx, tangents, equation, operands):
    """Multilinear: one einsum per operand with a tangent, that operand replaced by it."""
    ts = tangents[1] or [None] * len(operands)
    out = None
    for i, t in enumerate(ts):
        if t is not None:
            ops = list(operands)
            ops[i] = t
            out = out + einsum_op(equation, ops) if out is not None else einsum_op(equation, ops)
    return out


einsum_op.def_batch_rule(_einsum_batch_rule)
einsum_op.def_jvp(_einsum_jvp)
