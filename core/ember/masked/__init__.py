"""``ember.masked``: torch.masked's reductions and normalizations with a ``mask`` (issue #30).

``sum(input, dim, mask=m)`` reduces only the elements where ``m`` (broadcast to ``input``) is
True: the others are replaced by the reduction's identity (0 for sum, 1 for prod, -inf for
amax, …) before the ordinary op runs, as torch's ``torch.masked._ops`` does for strided tensors,
so values, dtypes and gradients (zero at masked-out elements) are torch's. Positions whose
every element is masked out hold the identity (sum 0, amax -inf) or NaN where it is undefined
(mean, var, std, median). Strided tensors only; torch's prototype ``MaskedTensor`` subclass is
not provided.
"""
from __future__ import annotations

import math
import ember

from .. import _dtype
from .._tensor import Tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]

_SMALL_INTS = (_dtype.uint8, _dtype.bool_, _dtype.int8, _dtype.int16, _dtype.int32)


def _ember():
    return ember


def _strided(name, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"masked {name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.layout is not _ember().strided:
        raise ValueError(f"masked {name} expects strided tensor (got {input.layout} tensor)")


def _canonical_dim(dim, ndim):
    """``dim`` as a sorted tuple (None or () = every dim), torch.masked's rules."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input, *args, **kwargs):
    """The ``mask`` keyword broadcast to ``input``'s shape, as bool (torch.masked's canonical
    input mask; PyTorch's test helpers call it with an op's whole argument list)."""
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = mask.clone().broadcast_to(input.shape)
    return mask.to(_dtype.bool_)


_REDUCTIONS = {"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var",
               "std", "logsumexp"}
_NORMALIZATIONS = {"softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"}


def _output_mask(op, input, *args, **kwargs):
    """Which elements of masked ``op``'s result are defined (some input element masked in)."""
    name = getattr(op, "__name__", None)
    if name in _REDUCTIONS:
        if name == "norm" and args:
            args = args[1:]                 # the ord argument
        dim = args[0] if args else kwargs.get("dim")
        inmask = _input_mask(input, *args, **kwargs)
        return inmask.any(dim=_canonical_dim(dim, input.ndim),
                          keepdim=bool(kwargs.get("keepdim", False)))
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    raise ValueError(f"_output_mask expected masked operation (got {op!r})")


def _identity(op, input, ord=2):
    """The value that leaves ``op``'s reduction unchanged (torch's ``_reduction_identity``)."""
    em, d = _ember(), input.dtype
    if op in ("sum", "cumsum"):
        return em.tensor(0, dtype=d, device=input.device)
    if op in ("prod", "cumprod"):
        return em.tensor(1, dtype=d, device=input.device)
    lowest = op in ("amax", "argmax", "logaddexp", "logsumexp")
    if op in ("amax", "argmax", "logaddexp", "logsumexp", "amin", "argmin"):
        if d.is_floating_point or (d.is_complex and op == "logsumexp"):
            return em.tensor(-math.inf if lowest else math.inf, dtype=d, device=input.device)
        info = em.iinfo(d)
        return em.tensor(info.min if lowest else info.max, dtype=d, device=input.device)
    if op == "norm":
        return em.tensor(math.inf if ord == -math.inf else 0, dtype=d, device=input.device)
    if op == "median":
        return em.tensor(math.nan, dtype=d if d.is_floating_point else _dtype.float32,
                         device=input.device)
    raise NotImplementedError(f"identity of {op} on {d} input")


def _combine(op, input, mask, ord=2):
    """``input`` with the masked-out elements replaced by ``op``'s identity."""
    if mask is None:
        return input
    return _ember().where(_input_mask(input, mask=mask), input, _identity(op, input, ord))


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dtype
    return _dtype.int64 if input.dtype in _SMALL_INTS else input.dtype


