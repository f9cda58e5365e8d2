"""Scaled dot-product attention: torch's math path (the reference), the fused op pair that
backends implement with tiled kernels, and the choice between them.

Ops (every facet beside its ``define``):

* ``scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
  enable_gqa) -> Tensor`` — the op behind ``F.scaled_dot_product_attention``. Its composite
  picks an implementation (``ember.nn.attention.sdpa_kernel``'s enabled set and priority, what
  the device has, what the call needs) and runs it; the choice is kept for
  ``ember.nn.attention.last_sdpa_backend()``.
* ``_scaled_dot_product_attention_math(...) -> (output, attn_weights)`` — torch's math path
  (SDPBackend.MATH): matmul, mask, safe softmax, dropout, matmul. A composite only: autograd
  sees through it, so it is differentiable to any order and in the float mask too.
* ``_scaled_dot_product_fused_attention(query, key, value, attn_mask, is_causal, scale) ->
  (output, logsumexp)`` — SDPBackend.FLASH_ATTENTION, the op backends give tiled kernels. Its
  calling convention (the op layer makes it so): query (B, Hq, L, E), key (B, Hkv, S, E), value
  (B, Hkv, S, Ev), any strides (expanded dims have stride 0); Hkv divides Hq and query head h
  reads key/value head ``h // (Hq // Hkv)`` (grouped-query attention without copies);
  attn_mask None or (B, Hq, L, S), usually an expanded view, bool (True takes part) or float
  (added to the scores); causal masks are top-left aligned (key j takes part for query i when
  j <= i). Outputs: (B, Hq, L, Ev) in query's dtype and the log-sum-exp of each row's scaled,
  masked scores, (B, Hq, L) in float32 (float64 for float64 input), -inf for a row no key takes
  part in (its output is 0, as torch's safe softmax gives). The composite is the math form.
* ``_scaled_dot_product_fused_attention_backward(grad_out, query, key, value, attn_mask, out,
  logsumexp, is_causal, scale) -> (grad_query, grad_key, grad_value)`` — the fused forward's
  derivative. A kernel recomputes the probabilities tile by tile from query, key and logsumexp
  (``exp(s - lse)``) and uses ``rowsum(grad_out * out)`` for the softmax's correction term, so no
  L x S matrix exists. Its composite is the math formula, which recomputes the probabilities
  from query and key and reads neither ``out`` nor ``logsumexp``: a double backward (create_graph
  =True records the composite, not the kernel) therefore differentiates only query, key, value
  and grad_out, through the math path's ops.

A backend (or a plug-in, through ``ember.library.Library("ember", "IMPL").impl(name, fn,
device)``) that registers the fused forward kernel makes FLASH_ATTENTION available on its
device; the backward kernel is optional (the composite runs otherwise). A backend attribute
``sdpa_max_head_dim`` bounds the head dims its kernels take (larger ones use the math path).
"""
from __future__ import annotations

import enum
import math
import warnings

import numpy as np

from .. import _dtype
from .._dtype import FLOATING
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import _grad
from . import elementwise as _ew
from . import linalg as _la
from . import reduction as _red
from . import shape as _shape
from ._util import _broadcast_pair
from ..dispatch.grad_mode import is_grad_enabled
from ..runtime.registry import registry
from ._util import cpp_dtype_name as _cpp
from .._warn import user_stacklevel

__all__ = ["scaled_dot_product_attention"]

FUSED = "_scaled_dot_product_fused_attention"
FUSED_BACKWARD = FUSED + "_backward"


class SDPBackend(enum.IntEnum):
    """torch.nn.attention.SDPBackend: the implementations ``sdpa_kernel`` enables. On ember's
    devices MATH is the math path and FLASH_ATTENTION the fused tiled kernels; the others have
    no implementation (enabling only them raises "No available kernel")."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self):
        return f"SDPBackend.{self.name}"

    __format__ = object.__format__


class _Selection:
    """Process-wide, as torch's flags are: which backends are enabled, in which priority
    order, and what the last call chose."""

    def __init__(self):
        self.enabled = frozenset(b for b in SDPBackend if b is not SDPBackend.ERROR)
        self.priority = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                         SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE)
        self.last = None


selection = _Selection()


# -- the math path ------------------------------------------------------------------------------
def _expand_heads(t, groups):
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated ``groups`` times in a row
    (repeat_interleave on dim -3, as torch's math path does for grouped-query attention)."""
    if groups == 1:
        return t
    *lead, h, s, e = t._shape
    return t.unsqueeze(-3).expand(*lead, h, groups, s, e).reshape(*lead, h * groups, s, e)


