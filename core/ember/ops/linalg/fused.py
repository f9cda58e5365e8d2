"""Fused multiply-adds ``beta * self + alpha * (a @ b)``: addmm, baddbmm, addmv, addbmm, addr
and their in-place Tensor methods.

``addmm`` is an op with its own derivative (PyTorch's ``AddmmBackward0``, the node under
``nn.Linear``); its ``self`` may be anything that broadcasts to the result (a bias row), and
the formula's gradient for it is summed back to its shape. A backend may register an ``addmm``
kernel (the array kit does); without one the composite below runs. ``baddbmm``, ``addmv``,
``addr`` and ``addbmm`` are ops the same way (``BaddbmmBackward0``… with torch's formulas,
``self`` broadcast, one kit kernel each; their composites run on the other backends).
"""
from __future__ import annotations

import math

from ... import _dtype
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _meta, _tangents
from .. import conversion as _conv
from .. import elementwise as _ew
from .. import views as _views
from .._util import _dtype_title, require_tensor, tensor_method
from ..elementwise._rules import write_in_place
from . import products as _products
from ._rules import (bmm_check, check_tensors, col_major, cpp_dtype_name, mm_check, mT, mv_check,
                     mv_shape_check, no_bool)

_HALF = (_dtype.float16, _dtype.bfloat16)


def _add_product(self, a, b, beta, alpha):
    if self.dtype in _HALF:  # computed in float32 and rounded once, as PyTorch's CPU does
        f32 = _dtype.float32
        r = _add_product(*(_conv.to_copy_op(t, f32) for t in (self, a, b)), beta, alpha)
        return _conv.to_copy_op(r, self.dtype)
    mul = _ew.binary_api["mul"]
    p = _products.matmul_op(a, b)
    if alpha != 1:
        p = mul(p, alpha)
    if beta == 0:  # PyTorch ignores self then, nan and inf included
        return p
    return _ew.add(self if beta == 1 else mul(self, beta), p)


def _addmm_backward(ctx, g, self, mat1, mat2, beta, alpha):
    matmul = _products.matmul_op
    g_self = g_mat1 = g_mat2 = None
    if ctx.needs(0):
        g_self = g if beta == 1 else g * _grad.conj(beta)  # the node sums it to self's shape
    if ctx.needs(1):
        g_mat1 = matmul(g, mT(_grad.conj(mat2)))
        if alpha != 1:
            g_mat1 = g_mat1 * _grad.conj(alpha)
    if ctx.needs(2):
        if ctx.info:  # mat2 is W.t(): see col_major
            g_mat2 = mT(matmul(mT(g), _grad.conj(mat1)))
        else:
            g_mat2 = matmul(mT(_grad.conj(mat1)), g)
        if alpha != 1:
            g_mat2 = g_mat2 * _grad.conj(alpha)
    return g_self, g_mat1, g_mat2


addmm_op = define("addmm(Tensor self, Tensor mat1, Tensor mat2, Scalar beta, Scalar alpha) -> "
                  "Tensor", composite=_add_product,
                  derivative=Derivative(_addmm_backward, save={"mat1": "mat2", "mat2": "mat1"},
                                        complex_ok=True,
                                        setup=lambda self, mat1, mat2, beta, alpha:
                                        col_major(mat2)),
                  doc="beta * self + alpha * (mat1 @ mat2); ``self`` broadcasts to the result.")


# -- baddbmm, addmv, addr, addbmm: torch's formulas (derivatives.yaml), one node each ----------
def _times(g, s):
    """torch's maybe_multiply: ``g`` itself for 1, else ``g * conj(s)``."""
    return g if s == 1 else g * _grad.conj(s)


def _baddbmm_backward(ctx, g, self, batch1, batch2, beta, alpha):
    matmul = _products.matmul_op
    return (_times(g, beta) if ctx.needs(0) else None,
            _times(matmul(g, mT(_grad.conj(batch2))), alpha) if ctx.needs(1) else None,
            _times(matmul(mT(_grad.conj(batch1)), g), alpha) if ctx.needs(2) else None)


def _addmv_backward(ctx, g, self, mat, vec, beta, alpha):
    return (_times(g, beta) if ctx.needs(0) else None,
            _times(_products.outer_op(g, _grad.conj(vec)), alpha) if ctx.needs(1) else None,
            _times(_products.matmul_op(mT(_grad.conj(mat)), g), alpha) if ctx.needs(2) else None)