# -- reductions -------------------------------------------------------------------------------------
def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001
    _strided("sum", input)
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return _ember().sum(_combine("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("prod", input)
    dtype = _sum_dtype(input, dtype)
    result = _combine("prod", input, mask).to(dtype)
    for d in reversed(_canonical_dim(dim, input.ndim)):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    _strided("cumsum", input)
    dtype = dtype or input.dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _ember().cumsum(_combine("sum", input, mask), d, dtype=dtype).to(dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    _strided("cumprod", input)
    dtype = dtype or input.dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _ember().cumprod(_combine("prod", input, mask), d, dtype=dtype).to(dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("amax", input)
    x = _combine("amax", input, mask)
    return _ember().amax(x, _canonical_dim(dim, x.ndim), bool(keepdim)).to(dtype or input.dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("amin", input)
    x = _combine("amin", input, mask)
    return _ember().amin(x, _canonical_dim(dim, x.ndim), bool(keepdim)).to(dtype or input.dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("argmax", input)
    x = _combine("argmax", input, mask)
    return _ember().argmax(x, dim, bool(keepdim)).to(dtype or input.dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("argmin", input)
    x = _combine("argmin", input, mask)
    return _ember().argmin(x, dim, bool(keepdim)).to(dtype or input.dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("mean", input)
    source = "Optional" if dtype is not None else "Input"
    dtype = dtype or input.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    count, total, _ = _count_and_sum(input, dim, keepdim, dtype, mask)
    return total / count


def _count_and_sum(input, dim, keepdim, dtype, mask):
    """(how many elements are masked in, their sum, the broadcast mask) over ``dim``."""
    if mask is None:
        ones = _ember().ones(input.shape, dtype=_dtype.int64, device=input.device)
        return (sum(ones, dim, keepdim=keepdim), sum(input, dim, keepdim=keepdim, dtype=dtype),
                None)
    inmask = _input_mask(input, mask=mask)
    return (inmask.sum(dim=_canonical_dim(dim, input.ndim), keepdim=bool(keepdim)),
            sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask), inmask)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    _strided("median", input)
    dtype = dtype or input.dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    x = input if is_float else input.to(_dtype.float32)
    output = _ember().nanmedian(_combine("median", x, mask), d, keepdim).values
    if is_float:
        return output
    if not output.isnan().any():
        return output.to(dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating "
                     "point")


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("logsumexp", input)
    x = _combine("logsumexp", input, mask)
    return _ember().logsumexp(x, _canonical_dim(dim, input.ndim),
                              keepdim=keepdim).to(dtype or input.dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    _strided("logaddexp", input)
    _strided("logaddexp", other)
    return _ember().logaddexp(_combine("logaddexp", input, input_mask),
                              _combine("logaddexp", other, other_mask)).to(dtype or input.dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    _strided("norm", input)
    x = _combine("norm", input, mask, ord)
    return _ember().linalg.vector_norm(x, ord, _canonical_dim(dim, input.ndim), bool(keepdim),
                                       dtype=dtype or input.dtype)


def _std_var(name, input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    _strided(name, input)
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    c = 1.0 if unbiased is None else (1.0 if unbiased else 0.0)
    if correction is not None:
        c = float(correction)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _dtype.float32
    compute = dtype if (dtype.is_floating_point or dtype.is_complex) else _dtype.float32
    count, sample_total, inmask = _count_and_sum(input, dim, True, dtype, mask)
    x = input - sample_total / count
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if c != 0:
        count = (count.to(compute.to_real() if compute.is_complex else compute) - c)
        count = _ember().maximum(count, count.new_zeros(()))
    output = (total / count).to(dtype)
    return output.sqrt() if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    return _std_var("var", input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    return _std_var("std", input, dim, unbiased, correction, keepdim, dtype, mask, True)


# -- normalizations ---------------------------------------------------------------------------------
def softmax(input, dim, *, dtype=None, mask=None):
    _strided("softmax", input)
    d = _canonical_dim(dim, input.ndim)[0]
    return _ember().nn.functional.softmax(_combine("amax", input, mask), d,
                                          dtype=dtype or input.dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    _strided("log_softmax", input)
    d = _canonical_dim(dim, input.ndim)[0]
    return _ember().nn.functional.log_softmax(_combine("amax", input, mask), d,
                                              dtype=dtype or input.dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    _strided("softmin", input)
    d = _canonical_dim(dim, input.ndim)[0]
    return _ember().nn.functional.softmin(_combine("amin", input, mask), d,
                                          dtype=dtype or input.dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    _strided("normalize", input)
    dtype = dtype or input.dtype
    masked_input = _combine("sum", input, mask)
    n = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return masked_input / _ember().maximum(n, n.new_full((), eps))
