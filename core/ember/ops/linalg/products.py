"""The product primitive ``matmul`` and its special cases (mm, bmm, mv, dot, vdot, outer), plus
``linalg_svdvals``: each op with its meta and derivative; ``trace``, ``kron`` and ``inner`` as
compositions."""
from __future__ import annotations

import math

from ... import _dtype
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch import keys as _keys
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _meta, _tangents
from .._lowering import onnx_binary
from .. import elementwise as _ew
from .. import views as _views
from .._util import require_tensor, tensor_method
from ._rules import (bmm_check, check_tensors, col_major, eye_like, inner_product_check,
                     matmul_check, mm_check, mT, mv_check, mv_shape_check, no_bool)


# -- matmul -------------------------------------------------------------------------------------
def _matmul_meta(a, b):
    sa, sb = _meta.shape_of(a), _meta.shape_of(b)
    if not sa or not sb:
        raise RuntimeError(f"matmul: both arguments need to be at least 1D, got shapes "
                           f"{list(sa)} and {list(sb)}")
    xa = sa if len(sa) > 1 else (1,) + sa
    xb = sb if len(sb) > 1 else sb + (1,)
    if xa[-1] != xb[-2]:
        raise RuntimeError(f"matmul: shapes {list(sa)} and {list(sb)} cannot be multiplied "
                           f"({xa[-2]}x{xa[-1]} and {xb[-2]}x{xb[-1]})")
    batch = _meta.broadcast_shapes("matmul", xa[:-2], xb[:-2])
    out = batch + (xa[-2],) * (len(sa) > 1) + (xb[-1],) * (len(sb) > 1)
    return out, a.dtype


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


def _matmul_backward(ctx, g, self, other):
    # 1-D operands take part as (1, k) and (k, 1) matrices; the node sums the batch dims
    # that broadcasting added back to each operand's shape
    a_vec, b_vec = ctx.info[0] == 1, ctx.info[1] == 1
    if a_vec and ctx.info[1] == 2:
        return _vector_matrix_backward(ctx, g, self, other)
    if a_vec and b_vec:
        g2 = _views.view_op(g, (1, 1))
    elif a_vec:
        g2 = g.unsqueeze(-2)
    elif b_vec:
        g2 = g.unsqueeze(-1)
    else:
        g2 = g
    ga = gb = None
    if ctx.needs(0):
        b2 = other.unsqueeze(-1) if b_vec else other
        ga = matmul_op(g2, mT(_grad.conj(b2)))
        if a_vec:
            ga = _views.reshape(ga, ga._shape[:-2] + ga._shape[-1:])
    if ctx.needs(1):
        a2 = self.unsqueeze(0) if a_vec else self
        if ctx.info[0] > 2 and ctx.info[1] == 2:
            # a batch of rows times one matrix (a linear layer on 3-d input): the gradient of
            # the matrix is one product over all rows, not a batch of products summed after
            k, m = a2._shape[-1], g2._shape[-1]
            rows = math.prod(a2._shape[:-1])        # explicit: -1 is ambiguous when k is 0
            a_rows = _views.reshape(_grad.conj(a2), (rows, k))
            g_rows = _views.reshape(g2, (rows, m))
            if ctx.info[2]:
                gb = mT(matmul_op(mT(g_rows), a_rows))   # other is W.t(): see col_major
            else:
                gb = matmul_op(mT(a_rows), g_rows)
        elif ctx.info[2] and ctx.info[0] == 2:
            gb = mT(matmul_op(mT(g2), _grad.conj(a2)))  # other is W.t(): see col_major
        else:
            gb = matmul_op(mT(_grad.conj(a2)), g2)
        if b_vec:
            gb = _views.reshape(gb, gb._shape[:-1])
    return ga, gb


