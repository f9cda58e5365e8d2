"""Linear algebra ops: matmul and its special cases, fused multiply-adds, einsum, tensordot.

Kernel convention (see ``ember.kit.linalg``):

* ``matmul(Tensor self, Tensor other)`` is the one product primitive: numpy's ``matmul`` rules
  (1-D operands promoted and squeezed, batch dims broadcast), operands of one dtype, result in
  that dtype. ``mm``, ``bmm``, ``mv``, ``dot`` and ``vdot`` validate their stricter contracts
  here and call it.
* ``einsum(str equation, Tensor[] operands)``: an explicit equation of letters only (ellipses
  already spelled out as letters), operands of one dtype; size-1 dims broadcast.
* ``linalg_svdvals(Tensor A)``: singular values of the trailing matrices, real dtype.

``addmm``, ``baddbmm``, ``addmv``, ``outer``, ``vdot`` and ``tensordot`` are composites: a backend
gets them from ``matmul`` and the elementwise ops, and may register fused kernels.
"""
from __future__ import annotations

import math
import string

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from . import _meta
from ._util import _broadcast_pair, _dtype_title, tensor_method

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "addmm", "baddbmm",
           "addmv", "einsum", "tensordot"]

# PyTorch names dtypes by their C++ scalar type in a few messages ("float != double")
_CPP = {"float32": "float", "float64": "double", "float16": "c10::Half",
        "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
        "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
        "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _cpp(d) -> str:
    return _CPP[d.name]


def _tensors(op, **named):
    for pos, (name, t) in enumerate(named.items(), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")


def _no_bool(op, t):
    if t.dtype is _dtype.bool_:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")


# -- the primitive ------------------------------------------------------------------------------
matmul_op = define("matmul(Tensor self, Tensor other) -> Tensor", meta=_meta.matmul,
                   doc="Matrix product with numpy's matmul rules; one dtype in and out.")
svdvals_op = define("linalg_svdvals(Tensor A) -> Tensor", meta=_meta.svdvals,
                    doc="Singular values of the matrices in the last two dims, descending.")


def inner_product_check(op, a, b):
    """The checks ``dot``/``vdot`` (and 1-D @ 1-D) make, with PyTorch's messages."""
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found "
                           f"{_dtype_title(a.dtype)} and {_dtype_title(b.dtype)}")
    n, m = a._shape[0], b._shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have "
                           f"the same number of elements, but got {n} and {m} elements "
                           f"respectively")


def _mv_check(mat, vec, bias_dtype=None):
    if mat.dtype is not vec.dtype or bias_dtype not in (None, mat.dtype):
        names = [_dtype_title(d) for d in (bias_dtype or vec.dtype, mat.dtype, vec.dtype)]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, "
                           f"{names[1]}, and {names[2]}")
    k = mat._shape[-1]
    if k != vec._shape[0]:
        rows = math.prod(mat._shape[:-1])
        raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec "
                           f"({vec._shape[0]})")


def _same_dtype(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_cpp(a.dtype)} "
                           f"!= {_cpp(b.dtype)}")


def _matmul_check(a, b):
    na, nb = a.ndim, b.ndim
    if not na or not nb:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D "
                           f"and {nb}D")
    if na == 1 and nb == 1:
        inner_product_check("dot", a, b)
    elif nb == 1:
        _mv_check(a, b)
    else:
        _same_dtype(a, b)
        ka, kb = a._shape[-1], b._shape[-2]
        if nb == 2:
            # PyTorch folds the batch dims of ``a`` into rows and reports the folded shapes
            if ka != kb:
                raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                                   f"({math.prod(a._shape[:-1])}x{ka} and {kb}x{b._shape[-1]})")
        else:
            batch = math.prod(_broadcast_pair(a._shape[:-2], b._shape[:-2]))
            if ka != kb:
                raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to "
                                   f"be: [{batch}, {ka}] but got: [{batch}, {kb}].")
    _no_bool("matmul", a)


def matmul(input, other):
    _tensors("matmul", input=input, other=other)
    _matmul_check(input, other)
    return matmul_op(input, other)


Tensor.matmul = matmul
Tensor.__matmul__ = lambda self, other: matmul(self, other) if isinstance(other, Tensor) \
    else NotImplemented