def _addr_backward(ctx, g, self, vec1, vec2, beta, alpha):
    matmul = _products.matmul_op
    return (_times(g, beta) if ctx.needs(0) else None,
            _times(matmul(g, _grad.conj(vec2)), alpha) if ctx.needs(1) else None,
            _times(matmul(mT(g), _grad.conj(vec1)), alpha) if ctx.needs(2) else None)


def _addbmm_backward(ctx, g, self, batch1, batch2, beta, alpha):
    matmul = _products.matmul_op
    b, n, m = ctx.meta(1)[0][0], g._shape[0], g._shape[1]
    each = _views.expand_op(_views.view_op(g, (1, n, m)), (b, n, m)) \
        if ctx.needs(1) or ctx.needs(2) else None
    return (_times(g, beta) if ctx.needs(0) else None,
            _times(matmul(each, mT(_grad.conj(batch2))), alpha) if ctx.needs(1) else None,
            _times(matmul(mT(_grad.conj(batch1)), each), alpha) if ctx.needs(2) else None)


def _outer_product(self, vec1, vec2, beta, alpha):
    return _add_product(self, _views.view_op(vec1, (vec1._shape[0], 1)),
                        _views.view_op(vec2, (1, vec2._shape[0])), beta, alpha)


def _batch_sum_product(self, batch1, batch2, beta, alpha):
    # sum_b batch1[b] @ batch2[b] is one product: (n, b*k) @ (b*k, m)
    b, n, k = batch1._shape
    rows = _views.reshape(_views.permute_op(batch1, (1, 0, 2)), (n, b * k))
    return _add_product(self, rows, _views.reshape(batch2, (b * k, batch2._shape[2])), beta,
                        alpha)


_PAIRS = {"batch1": "batch2", "batch2": "batch1"}
_FMA_DOC = "beta * self + alpha * ({}); ``self`` broadcasts to the result."
baddbmm_op = define("baddbmm(Tensor self, Tensor batch1, Tensor batch2, Scalar beta, "
                    "Scalar alpha) -> Tensor", composite=_add_product,
                    derivative=Derivative(_baddbmm_backward, save=_PAIRS, complex_ok=True),
                    doc=_FMA_DOC.format("batch1 @ batch2"))
addmv_op = define("addmv(Tensor self, Tensor mat, Tensor vec, Scalar beta, Scalar alpha) -> "
                  "Tensor", composite=_add_product,
                  derivative=Derivative(_addmv_backward, save={"mat": "vec", "vec": "mat"},
                                        complex_ok=True),
                  doc=_FMA_DOC.format("mat @ vec"))
addr_op = define("addr(Tensor self, Tensor vec1, Tensor vec2, Scalar beta, Scalar alpha) -> "
                 "Tensor", composite=_outer_product,
                 derivative=Derivative(_addr_backward, save={"vec1": "vec2", "vec2": "vec1"},
                                       complex_ok=True),
                 doc=_FMA_DOC.format("outer(vec1, vec2)"))
addbmm_op = define("addbmm(Tensor self, Tensor batch1, Tensor batch2, Scalar beta, "
                   "Scalar alpha) -> Tensor", composite=_batch_sum_product,
                   derivative=Derivative(_addbmm_backward, save=_PAIRS, complex_ok=True),
                   doc=_FMA_DOC.format("sum_b batch1[b] @ batch2[b]"))


@addmm_op.def_onnx
def _addmm_onnx(b, c, bias, m1, m2, beta=1, alpha=1, *rest):
    return b.op("Gemm", [m1, m2, bias], alpha=float(alpha), beta=float(beta))


def _onnx_scaled_sum(b, c, self, product, beta, alpha):
    """beta * self + alpha * product, as the composite computes it (self ignored at beta 0)."""
    if c.out_dtype.category == _dtype.COMPLEX:
        c.refuse("complex tensors")
    out = product if alpha == 1 else b.op("Mul", [product, c.scalar(alpha)])
    if beta == 0:
        return out
    return b.op("Add", [self if beta == 1 else b.op("Mul", [self, c.scalar(beta)]), out])


@baddbmm_op.def_onnx
@addmv_op.def_onnx
def _fma_onnx(b, c, self, x, y, beta=1, alpha=1, *rest):
    return _onnx_scaled_sum(b, c, self, b.op("MatMul", [x, y]), beta, alpha)