def _sum_heads(g, groups):
    """The adjoint of ``_expand_heads``: (..., H * groups, S, E) -> (..., H, S, E)."""
    if groups == 1:
        return g
    *lead, hg, s, e = g._shape
    return g.reshape(*lead, hg // groups, groups, s, e).sum(-3)


def _masked(scores, attn_mask, is_causal):
    """The scores with the mask applied: -inf where a bool mask is False or above the causal
    diagonal (top-left aligned, torch's tril), a float mask added."""
    if is_causal:
        L, S = scores._shape[-2:]
        attn_mask = _shape.tril(_grad.ones((L, S), scores, _dtype.bool_))
    if attn_mask is None:
        return scores
    if attn_mask.dtype is _dtype.bool_:
        return _ew.where(attn_mask, scores, -math.inf)
    return scores + _grad.cast(attn_mask, scores.dtype)


def _safe_softmax(scores):
    """torch's ``_safe_softmax``: softmax over the last dim, except that a row that is -inf
    everywhere (no key takes part) gives zeros, not NaN, and zero gradients (the row is made
    finite before the softmax, so its backward never sees NaN)."""
    none = (scores == -math.inf).all(-1, keepdim=True)
    p = _red.softmax(_ew.where(none, 0.0, scores), -1)
    return _ew.where(none, 0.0, p)


def _math(query, key, value, attn_mask, dropout_p, is_causal, dropout_mask, scale, enable_gqa):
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if scale is None:
        scale = 1.0 / math.sqrt(query._shape[-1]) if query._shape[-1] else math.inf
    # torch scales query and key by sqrt(scale) each before the product, for range
    root = math.sqrt(abs(scale))
    q = query * (root if scale >= 0 else -root)
    if enable_gqa and query.ndim >= 3:
        key, value = (_expand_heads(t, query._shape[-3] // t._shape[-3]) if t.ndim >= 3 else t
                      for t in (key, value))
    scores = _la.matmul(q, key.transpose(-2, -1) * root)
    attn = _safe_softmax(_masked(scores, attn_mask, is_causal))
    if dropout_p > 0.0:
        if dropout_mask is not None:
            attn = _ew.where(dropout_mask, attn, 0.0)
            return _la.matmul(attn, value * (1.0 / (1.0 - dropout_p))), attn
        if dropout_p >= 1.0:
            attn = attn * 0.0
        else:  # the device's generator draws the mask, as F.dropout's does
            keep = attn.new_empty(attn._shape).bernoulli_(1.0 - dropout_p)
            attn = attn * keep * (1.0 / (1.0 - dropout_p))
    return _la.matmul(attn, value), attn


math_op = define(
    "_scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, "
    "Tensor? attn_mask, float dropout_p, bool is_causal, Tensor? dropout_mask, float? scale, "
    "bool enable_gqa) -> (Tensor output, Tensor attn_weights)", composite=_math)


# -- the fused op pair --------------------------------------------------------------------------
def _accumulate_dtype(d):
    return _dtype.float64 if d is _dtype.float64 else _dtype.float32


def _fused_shapes(op, query, key, value, attn_mask):
    """(B, Hq, Hkv, L, S, E, Ev) of the fused ops' operands; RuntimeError naming ``op``."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim != 4:
            raise RuntimeError(f"{op}: expected {name} to be a 4-D tensor (batch, heads, seq, "
                               f"dim), got {_describe(t)}")
    B, Hq, L, E = query._shape
    Bk, Hkv, S, Ek = key._shape
    shapes = f"query {list(query._shape)}, key {list(key._shape)}, value {list(value._shape)}"
    if (Bk, Hkv, S) != tuple(value._shape[:3]) or Bk != B or Ek != E or \
            (Hkv and Hq % Hkv) or (not Hkv and Hq):
        raise RuntimeError(f"{op}: expected key (B, Hkv, S, E) and value (B, Hkv, S, Ev) with "
                           f"query (B, Hq, L, E) and Hkv dividing Hq, got {shapes}")
    if attn_mask is not None and tuple(attn_mask._shape) != (B, Hq, L, S):
        raise RuntimeError(f"{op}: expected attn_mask of shape {[B, Hq, L, S]}, got "
                           f"{list(attn_mask._shape)} ({shapes})")
    return B, Hq, Hkv, L, S, E, value._shape[3]


def check_fused_operands(query, key, value, attn_mask):
    """The fused ops' shape contract, for kernels that must not read past their operands."""
    _fused_shapes(FUSED, query, key, value, attn_mask)


def _describe(t):
    return f"shape {list(t._shape)}" if isinstance(t, Tensor) else type(t).__name__


def _fused_meta(query, key, value, attn_mask, is_causal, scale):
    B, Hq, _, L, _, _, Ev = _fused_shapes(FUSED, query, key, value, attn_mask)
    return ((B, Hq, L, Ev), query.dtype), ((B, Hq, L), _accumulate_dtype(query.dtype))


def _fused_reference(query, key, value, attn_mask, is_causal, scale):
    groups = query._shape[1] // max(key._shape[1], 1)
    k, v = _expand_heads(key, groups), _expand_heads(value, groups)
    scores = _masked(_la.matmul(query, k.transpose(-2, -1)) * scale, attn_mask, is_causal)
    lse = _red.logsumexp(_grad.cast(scores, _accumulate_dtype(query.dtype)), -1)
    return _la.matmul(_safe_softmax(scores), v), lse


def _fused_derivative(ctx, grads, query, key, value, attn_mask, is_causal, scale):
    out, lse = ctx.result
    gq, gk, gv = fused_backward_op(grads[0], query, key, value, attn_mask, out, lse, is_causal,
                                   scale)
    return gq if ctx.needs(0) else None, gk if ctx.needs(1) else None, \
        gv if ctx.needs(2) else None


fused_op = define(
    f"{FUSED}(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, bool is_causal, "
    f"float scale) -> (Tensor output, Tensor logsumexp)",
    meta=_fused_meta, composite=_fused_reference,
    # the mask gets no gradient here: a mask that needs one takes the math path
    derivative=Derivative(_fused_derivative, save=("query", "key", "value", "attn_mask",
                                                   "result"),
                          diff=("query", "key", "value"), outputs=(True, False)))


def _fused_backward_meta(grad_out, query, key, value, attn_mask, out, logsumexp, is_causal,
                         scale):
    B, Hq, _, L, _, _, Ev = _fused_shapes(FUSED_BACKWARD, query, key, value, attn_mask)
    for name, t, shape in (("grad_out", grad_out, (B, Hq, L, Ev)),
                           ("out", out, (B, Hq, L, Ev)), ("logsumexp", logsumexp, (B, Hq, L))):
        if tuple(t._shape) != shape:
            raise RuntimeError(f"{FUSED_BACKWARD}: expected {name} of shape {list(shape)}, "
                               f"got {list(t._shape)}")
    return ((query._shape, query.dtype), (key._shape, key.dtype), (value._shape, value.dtype))


def _fused_backward_reference(grad_out, query, key, value, attn_mask, out, logsumexp,
                              is_causal, scale):
    groups = query._shape[1] // max(key._shape[1], 1)
    k, v = _expand_heads(key, groups), _expand_heads(value, groups)
    scores = _masked(_la.matmul(query, k.transpose(-2, -1)) * scale, attn_mask, is_causal)
    p = _safe_softmax(scores)
    grad_v = _la.matmul(p.transpose(-2, -1), grad_out)
    dp = _la.matmul(grad_out, v.transpose(-2, -1))
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    grad_q = _la.matmul(ds, k) * scale
    grad_k = _la.matmul(ds.transpose(-2, -1), query) * scale
    return grad_q, _sum_heads(grad_k, groups), _sum_heads(grad_v, groups)


fused_backward_op = define(
    f"{FUSED_BACKWARD}(Tensor grad_out, Tensor query, Tensor key, Tensor value, "
    f"Tensor? attn_mask, Tensor out, Tensor logsumexp, bool is_causal, float scale) -> "
    f"(Tensor grad_query, Tensor grad_key, Tensor grad_value)",
    meta=_fused_backward_meta, composite=_fused_backward_reference)


# -- choosing an implementation -----------------------------------------------------------------
def _backend_of(t):
    return registry.get(t.device.type)


def _flash_unusable(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Why the fused kernels can't run this call, or None."""
    backend = _backend_of(query)
    if FUSED not in backend.kernels:
        return f"the {backend.name} backend has no kernel for {FUSED}"
    if dropout_p > 0.0:
        return "the fused kernels have no dropout (dropout_p > 0)"
    if attn_mask is not None and attn_mask.requires_grad and is_grad_enabled():
        return "attn_mask requires grad (its gradient comes from the math path)"
    if enable_gqa and query.ndim >= 3 and key._shape[-3] != value._shape[-3]:
        return (f"key and value have different numbers of heads ({key._shape[-3]} and "
                f"{value._shape[-3]})")
    limit = getattr(backend, "sdpa_max_head_dim", None)
    if limit is not None and max(query._shape[-1], value._shape[-1]) > limit:
        return (f"head dims {query._shape[-1]} (query/key) and {value._shape[-1]} (value) "
                f"exceed the {backend.name} kernels' limit of {limit}")
    return None


def _unusable(backend, args):
    if backend is SDPBackend.MATH:
        return None
    if backend is SDPBackend.FLASH_ATTENTION:
        return _flash_unusable(*args)
    return f"{backend.name} has no implementation on ember's devices"


def select_backend(query, key, value, attn_mask=None, dropout_p=0.0, enable_gqa=False, *,
                   warn=False):
    """The SDPBackend a call with these arguments uses now; RuntimeError when none is enabled
    and usable (after a warning per enabled backend saying why, when ``warn``)."""
    args = (query, key, value, attn_mask, dropout_p, enable_gqa)
    reasons = []
    for b in selection.priority:
        if b in selection.enabled:
            why = _unusable(b, args)
            if why is None:
                return b
            reasons.append((b, why))
    if warn:
        for b, why in reasons:
            warnings.warn(f"scaled_dot_product_attention: {b.name} can't be used: {why}",
                          UserWarning, stacklevel=user_stacklevel())
    raise RuntimeError("No available kernel. Aborting execution. (scaled_dot_product_attention:"
                       " enabled backends " + (", ".join(b.name for b, _ in reasons) or "none") +
                       "; see ember.nn.attention.sdpa_kernel)")


def _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    choice = select_backend(query, key, value, attn_mask, dropout_p, enable_gqa, warn=True)
    selection.last = choice
    if choice is SDPBackend.MATH:
        return math_op(query, key, value, attn_mask, dropout_p, is_causal, None, scale,
                       enable_gqa)[0]
    return _run_fused(query, key, value, attn_mask, is_causal, scale, enable_gqa)


def _to_bhsd(t, batch, heads, rows=None):
    """``t`` (..., h, s, d) broadcast to a 4-D (B, heads, s, d) view (``rows`` replaces s for a
    mask); a copy only when several batch dims must merge and their strides don't allow a
    view."""
    *_, s, d = t._shape
    t = t.expand(*batch, heads, s if rows is None else rows, d)
    if len(batch) == 1:
        return t
    return t.unsqueeze(0) if not batch else t.reshape(-1, *t._shape[-3:])


def _run_fused(query, key, value, attn_mask, is_causal, scale, enable_gqa):
    L, E = query._shape[-2:]
    S, Ev = key._shape[-2], value._shape[-1]
    q3, k3, v3 = (t if t.ndim >= 3 else t.unsqueeze(0) for t in (query, key, value))
    batch = _broadcast_pair(_broadcast_pair(q3._shape[:-3], k3._shape[:-3]), v3._shape[:-3])
    if enable_gqa:
        heads, kv_heads = q3._shape[-3], k3._shape[-3]
    else:
        heads = _broadcast_pair(_broadcast_pair(q3._shape[-3:-2], k3._shape[-3:-2]),
                                v3._shape[-3:-2])[0]
        kv_heads = heads
    q4 = _to_bhsd(q3, batch, heads)
    k4, v4 = _to_bhsd(k3, batch, kv_heads), _to_bhsd(v3, batch, kv_heads)
    m4 = None if attn_mask is None else _to_bhsd(attn_mask, batch, heads, L)
    # with E == 0 every score is 0 whatever the scale; the default 1/sqrt(0) would make it NaN
    out, _ = fused_op(q4, k4, v4, m4, bool(is_causal), float(scale) if E else 1.0)
    ndim = max(query.ndim, key.ndim, value.ndim)
    shape = ((*batch, heads) + (L, Ev))[-ndim:]
    return out if out._shape == shape else out.view(shape)


sdpa_op = define(
    "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, "
    "float dropout_p, bool is_causal, float scale, bool enable_gqa) -> Tensor", composite=_sdpa)


# -- ONNX: attention decomposed into MatMul / Softmax, for the three ops -------------------------
def _attention_onnx(b, c, q, k, v, mask=None, dropout_p=0.0, is_causal=False, scale=None,
                    enable_gqa=False):
    """(output, weights) ONNX values of attention without dropout."""
    qs, ks = c.shape(0), c.shape(1)
    if enable_gqa and qs[-3] != ks[-3]:
        c.refuse("grouped-query attention (enable_gqa)", op="scaled_dot_product_attention")
    rank = len(ks)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else scale
    scores = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=perm)]),
                          c.scalar(scale, c.meta(0)[1])])
    dt = np.dtype(c.meta(0)[1].np)
    if is_causal:
        L, S = qs[-2], ks[-2]
        if (len(qs) - 2) in c.dynamic_dims(0) or (len(ks) - 2) in c.dynamic_dims(1):
            # a dynamic sequence length: the lower triangle made at run time (Trilu)
            size = b.op("Concat", [b.op("Gather", [b.op("Shape", [q]), b.ints([-2])], axis=0),
                                   b.op("Gather", [b.op("Shape", [k]), b.ints([-2])], axis=0)],
                        axis=0)
            ones = b.constant_of_shape(size, 1, np.int64)
            keep = b.op("Cast", [b.op("Trilu", [ones], upper=0)], to=9)   # bool
            zero, neg = b.const(np.asarray(0, dt)), b.const(np.asarray(-np.inf, dt))
            scores = b.op("Add", [scores, b.op("Where", [keep, zero, neg])])
        else:
            causal = np.where(np.tril(np.ones((L, S), bool)), 0, -np.inf).astype(dt)
            scores = b.op("Add", [scores, b.const(causal, "causal_mask")])
    if mask is not None:
        if c.meta(3)[1].is_floating_point:
            scores = b.op("Add", [scores, mask])
        else:
            scores = b.op("Where", [mask, scores, b.const(np.asarray(-np.inf, dt))])
    weights = b.op("Softmax", [scores], axis=-1)
    return b.op("MatMul", [weights, v]), weights