Tensor.__rmatmul__ = lambda self, other: matmul(other, self) if isinstance(other, Tensor) \
    else NotImplemented


def _mm_check(a, b, names=("self", "mat2")):
    if a.ndim != 2:
        raise RuntimeError(f"{names[0]} must be a matrix")
    if b.ndim != 2:
        raise RuntimeError(f"{names[1]} must be a matrix")
    _same_dtype(a, b)
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._shape[0]}x"
                           f"{a._shape[1]} and {b._shape[0]}x{b._shape[1]})")


@tensor_method()
def mm(input, mat2):
    _tensors("mm", input=input, mat2=mat2)
    _mm_check(input, mat2)
    _no_bool("mm", input)
    return matmul_op(input, mat2)


def _bmm_check(a, b):
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_title(a.dtype)} but found "
                           f"{_dtype_title(b.dtype)}")
    if b._shape[:2] != (a._shape[0], a._shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a._shape[0]}, {a._shape[2]}] but got: [{b._shape[0]}, "
                           f"{b._shape[1]}].")


@tensor_method()
def bmm(input, mat2):
    _tensors("bmm", input=input, mat2=mat2)
    _bmm_check(input, mat2)
    _no_bool("bmm", input)
    return matmul_op(input, mat2)


def _mv_shape_check(mat, vec, bias_ndim=1):
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {bias_ndim}, {mat.ndim}, "
                           f"{vec.ndim}")


@tensor_method()
def mv(input, vec):
    _tensors("mv", input=input, vec=vec)
    _mv_shape_check(input, vec)
    _mv_check(input, vec)
    _no_bool("mv", input)
    return matmul_op(input, vec)


@tensor_method()
def dot(input, tensor):
    _tensors("dot", input=input, tensor=tensor)
    inner_product_check("dot", input, tensor)
    _no_bool("dot", input)
    return matmul_op(input, tensor)


def _vdot(a, b):
    if a.dtype.category == _dtype.COMPLEX:
        from .elementwise import unary_api
        a = unary_api["conj_physical"](a)
    return matmul_op(a, b)


vdot_op = define("vdot(Tensor self, Tensor other) -> Tensor", composite=_vdot,
                 doc="The dot product with the first operand conjugated.")


@tensor_method()
def vdot(input, other):
    _tensors("vdot", input=input, other=other)
    inner_product_check("vdot", input, other)
    _no_bool("vdot", input)
    return vdot_op(input, other)


def _outer(a, b):
    from .elementwise import binary_api
    from .views import view_op
    return binary_api["mul"](view_op(a, (a._shape[0], 1)), b)


outer_op = define("outer(Tensor self, Tensor vec2) -> Tensor", composite=_outer)


@tensor_method("outer", "ger")
def outer(input, vec2):
    _tensors("outer", input=input, vec2=vec2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return outer_op(input, vec2)


ger = outer


# -- fused multiply-add: beta * self + alpha * (a @ b) ------------------------------------------
def _add_product(self, a, b, beta, alpha):
    from .elementwise import add, binary_api
    if self.dtype in _HALF:  # computed in float32 and rounded once, as PyTorch's CPU does
        from .conversion import to_copy_op
        f32 = _dtype.float32
        r = _add_product(*(to_copy_op(t, f32) for t in (self, a, b)), beta, alpha)
        return to_copy_op(r, self.dtype)
    mul = binary_api["mul"]
    p = matmul_op(a, b)
    if alpha != 1:
        p = mul(p, alpha)
    if beta == 0:  # PyTorch ignores self then, nan and inf included
        return p
    return add(self if beta == 1 else mul(self, beta), p)


_HALF = (_dtype.float16, _dtype.bfloat16)
_FMA_DOC = "beta * self + alpha * (a @ b); ``self`` is already expanded to the result's shape."
addmm_op = define("addmm(Tensor self, Tensor mat1, Tensor mat2, Scalar beta, Scalar alpha) -> "
                  "Tensor", composite=_add_product, doc=_FMA_DOC)
baddbmm_op = define("baddbmm(Tensor self, Tensor batch1, Tensor batch2, Scalar beta, "
                    "Scalar alpha) -> Tensor", composite=_add_product, doc=_FMA_DOC)
addmv_op = define("addmv(Tensor self, Tensor mat, Tensor vec, Scalar beta, Scalar alpha) -> "
                  "Tensor", composite=_add_product, doc=_FMA_DOC)


def _scalars(d, beta, alpha):
    # integer tensors take the scalars truncated, as PyTorch does
    if d.category <= _dtype.INTEGRAL and d is not _dtype.bool_:
        return int(beta), int(alpha)
    return beta, alpha


def _expanded(t, shape):
    from .views import expand_op
    return t if t._shape == shape else expand_op(t, shape)


@tensor_method()
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    _tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    if mat1.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor")
    _mm_check(mat1, mat2, ("mat1", "mat2"))
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_dtype_title(input.dtype)} and {_dtype_title(mat2.dtype)}")
    _no_bool("addmm", input)
    shape = (mat1._shape[0], mat2._shape[1])
    return addmm_op(_expanded(input, shape), mat1, mat2, *_scalars(input.dtype, beta, alpha))