@addr_op.def_onnx
def _addr_onnx(b, c, self, vec1, vec2, beta=1, alpha=1, *rest):
    outer = b.op("Mul", [b.op("Unsqueeze", [vec1, b.ints([1])]), vec2])
    return _onnx_scaled_sum(b, c, self, outer, beta, alpha)


@addbmm_op.def_onnx
def _addbmm_onnx(b, c, self, batch1, batch2, beta=1, alpha=1, *rest):
    summed = b.op("ReduceSum", [b.op("MatMul", [batch1, batch2]), b.ints([0])], keepdims=0)
    return _onnx_scaled_sum(b, c, self, summed, beta, alpha)


# the C++ type PyTorch converts beta and alpha to, and the largest finite value of the floating
# ones: a scalar that does not fit is refused, naming the type
_SCALAR_TYPE = {"float16": "float", "bfloat16": "float", "float32": "float", "float64": "double",
                "int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t",
                "uint8": "uint8_t"}
_FLOAT_MAX = {"float": 3.4028234663852886e38, "double": 1.7976931348623157e308,
              "c10::Half": 65504.0, "c10::BFloat16": 3.3895313892515355e38,
              "c10::complex<float>": 3.4028234663852886e38,
              "c10::complex<double>": 1.7976931348623157e308}


def _overflows(x, d, name):
    """PyTorch's ``checked_convert``: floats must be finite and in range for an integer type
    (unsigned ones refuse negative floats), integers in range (an unsigned type also takes
    negative ones down to -max, which wrap); a finite value must stay finite in a float type."""
    if d.category <= _dtype.INTEGRAL:
        bits = 8 * d.itemsize
        hi = (1 << bits) - 1 if d is _dtype.uint8 else (1 << (bits - 1)) - 1
        lo = 0 if d is _dtype.uint8 else -hi - 1
        if isinstance(x, float):
            return not math.isfinite(x) or x < lo or x > hi
        return x > hi or (x < -hi if d is _dtype.uint8 else x < lo)
    top = _FLOAT_MAX[name]
    return any(math.isfinite(p) and abs(p) > top for p in (x.real, x.imag))


def _checked_scalar(x, d, op):
    """``x`` converted to what multiplies tensors of dtype ``d``, or PyTorch's error."""
    if d.category == _dtype.COMPLEX:
        name = cpp_dtype_name(d)
    else:
        name = cpp_dtype_name(d) if op == "addmv" and d in _HALF else _SCALAR_TYPE[d.name]
    if isinstance(x, complex) and d.category != _dtype.COMPLEX:
        if x.imag:
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        x = x.real
    if _overflows(x, d, name):
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    # integer tensors take the scalars truncated, as PyTorch does
    return int(x) if d.category <= _dtype.INTEGRAL else x


def _scalars(d, beta, alpha, op):
    if beta.__class__ is int and alpha.__class__ is int and 0 <= beta <= 127 and 0 <= alpha <= 127:
        return beta, alpha  # the defaults (1, 1) and small ints fit every dtype
    return _checked_scalar(beta, d, op), _checked_scalar(alpha, d, op)


def _check_broadcast(t, shape):
    if t._shape != shape and not _grad.expandable(t._shape, shape):
        _views.expand_op(t, shape)  # raises expand's error, naming both shapes


def _addmm_call(input, mat1, mat2, out_dtype, beta, alpha):
    check_tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    input, mat1, mat2 = _products.with_out_dtype("addmm", out_dtype, input, mat1, mat2)
    if mat1.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor")
    mm_check(mat1, mat2, ("mat1", "mat2"), op="addmm")
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_dtype_title(input.dtype)} and {_dtype_title(mat2.dtype)}")
    no_bool("addmm", input)
    _check_broadcast(input, (mat1._shape[0], mat2._shape[1]))
    return addmm_op, (input, mat1, mat2, *_scalars(input.dtype, beta, alpha, "addmm"))


@tensor_method()
def addmm(input, mat1, mat2, out_dtype=None, *, beta=1, alpha=1):
    op, args = _addmm_call(input, mat1, mat2, out_dtype, beta, alpha)
    return op(*args)


def _baddbmm_call(input, batch1, batch2, out_dtype, beta, alpha):
    check_tensors("baddbmm", input=input, batch1=batch1, batch2=batch2)
    input, batch1, batch2 = _products.with_out_dtype("baddbmm", out_dtype, input, batch1,
                                                     batch2)
    bmm_check(batch1, batch2, op="baddbmm")
    if input.dtype is not batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input "
                           f"{cpp_dtype_name(input.dtype)}, batch1: "
                           f"{cpp_dtype_name(batch1.dtype)}, batch2: "
                           f"{cpp_dtype_name(batch2.dtype)}")
    no_bool("baddbmm", input)
    _check_broadcast(input, (batch1._shape[0], batch1._shape[1], batch2._shape[2]))
    return baddbmm_op, (input, batch1, batch2, *_scalars(input.dtype, beta, alpha, "baddbmm"))