def _vector_matrix_backward(ctx, g, self, other):
    # x (k) @ W (k, n), a linear layer on one example: x's gradient is the vector-matrix
    # product g @ W^H, W's the outer product of x and g (one multiply an element, as the (k, 1)
    # by (1, n) matrix product makes it), without the matrix path's unsqueezes and reshapes
    ga = matmul_op(g, mT(_grad.conj(other))) if ctx.needs(0) else None
    gb = None
    if ctx.needs(1):
        x = _grad.conj(self)
        # other is W.t(): the gradient in W's layout (see col_major)
        gb = mT(g.unsqueeze(-1) * x) if ctx.info[2] else x.unsqueeze(-1) * g
    return ga, gb


matmul_op = define("matmul(Tensor self, Tensor other) -> Tensor", meta=_matmul_meta,
                   derivative=Derivative(_matmul_backward, save={"self": "other",
                                                                 "other": "self"},
                                         complex_ok=True, name=_matmul_name,
                                         setup=lambda a, b: (a.ndim, b.ndim, col_major(b))),
                   doc="Matrix product with numpy's matmul rules; one dtype in and out.")
matmul_op.def_onnx(onnx_binary("MatMul"))


def matmul(input, other):
    check_tensors("matmul", input=input, other=other)
    matmul_check(input, other)
    if records_graph(input._ks | other._ks):
        return _matmul_graph(input, other)
    # nothing records a graph: one product, whose kernel broadcasts and folds by itself
    return matmul_op(input, other)


_RECORDED = _keys.AUTOGRAD | _keys.SPARSE


def records_graph(keys):
    """Will autograd record ops on tensors whose key sets OR to ``keys``? Then products take
    PyTorch's decomposition, whose nodes a program can read; otherwise nothing can tell the
    decomposition from one product, and one product is cheaper. Sparse operands always take
    matmul's COO form."""
    return _keys.state.grad_enabled and keys & _RECORDED == _keys.AUTOGRAD


# -- matmul as PyTorch records it (LinearAlgebra.cpp, _matmul_impl) -------------------------------
def _squeeze_row(self):
    # torch squeezes the fresh (1, n) product in place (squeeze_): the same storage, no view
    return Tensor._make(self._storage, self._shape[1:], self._stride[1:], self._offset,
                        self.dtype, self.device)


def _squeeze_row_backward(ctx, g, self):
    return (g.unsqueeze(0),)


# vector @ matrix: unsqueeze(0) -> mm -> squeeze_(0), whose node torch names SqueezeBackward4
squeeze_row_op = define("_squeeze_row(Tensor self) -> Tensor", composite=_squeeze_row,
                        derivative=Derivative(_squeeze_row_backward, complex_ok=True,
                                              name="SqueezeBackward4"),
                        doc="A (1, n) product's row as a vector, sharing its storage.")


@squeeze_row_op.def_onnx
def _squeeze_row_onnx(b, c, x, *rest):
    return b.op("Squeeze", [x, b.ints([0])])


def _squeeze_row_batch_rule(args, bdims, layer):
    x = args[0]
    if bdims[0] is None:
        return squeeze_row_op(x), None
    return _views.squeeze(x, 1), 0


squeeze_row_op.def_batch_rule(_squeeze_row_batch_rule)
squeeze_row_op.def_jvp(_tangents.linear(squeeze_row_op))