@tensor_method()
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    _tensors("baddbmm", input=input, batch1=batch1, batch2=batch2)
    _bmm_check(batch1, batch2)
    if input.dtype is not batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_cpp(input.dtype)}, "
                           f"batch1: {_cpp(batch1.dtype)}, batch2: {_cpp(batch2.dtype)}")
    _no_bool("baddbmm", input)
    shape = (batch1._shape[0], batch1._shape[1], batch2._shape[2])
    return baddbmm_op(_expanded(input, shape), batch1, batch2,
                      *_scalars(input.dtype, beta, alpha))


@tensor_method()
def addmv(input, mat, vec, *, beta=1, alpha=1):
    _tensors("addmv", input=input, mat=mat, vec=vec)
    _mv_shape_check(mat, vec, input.ndim)
    _mv_check(mat, vec, input.dtype)
    if input.ndim > 1 or input.ndim == 1 and input._shape[0] not in (1, mat._shape[0]):
        raise RuntimeError(f"size mismatch, got input ({input._shape[0]}), mat "
                           f"({mat._shape[0]}x{mat._shape[1]}), vec ({vec._shape[0]})")
    _no_bool("addmv", input)
    return addmv_op(_expanded(input, (mat._shape[0],)), mat, vec,
                    *_scalars(input.dtype, beta, alpha))


def _make_inplace(fn):
    name = fn.__name__ + "_"

    def inplace(self, *args, beta=1, alpha=1):
        r = fn(self, *args, beta=beta, alpha=alpha)
        if r._shape != self._shape:
            raise RuntimeError(f"Bad in-place call: input tensor size {list(self._shape)} and "
                               f"output tensor size {list(r._shape)} should match")
        return self.copy_(r)

    inplace.__name__ = name
    setattr(Tensor, name, inplace)
    return inplace


addmm_ = _make_inplace(addmm)
baddbmm_ = _make_inplace(baddbmm)
addmv_ = _make_inplace(addmv)


# -- tensordot ----------------------------------------------------------------------------------
def _tensordot(a, b, dims_a, dims_b):
    from .reduction import sum_op
    from .views import permute_op, reshape
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
    return reshape(matmul_op(a2, b2), shape_a + shape_b)


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
    _tensors("tensordot", a=a, b=b)
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
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for ga, gb, x, y in zip(given_a, given_b, dims_a, dims_b):
        sa, sb = a._shape[x], b._shape[y]
        if sa != sb and 1 not in (sa, sb):
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in "
                               f"dim {ga} and second has size {sb} in dim {gb}")
    _no_bool("tensordot", a)
    r = tensordot_op(a, b, tuple(dims_a), tuple(dims_b))
    if out is not None:
        from ._util import write_out
        return write_out(out, r, "tensordot")
    return r


# -- einsum -------------------------------------------------------------------------------------
einsum_op = define("einsum(str equation, Tensor[] operands) -> Tensor", meta=_meta.einsum,
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
            raise RuntimeError(f"expected scalar type {_dtype_title(operands[0].dtype)} but found "
                               f"{_dtype_title(t.dtype)}")
    _no_bool("einsum", operands[0])
    return einsum_op(equation, operands)