@tensor_method()
def baddbmm(input, batch1, batch2, out_dtype=None, *, beta=1, alpha=1):
    op, args = _baddbmm_call(input, batch1, batch2, out_dtype, beta, alpha)
    return op(*args)


def _addmv_call(input, mat, vec, out_dtype, beta, alpha):
    check_tensors("addmv", input=input, mat=mat, vec=vec)
    mv_shape_check(mat, vec, input.ndim)
    mv_check(mat, vec, input.dtype)
    if input.ndim > 1 or input.ndim == 1 and input._shape[0] not in (1, mat._shape[0]):
        raise RuntimeError(f"addmv: size mismatch, got input ({input._shape[0]}), mat "
                           f"({mat._shape[0]}x{mat._shape[1]}), vec ({vec._shape[0]})")
    no_bool("addmv", input)
    return addmv_op, (input, mat, vec, *_scalars(input.dtype, beta, alpha, "addmv"))


@tensor_method()
def addmv(input, mat, vec, *, beta=1, alpha=1):
    op, args = _addmv_call(input, mat, vec, None, beta, alpha)
    return op(*args)


# -- in place: torch records the functional op's node (AddmmBackward0 for addmm_) -------------
def _inplace_op(functional):
    name = functional.name + "_"
    a, b = functional.schema.arg_names[1:3]
    return define(f"{name}(Tensor(a!) self, Tensor {a}, Tensor {b}, Scalar beta, "
                  f"Scalar alpha) -> Tensor(a!)", meta=_meta.inplace(name),
                  composite=_conv.written_back(functional), functional=functional)


def _into_self(call, op_, name, self, a, b, beta, alpha):
    op, args = call(self, a, b, None, beta, alpha)
    if op is None:   # a composition (mixed dtypes): its result copied in
        return self.copy_(args)
    shape = _meta_shape(op, args)
    if shape != self._shape:
        raise RuntimeError(f"Bad in-place call: input tensor size {list(self._shape)} and "
                           f"output tensor size {list(shape)} should match")
    return write_in_place(op_, name, self, *args[1:])


def _meta_shape(op, args):
    _, a, b = args[:3]
    if op is addmv_op:
        return (a._shape[0],)
    if op is addr_op:
        return (a._shape[0], b._shape[0])
    if op is addbmm_op:
        return (a._shape[1], b._shape[2])
    return a._shape[:-1] + b._shape[-1:]   # addmm, baddbmm


# -- ember.func ---------------------------------------------------------------------------------
def _addmm_batch_rule(args, bdims, layer):
    """Batched rows with a plain weight (nn.Linear under vmap) stay one addmm; otherwise the
    composite runs on the batched operands (batched matmuls and a broadcast add)."""
    self, mat1, mat2, beta, alpha = args
    ds, d1, d2 = bdims[:3]
    if ds is None and d1 is None and d2 is None:
        return addmm_op(*args), None
    if ds is None and d2 is None and (self.ndim < 2 or self._shape[0] == 1):
        size, m, k = mat1._shape
        out = addmm_op(self, _views.reshape(mat1, (size * m, k)), mat2, beta, alpha)
        return _views.view_op(out, (size, m, mat2._shape[1])), 0
    if ds is not None:
        self = _batching.pad_logical(self, 2)
    if d1 is None:
        mat1 = _batching.unsqueeze_at(mat1, 0)
    if d2 is None:
        mat2 = _batching.unsqueeze_at(mat2, 0)
    out = _add_product(self, mat1, mat2, beta, alpha)
    size = _batching.batch_size_of(args, bdims, layer)
    if out._shape[0] != size:   # beta == 0 with only self batched: the product is the same
        out = _views.expand_op(out, (size,) + out._shape[1:])
    return out, 0


def _addmm_jvp(ctx, tangents, self, mat1, mat2, beta, alpha):
    ts, t1, t2 = tangents[:3]
    matmul = _products.matmul_op
    out = None
    if ts is not None:
        out = ts if beta == 1 else ts * beta
    prod = _tangents.add(None if t1 is None else matmul(t1, mat2),
                         None if t2 is None else matmul(mat1, t2))
    if prod is not None:
        out = _tangents.add(out, prod if alpha == 1 else prod * alpha)
    return out


