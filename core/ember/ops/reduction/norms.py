"""logsumexp and the vector norms: ``vector_norm`` (the op under ``linalg.vector_norm`` and
``torch.norm``), ``renorm``. The matrix norms live with linear algebra."""
from __future__ import annotations

import math

from ... import _dtype
from ..._dtype import COMPLEX, FLOATING
from ..._tensor import _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _meta
from .. import elementwise as _ew
from .. import views as _views
from .._util import _dtype_title, require_tensor, tensor_method, write_out
from . import extremes as _extremes
from . import sums as _sums
from ._rules import check_tensor, dims_ok, given, no_complex, reduce_dims, restore, without


# -- logsumexp ----------------------------------------------------------------------------------
def _logsumexp(x, dim, keepdim):
    exp, log, sum_op = _ew.unary_api["exp"], _ew.unary_api["log"], _sums.sum_op
    if not x.numel():  # sum over nothing is 0: log gives -inf, as PyTorch does
        return log(sum_op(exp(x), dim, keepdim, x.dtype))
    # shift by the largest (real part): exp never overflows; a complex x keeps its phases
    m = _extremes.amax_op(x.real if x.dtype.category == COMPLEX else x, dim, True)
    m = _ew.where(_ew.unary_api["isinf"](m), 0.0, m)  # keeps inf - inf out of the shift
    r = _ew.add(log(sum_op(exp(_ew.sub(x, m)), dim, True, x.dtype)), m)
    return r if keepdim else _views.reshape(r, without(x._shape, dim))


def _logsumexp_backward(ctx, g, self, dim, keepdim):
    shape = self._shape
    r = _grad.unsqueeze_dims(ctx.result, shape, dim, keepdim)
    # holomorphic: grad * conj(softmax), PyTorch's convention for complex inputs
    return (restore(g, shape, dim, keepdim) * _grad.conj(_ew.unary_api["exp"](self - r)),)


logsumexp_op = define("logsumexp(Tensor self, int[] dim, bool keepdim) -> Tensor",
                      composite=_logsumexp,
                      derivative=Derivative(_logsumexp_backward, save=("self", "result"),
                                            complex_ok=True))


@tensor_method()
def logsumexp(input, dim, keepdim=False):
    check_tensor(input, "logsumexp")
    x = input if input.dtype.category >= FLOATING else input.to(_dtype.get_default_dtype())
    return logsumexp_op(x, reduce_dims(x, dim, "logsumexp"), bool(keepdim))


# -- vector_norm --------------------------------------------------------------------------------
def _vector_norm_meta(x, ord, dim, keepdim):
    _meta.tensor_arg("vector_norm", x)
    return (_meta.reduced(x._shape, dims_ok("vector_norm", x, tuple(dim)), keepdim),
            _meta.real_of(x.dtype))


def norm_backward(g, self, ord, norm, dim):
    """PyTorch's norm_backward, case by case (``g`` and ``norm`` with the reduced ``dim`` kept
    as size 1), so the subgradient at 0 — and its own derivative, the second one — is torch's:
    a zero norm passes no gradient for ord 2 and above, a zero element none for ord below 1,
    and the infinity norms share theirs between the elements tied at the extreme."""
    unary, where = _ew.unary_api, _ew.where
    if ord == 0:
        return _grad.zeros_like(self)
    if ord == 1:
        return unary["sign"](self) * g
    if ord == 2:
        return g * where(norm.eq(0), 0.0, self / norm)
    if math.isinf(ord):
        size = unary["abs"](self)
        hit = size.eq(norm).logical_or(unary["isnan"](size))
        count = _sums.sum_op(hit, dim, True, self.dtype)
        return unary["sign"](self) * ((g / count) * hit)
    if ord < 1:
        scaled = unary["sign"](self) * where(self.eq(0), 0.0, unary["abs"](self) ** (ord - 1))
        return scaled * g * norm ** (1 - ord)
    if ord < 2:
        scaled = unary["sign"](self) * unary["abs"](self) ** (ord - 1)
    else:
        scaled = self * unary["abs"](self) ** (ord - 2)
    return scaled * where(norm.eq(0), 0.0, g / norm ** (ord - 1))


def _vector_norm_backward(ctx, g, self, ord, dim, keepdim):
    shape = self._shape
    norm = _grad.unsqueeze_dims(ctx.result, shape, dim, keepdim)
    return (norm_backward(restore(g, shape, dim, keepdim), self, ord, norm, dim),)


vector_norm_op = define("vector_norm(Tensor self, float ord, int[] dim, bool keepdim) -> Tensor",
                        meta=_vector_norm_meta,
                        derivative=Derivative(_vector_norm_backward, save=("self", "result"),
                                              name="LinalgVectorNormBackward0"))


def _renorm_dims(self, dim):
    return tuple(d for d in range(self.ndim) if d != dim)


def _renorm(self, p, dim, maxnorm):
    norm = vector_norm_op(self, p, _renorm_dims(self, dim), True)
    return self * _ew.where(norm.gt(maxnorm), maxnorm / (norm + 1e-7), 1.0)


def _renorm_backward(ctx, g, self, p, dim, maxnorm):
    # PyTorch's renorm_backward: through the scale where the norm exceeds maxnorm (its norm
    # term by norm_backward, so a zero sub-tensor passes the gradient unchanged), else g
    dims = _renorm_dims(self, dim)
    norm = vector_norm_op(self, p, dims, True)
    nb = norm_backward(_sums.sum_op(self * g, dims, True, self.dtype), self, p, norm, dims)
    invnorm = (norm + 1e-7).reciprocal()
    factor = invnorm * maxnorm
    return (_ew.where(norm.gt(maxnorm), factor * g - (factor * invnorm) * nb, g),)


renorm_op = define("renorm(Tensor self, float p, int dim, float maxnorm) -> Tensor",
                   composite=_renorm,
                   derivative=Derivative(_renorm_backward, save=("self",)),
                   doc="each sub-tensor along dim scaled down to p-norm maxnorm where it "
                       "exceeds it (by maxnorm / (norm + 1e-7))")


@tensor_method()
def renorm(input, p, dim, maxnorm):
    """Each sub-tensor along ``dim`` scaled down to p-norm ``maxnorm`` where it exceeds it."""
    require_tensor(input, "renorm")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    return renorm_op(input, float(p), _wrap_dim(dim, input.ndim, "renorm"), float(maxnorm))


@tensor_method()
def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


# -- ember.func: batching rules (dims shift past the batch) ------------------------------------
logsumexp_op.def_batch_rule(_batching.over_dims(logsumexp_op))
vector_norm_op.def_batch_rule(_batching.over_dims(vector_norm_op, dim_pos=2))