def _should_fold(t1, t2):
    """torch's should_fold: fold the batch of the larger operand (>= 3-D) into the rows of one
    mm/mv against the other (<= 2-D) when that needs no copy, or when the smaller operand
    requires grad (its gradient is then one product, not a batch of them summed)."""
    larger = t1.ndim >= t2.ndim
    big, small = (t1, t2) if larger else (t2, t1)
    if big.ndim < 3 or small.ndim > 2:
        return False
    if small.requires_grad:
        return True
    if t1.ndim == 2:
        return False
    shape, stride = list(big._shape), list(big._stride)
    if not larger:   # the larger operand takes part transposed
        shape[-1], shape[-2], stride[-1], stride[-2] = shape[-2], shape[-1], stride[-2], stride[-1]
    if math.prod(shape) == 0:
        return True
    return all(stride[i] == stride[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _matmul_graph(t1, t2):
    """matmul through the ops torch's _matmul_impl calls, so autograd records its nodes."""
    d1, d2 = t1.ndim, t2.ndim
    if d2 == 1 and d1 <= 2 or d1 == 2 and d2 == 2:
        return matmul_op(t1, t2)                      # dot, mv, mm
    if d1 == 1 and d2 == 2:
        return squeeze_row_op(matmul_op(_views.unsqueeze(t1, 0), t2))
    if _should_fold(t1, t2):
        transpose = d2 > d1
        if transpose:
            rows = _views.transpose_op(t2, d2 - 2, d2 - 1)
            right = _views.t_op(t1) if d1 == 2 else t1
        else:
            rows, right = t1, t2
        sizes = rows._shape
        shape = sizes[:-1] + right._shape[1:]
        folded = _views.reshape(rows, (math.prod(sizes[:-1]), sizes[-1]))
        out = _views.unsafe_view_op(matmul_op(folded, right), shape)
        if transpose and right.ndim == 2:
            return _views.transpose_op(out, len(shape) - 2, len(shape) - 1).contiguous()
        return out
    batch1, batch2 = t1._shape[:-2], t2._shape[:-2]
    if d1 == 3 and d2 == 3 and batch1[0] != batch2[0]:
        # a batch of one that requires grad is squeezed, not expanded: its gradient is then
        # one product (the fold above) rather than a batch of them summed
        if batch1[0] == 1 and t1.requires_grad:
            return _matmul_graph(_views.squeeze(t1, 0), t2)
        if batch2[0] == 1 and t2.requires_grad:
            return _matmul_graph(t1, _views.squeeze(t2, 0))
    n = t1._shape[-2] if d1 > 1 else 1
    m1 = t1._shape[-1]
    m2 = t2._shape[-2] if d2 > 1 else t2._shape[0]
    p = t2._shape[-1] if d2 > 1 else 1
    batch = _meta.broadcast_shapes("matmul", batch1, batch2)
    count = math.prod(batch)
    left = _views.reshape(_views.expand_op(t1, batch + (n, m1)), (count, n, m1))
    if d2 == 1:
        right = _views.unsqueeze(_views.reshape(_views.expand_op(t2, batch + (m2,)),
                                                (count, m2)), 2)
    else:
        right = _views.reshape(_views.expand_op(t2, batch + (m2, p)), (count, m2, p))
    out = matmul_op(left, right)                      # bmm
    if d2 == 1:
        out = _views.squeeze(out, -1)
    return _views.unsafe_view_op(out, batch + (n,) * (d1 > 1) + (p,) * (d2 > 1))


Tensor.matmul = matmul
Tensor.__matmul__ = lambda self, other: matmul(self, other) if isinstance(other, Tensor) \
    else NotImplemented
Tensor.__rmatmul__ = lambda self, other: matmul(other, self) if isinstance(other, Tensor) \
    else NotImplemented


def with_out_dtype(op, out_dtype, *tensors):
    """The operands for torch's ``out_dtype`` overloads (mm, bmm, addmm, baddbmm): float16 and
    bfloat16 products accumulated and returned in float32, or the inputs' own dtype."""
    if out_dtype is None:
        return tensors
    d, out_dtype = tensors[0].dtype, _dtype.as_dtype(out_dtype)
    if out_dtype is d:
        return tensors
    if out_dtype is _dtype.float32 and d in (_dtype.float16, _dtype.bfloat16):
        return tuple(t.to(_dtype.float32) for t in tensors)
    raise RuntimeError(f"{op}: out_dtype must be the same as input dtype or fp32 for fp16/bf16 "
                       f"inputs, got {d} inputs and out_dtype {out_dtype}")


def _matrix_product(name, shape_check, input, mat2, out_dtype):
    """mm and bmm: the checks named after the public op, then matmul."""
    check_tensors(name, input=input, mat2=mat2)
    shape_check(input, mat2)
    no_bool(name, input)
    return matmul_op(*with_out_dtype(name, out_dtype, input, mat2))


@tensor_method()
def mm(input, mat2, out_dtype=None):
    return _matrix_product("mm", mm_check, input, mat2, out_dtype)


@tensor_method()
def bmm(input, mat2, out_dtype=None):
    return _matrix_product("bmm", bmm_check, input, mat2, out_dtype)


@tensor_method()
def mv(input, vec):
    check_tensors("mv", input=input, vec=vec)
    mv_shape_check(input, vec)
    mv_check(input, vec)
    no_bool("mv", input)
    return matmul_op(input, vec)


def _check_inner_product(name, input, other_name, other):
    """dot's and vdot's checks: two tensors (``other`` called ``other_name`` in errors), 1-D,
    of one size and dtype, not bool."""
    check_tensors(name, **{"input": input, other_name: other})
    inner_product_check(name, input, other)
    no_bool(name, input)


@tensor_method()
def dot(input, tensor):
    _check_inner_product("dot", input, "tensor", tensor)
    return matmul_op(input, tensor)


# -- vdot, outer: composites --------------------------------------------------------------------
def _vdot(a, b):
    if a.dtype.category == _dtype.COMPLEX:
        a = _ew.unary_api["conj_physical"](a)
    return matmul_op(a, b)


def _vdot_backward(ctx, g, self, other):
    # torch's: self gets conj(grad) * other, other gets grad * self
    return (_grad.conj(g) * other if ctx.needs(0) else None,
            g * self if ctx.needs(1) else None)


vdot_op = define("vdot(Tensor self, Tensor other) -> Tensor", composite=_vdot,
                 derivative=Derivative(_vdot_backward, save={"self": "other", "other": "self"},
                                       complex_ok=True),
                 doc="The dot product with the first operand conjugated.")


@tensor_method()
def vdot(input, other):
    _check_inner_product("vdot", input, "other", other)
    return vdot_op(input, other)


def _outer(a, b):
    return _ew.binary_api["mul"](_views.view_op(a, (a._shape[0], 1)), b)


outer_op = define("outer(Tensor self, Tensor vec2) -> Tensor", composite=_outer)


@tensor_method("outer", "ger")
def outer(input, vec2):
    check_tensors("outer", input=input, vec2=vec2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return outer_op(input, vec2)


ger = outer


# -- singular values ----------------------------------------------------------------------------
def _svdvals_meta(A):
    s = _meta.shape_of(A)
    if len(s) < 2:
        raise RuntimeError(f"linalg.svdvals: The input tensor A must have at least 2 dimensions, "
                           f"got shape {list(s)}")
    return s[:-2] + (min(s[-2:]),), _meta.real_of(A.dtype)


# no derivative yet: a backward through it raises, naming the op (the nuclear norm's gradient)
svdvals_op = define("linalg_svdvals(Tensor A) -> Tensor", meta=_svdvals_meta,
                    doc="Singular values of the matrices in the last two dims, descending.")


# -- ember.func ---------------------------------------------------------------------------------
def _matmul_batch_rule(args, bdims, layer):
    """The product of each example's operands, as few matmuls as possible: one batched side
    times a plain matrix folds the batch into the rows (one GEMM)."""
    a, b = args
    da, db = bdims
    if da is None and db is None:
        return matmul_op(a, b), None
    na, nb = a.ndim - (da is not None), b.ndim - (db is not None)
    if db is None and nb <= 2 and na >= 1:
        if na == 1 or nb == 1:   # (B, k) @ (k, n) | (B, ..., m, k) @ (k,)
            return matmul_op(a, b), 0
        rows = _views.reshape(a, (-1, a._shape[-1]))
        return _views.reshape(matmul_op(rows, b), a._shape[:-1] + b._shape[-1:]), 0
    if da is None and na <= 2 and nb == 1:   # a @ one vector per example: (B, k) @ a.mT
        return matmul_op(b, mT(a) if na == 2 else a), 0
    # general: vectors become matrices, the examples' batch dims line up after the batch
    a2 = _batching.unsqueeze_at(a, a.ndim - 1) if na == 1 else a
    b2 = _batching.unsqueeze_at(b, b.ndim) if nb == 1 else b
    rank = max(a2.ndim - (da is not None), b2.ndim - (db is not None))
    if da is not None:
        a2 = _batching.pad_logical(a2, rank)
    if db is not None:
        b2 = _batching.pad_logical(b2, rank)
    if a2._shape[-1] == 1 and a2.dtype.category != _dtype.COMPLEX:
        # one outer product per example (per-example weight gradients): a broadcast multiply
        # writes the result once, where stacked matmuls of inner size 1 crawl (numpy)
        out = _ew.binary_api["mul"](a2, b2)
    else:
        out = matmul_op(a2, b2)
    shape = out._shape
    if nb == 1:
        shape = shape[:-1]
    if na == 1:
        shape = shape[:-2] + shape[-1:] if nb != 1 else shape[:-1]
    return (_views.view_op(out, shape) if shape != out._shape else out), 0


def _matmul_jvp(ctx, tangents, self, other):
    ta, tb = tangents
    return _tangents.add(None if ta is None else matmul_op(ta, other),
                         None if tb is None else matmul_op(self, tb))


matmul_op.def_batch_rule(_matmul_batch_rule)
matmul_op.def_jvp(_matmul_jvp)
svdvals_op.def_batch_rule(_batching.last_dims(svdvals_op))


# -- trace (its own node), kron, inner (compositions of the products) ------------------------
def _trace(self):
    return self.diagonal().sum()


def _trace_meta(self):
    d = self.dtype
    return (), d if d.category >= _dtype.FLOATING else _dtype.int64


def _trace_backward(ctx, g, self):
    # torch's trace_backward: grad on the main diagonal of a zero matrix of self's shape
    n, m = ctx.meta(0)[0]
    return (g * eye_like(n, g, m=m),)


trace_op = define("trace(Tensor self) -> Tensor", meta=_trace_meta, composite=_trace,
                  derivative=Derivative(_trace_backward, complex_ok=True),
                  doc="The sum of the main diagonal of a matrix.")


@trace_op.def_onnx
def _trace_onnx(b, c, x, *rest):
    return b.op("ReduceSum", [b.op("Mul", [x, b.op("EyeLike", [x])]), b.ints([0, 1])],
                keepdims=0)


@vdot_op.def_onnx
def _vdot_onnx(b, c, x, y, *rest):
    if c.out_dtype.category == _dtype.COMPLEX:
        c.refuse("complex tensors")
    return b.op("MatMul", [x, y])


@tensor_method()
def trace(input):
    """The sum of the main diagonal of a 2-D tensor."""
    require_tensor(input, "trace")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return trace_op(input)


@tensor_method()
def kron(input, other):
    """The Kronecker product: blocks ``input[i] * other``."""
    require_tensor(input, "kron")
    require_tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (nd - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    a_shape, b_shape = [], []
    for sa, sb in zip(a.shape, b.shape):
        a_shape += [sa, 1]
        b_shape += [1, sb]
    prod = a.reshape(a_shape) * b.reshape(b_shape)
    return prod.reshape([sa * sb for sa, sb in zip(a.shape, b.shape)])


@tensor_method()
def inner(input, other):
    """Sum of products over the last dims: shape ``input.shape[:-1] + other.shape[:-1]``."""
    require_tensor(input, "inner")
    require_tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    out = input.reshape(-1, k) @ other.reshape(-1, k).t()
    return out.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))
