"""Helpers the distributions share (``torch.distributions.utils``'s names)."""
from __future__ import annotations

import math
from functools import update_wrapper
from operator import attrgetter
from numbers import Number

import numpy as np
import ember

from .. import _dtype
from .._tensor import Tensor
from ..ops.nn.loss import binary_cross_entropy_with_logits_op

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant


class _FInfo:
    __slots__ = ("eps", "tiny", "max", "min")

    def __init__(self, dtype):
        info = np.finfo(np.float32 if dtype.name in ("bfloat16",) else dtype.np)
        if dtype.name == "bfloat16":
            self.eps, self.tiny = 0.0078125, 1.1754943508222875e-38
            self.max = 3.3895313892515355e38
        else:
            self.eps, self.tiny, self.max = float(info.eps), float(info.tiny), float(info.max)
        self.min = -self.max


_FINFO = {}


def finfo(dtype) -> _FInfo:
    """eps, tiny (smallest normal), max and min of a floating dtype."""
    f = _FINFO.get(dtype)
    if f is None:
        real = dtype.to_real() if dtype.category == _dtype.COMPLEX else dtype
        f = _FINFO[dtype] = _FInfo(real)
    return f


def _ember():
    return ember


def broadcast_all(*values):
    """Tensors and numbers broadcast to one shape; numbers become tensors of the first
    tensor's dtype and device (the default dtype when there is none)."""
    em = _ember()
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        opts = {"dtype": _dtype.get_default_dtype()}
        for v in values:
            if isinstance(v, Tensor):
                opts = {"dtype": v.dtype, "device": v.device}
                break
        values = [v if isinstance(v, Tensor) else em.tensor(v, **opts) for v in values]
    return em.broadcast_tensors(*values)


def _probs_or_logits(probs, logits):
    """The name and value of the one of ``probs``/``logits`` given (exactly one must be)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


def _set_probs_or_logits(dist, probs, logits):
    """The parameter of the binary families: exactly one of ``probs``/``logits``, as a tensor
    (a number becomes a 0-dim one); sets ``dist.probs`` or ``dist.logits`` and ``dist._param``
    (the one given), and returns it."""
    name, value = _probs_or_logits(probs, logits)
    (param,) = broadcast_all(value)
    setattr(dist, name, param)
    dist._param = param
    return param


def _set_count_and_param(dist, total_count, probs, logits):
    """The parameters of the binomial families: exactly one of ``probs``/``logits``, broadcast
    with ``total_count`` (cast to its dtype); sets ``dist.total_count``, ``dist.probs`` or
    ``dist.logits``, and ``dist._param`` (the one given)."""
    name, value = _probs_or_logits(probs, logits)
    count, param = broadcast_all(total_count, value)
    dist.total_count = count.type_as(param)
    setattr(dist, name, param)
    dist._param = param


def _forwarded(path):
    """A read-only property whose value is ``self.<path>`` (a dotted path): a parameter,
    moment or flag a distribution or transform takes unchanged from the one it is built on
    (``_forwarded("base_dist.loc")``)."""
    return property(attrgetter(path))


def _cat_lengths(lengths, parts, what):
    """The slice lengths of a cat constraint or transform over ``parts`` (named ``what``):
    1 each by default, else one per part."""
    lengths = [1] * len(parts) if lengths is None else list(lengths)
    if len(lengths) != len(parts):
        raise AssertionError(f"lengths ({len(lengths)}) must match {what} ({len(parts)})")
    return lengths


def _standard_normal(shape, dtype, device):
    return _ember().randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps] (eps of their dtype)."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


class lazy_property:
    """A property computed on first access (with gradients enabled) and then stored on the
    instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _LazyPropertyAndProperty(self.wrapped)
        with _ember().enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _LazyBinaryProbsLogits:
    """``probs`` and ``logits`` of a binary event, each computed from the other (the one given)
    on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class _BinaryProbsLogits(_LazyBinaryProbsLogits):
    """The lazy probs/logits pair and ``param_shape`` (of ``_param``, the one given): shared by
    Bernoulli, Binomial, LogitRelaxedBernoulli and NegativeBinomial."""

    @property
    def param_shape(self):
        return self._param.size()


class _LazyPropertyAndProperty(lazy_property, property):
    """What a lazy property looks like on the class: a property to documentation tools, a
    lazy_property to argument validation."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_mask(n, diag, device):
    em = _ember()
    idx = em.arange(n, device=device)
    return idx.lt(idx.view(-1, 1) + (diag + 1))


def tril_matrix_to_vec(mat, diag=0):
    """The lower-triangular entries of ``mat`` (row by row) as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of ``tril_matrix_to_vec``."""
    em = _ember()
    k = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * k + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > 1e-6:
        raise ValueError(f"The size of last dimension is {k} which cannot be expressed as the "
                         f"lower triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag, vec.device)
    rows, cols = np.nonzero(mask.cpu().numpy())
    flat = em.tensor((rows * n + cols).astype(np.int64), device=vec.device)
    out = vec.new_zeros(tuple(vec.shape[:-1]) + (n * n,))
    index = flat.expand(*vec.shape[:-1], flat.shape[0])
    return out.scatter(-1, index, vec).reshape(*vec.shape[:-1], n, n)


def _bce_with_logits(logits, target):
    """Elementwise binary cross-entropy of logits: torch's ``binary_cross_entropy_with_logits(
    reduction="none")``, the op whose gradient is ``sigmoid(x) - t`` (the stable composite
    ``max(x, 0) - x t + log1p(exp(-|x|))`` takes other subgradients at a logit of exactly 0)."""
    logits, target = broadcast_all(logits, target)
    return binary_cross_entropy_with_logits_op(logits, target, None, None, 0)