@sdpa_op.def_onnx
def _sdpa_onnx(b, c, q, k, v, mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False, *rest):
    return _attention_onnx(b, c, q, k, v, mask, dropout_p, is_causal, scale, enable_gqa)[0]


@fused_op.def_onnx
def _fused_onnx(b, c, q, k, v, mask, is_causal, scale, *rest):
    """The fused kernel's (output, log-sum-exp): the log-sum-exp has no ONNX counterpart."""
    return [_attention_onnx(b, c, q, k, v, mask, 0.0, is_causal, scale)[0], None]


@math_op.def_onnx
def _math_onnx(b, c, q, k, v, mask, dropout_p, is_causal, dropout_mask, scale,
               enable_gqa=False, *rest):
    if dropout_mask is not None:
        c.refuse("attention dropout in an exported graph")
    out, weights = _attention_onnx(b, c, q, k, v, mask, 0.0, is_causal, scale, enable_gqa)
    return [out, weights]


# -- the Python API -----------------------------------------------------------------------------
def _check_args(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
    for pos, (name, t) in enumerate((("query", query), ("key", key), ("value", value)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' (position {pos}) "
                            f"must be Tensor, not {type(t).__name__}")
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        raise TypeError(f"scaled_dot_product_attention(): argument 'attn_mask' must be Tensor, "
                        f"not {type(attn_mask).__name__}")
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: "
                           f"{value.ndim} instead.")
    if not query.dtype is key.dtype is value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_cpp(query.dtype)} key.dtype: {_cpp(key.dtype)} and "
                           f"value.dtype: {_cpp(value.dtype)} instead.")
    if query.dtype.category != FLOATING:
        raise RuntimeError(f"scaled_dot_product_attention: expected query, key and value to be "
                           f"floating point, but got {_cpp(query.dtype)}")
    shapes = (f"query {list(query.shape)}, key {list(key.shape)}, value "
              f"{list(value.shape)}")
    if query._shape[-1] != key._shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: Expected query and key to have the "
                           f"same embedding dim (last dim), but got query.size(-1): "
                           f"{query._shape[-1]} and key.size(-1): {key._shape[-1]} ({shapes})")
    if key._shape[-2] != value._shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: Expected key and value to have the "
                           f"same sequence length (dim -2), but got key.size(-2): "
                           f"{key._shape[-2]} and value.size(-2): {value._shape[-2]} ({shapes})")
    lead = [t._shape[:-2] for t in (query, key, value)]
    if enable_gqa and query.ndim >= 3:
        hq = query._shape[-3]
        for name, t in (("key", key), ("value", value)):
            h = t._shape[-3] if t.ndim >= 3 else 1
            if h == 0 or hq % h:
                raise RuntimeError(f"Number of heads in key and value must divide the number of "
                                   f"heads in query ({shapes})")
        lead = [s[:-1] if len(s) else s for s in lead]
    try:
        out_lead = _broadcast_pair(_broadcast_pair(lead[0], lead[1]), lead[2])
    except RuntimeError as e:
        raise RuntimeError(f"scaled_dot_product_attention: {e} (batch and head dims of "
                           f"{shapes})") from None
    if enable_gqa and query.ndim >= 3:
        out_lead = out_lead + (query._shape[-3],)
    if attn_mask is not None:
        if attn_mask.dtype is not _dtype.bool_ and attn_mask.dtype is not _dtype.float32 and \
                attn_mask.dtype is not query.dtype:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {_cpp(attn_mask.dtype)} and  "
                               f"query.dtype: {_cpp(query.dtype)} instead.")
        if attn_mask.ndim < 2:  # torch reads its dim -2
            raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but "
                             f"got -2): scaled_dot_product_attention needs an attn_mask of at "
                             f"least 2 dims (..., L, S), got shape {list(attn_mask.shape)}")
        scores = out_lead + (query._shape[-2], key._shape[-2])
        try:
            fits = _broadcast_pair(tuple(attn_mask._shape), scores) == scores
        except RuntimeError:
            fits = False
        if not fits:
            raise RuntimeError(f"scaled_dot_product_attention: attn_mask of shape "
                               f"{list(attn_mask.shape)} doesn't broadcast to the attention "
                               f"weights' shape {list(scores)} ({shapes})")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
    if dropout_p > 0.0 and not dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention: ``softmax(q @ k^T * scale + mask) @ v``
    over any leading (broadcast) batch dims; the implementation is chosen per call (see the
    module docstring and ``ember.nn.attention``)."""
    _check_args(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if scale is None:
        e = query._shape[-1]
        scale = 1.0 / math.sqrt(e) if e else math.inf
    return sdpa_op(query, key, value, attn_mask, float(dropout_p), bool(is_causal), float(scale),
                   bool(enable_gqa))