addmm_op.def_batch_rule(_addmm_batch_rule)
addmm_op.def_jvp(_addmm_jvp)


# -- addbmm, addr ----------------------------------------------------------------------------
def _addbmm_call(input, batch1, batch2, out_dtype, beta, alpha):
    check_tensors("addbmm", input=input, batch1=batch1, batch2=batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor; batch2 must be a 3D tensor (got "
                           f"{batch1.ndim}D and {batch2.ndim}D)")
    if input.dtype is batch1.dtype is batch2.dtype and input.dtype is not _dtype.bool_:
        bmm_check(batch1, batch2, op="addbmm")
        _check_broadcast(input, (batch1._shape[1], batch2._shape[2]))
        return addbmm_op, (input, batch1, batch2, *_scalars(input.dtype, beta, alpha, "addbmm"))
    # mixed dtypes promote as the composition does
    return None, _scaled_sum(input, (batch1 @ batch2).sum(0), beta, alpha)


@tensor_method()
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    op, args = _addbmm_call(input, batch1, batch2, None, beta, alpha)
    result = args if op is None else op(*args)
    return out.copy_(result) if out is not None else result


def _addr_call(input, vec1, vec2, out_dtype, beta, alpha):
    check_tensors("addr", input=input, vec1=vec1, vec2=vec2)
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D"
                           if vec1.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    if input.dtype is vec1.dtype is vec2.dtype and input.dtype is not _dtype.bool_:
        _check_broadcast(input, (vec1._shape[0], vec2._shape[0]))
        if input.dtype.category <= _dtype.INTEGRAL:
            # PyTorch converts the scalars to the integer result type first (0.6 -> 0)
            beta, alpha = int(beta), int(alpha)
        return addr_op, (input, vec1, vec2, beta, alpha)
    prod = vec1.unsqueeze(1) * vec2.unsqueeze(0)
    if prod.dtype is _dtype.bool_ and input.dtype is _dtype.bool_:
        return None, (input & bool(beta)) | (prod & bool(alpha))
    return None, _scaled_sum(input, prod, beta, alpha)


@tensor_method()
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    op, args = _addr_call(input, vec1, vec2, None, beta, alpha)
    result = args if op is None else op(*args)
    return out.copy_(result) if out is not None else result


def _scaled_sum(input, prod, beta, alpha):
    # beta == 0 ignores input entirely (NaN and inf included), as in PyTorch
    if not (prod.is_floating_point() or prod.is_complex()):
        # PyTorch converts the scalars to the integer result type first (0.6 -> 0)
        beta, alpha = int(beta), int(alpha)
    scaled = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return scaled + input.new_zeros(()).expand(*input.shape) * 0 if \
            tuple(input.shape) != tuple(scaled.shape) else scaled.clone()
    return input * beta + scaled if beta != 1 else input + scaled


addmm__op, baddbmm__op, addmv__op, addr__op, addbmm__op = (
    _inplace_op(op) for op in (addmm_op, baddbmm_op, addmv_op, addr_op, addbmm_op))


@tensor_method()
def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    return _into_self(_addmm_call, addmm__op, "addmm_", self, mat1, mat2, beta, alpha)


@tensor_method()
def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    return _into_self(_baddbmm_call, baddbmm__op, "baddbmm_", self, batch1, batch2, beta, alpha)


@tensor_method()
def addmv_(self, mat, vec, *, beta=1, alpha=1):
    return _into_self(_addmv_call, addmv__op, "addmv_", self, mat, vec, beta, alpha)


@tensor_method()
def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    return _into_self(_addr_call, addr__op, "addr_", self, vec1, vec2, beta, alpha)


@tensor_method()
def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    shape = (batch1._shape[1], batch2._shape[2]) if isinstance(batch1, Tensor) and \
        isinstance(batch2, Tensor) and batch1.ndim == 3 and batch2.ndim == 3 else self._shape
    if self._shape != shape:
        # PyTorch's addbmm_ is addbmm_out into self, which resizes a self that broadcast
        result = addbmm(self, batch1, batch2, beta=beta, alpha=alpha)
        self.resize_(result.shape)
        return self.copy_(result)
    return _into_self(_addbmm_call, addbmm__op, "addbmm_", self, batch1, batch2, beta, alpha)
