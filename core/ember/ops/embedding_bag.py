"""Bags of embeddings: ``embedding_bag`` (behind ``F.embedding_bag``, ``nn.EmbeddingBag``) and
its own backward op ``embedding_bag_backward``.

``embedding_bag(Tensor weight, Tensor indices, Tensor offsets, int mode, Tensor?
per_sample_weights, bool include_last_offset, int padding_idx) -> (Tensor output, Tensor
offset2bag, Tensor bag_size, Tensor max_indices)``: ``indices`` (M,) int64 is cut into B bags at
``offsets`` (B,) (or B+1 with ``include_last_offset``, the last entry ending the last bag);
bag b reduces its rows of ``weight`` (V, D): mode 0 sum (times ``per_sample_weights``), 1 mean,
2 max (per feature; ``max_indices`` (B, D) the row it came from). Rows equal to ``padding_idx``
(-1: none) are left out, also of the mean's count (``bag_size``); an empty bag gives zeros.
``offset2bag`` (M,) is each index's bag.

``embedding_bag_backward(Tensor grad, Tensor indices, Tensor offset2bag, Tensor bag_size,
Tensor max_indices, int num_weights, int mode, Tensor? per_sample_weights, int padding_idx)``
is the gradient of ``weight`` (V, D): each index's scaled ``grad`` row added to its weight row
(max: each feature to the row that won). Its derivative (double backward) is written in
gathers and ``index_add``.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from ..dispatch.grad_mode import no_grad
from . import factories as _fac
from .elementwise import where
from .sorting import unique

__all__: list = []

SUM, MEAN, MAX = 0, 1, 2
_MODES = {"sum": SUM, "mean": MEAN, "max": MAX}


def embedding_renorm_(weight, flat, max_norm, norm_type):
    """``max_norm``: the rows of ``weight`` that ``flat`` looks up, scaled in place down to
    ``norm_type``-norm ``max_norm`` (PyTorch's ``embedding_renorm_``: no autograd)."""
    with no_grad():
        rows = unique(flat)
        sel = weight.index_select(0, rows)
        norms = sel.norm(norm_type, 1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, rows, sel * scale)


def _n_bags(offsets, include_last_offset):
    n = offsets._shape[0]
    return max(n - 1, 0) if include_last_offset else n


def _embedding_bag_meta(weight, indices, offsets, mode, per_sample_weights, include_last_offset,
                        padding_idx):
    if weight.ndim != 2:
        raise RuntimeError(f"embedding_bag: weight has to be a 2D Tensor, but got Tensor of "
                           f"dimension {weight.ndim}")
    if indices.ndim != 1 or offsets.ndim != 1:
        raise RuntimeError(f"embedding_bag: expected 1-D indices and offsets, got shapes "
                           f"{list(indices._shape)} and {list(offsets._shape)}")
    b = _n_bags(offsets, include_last_offset)
    d = weight._shape[1]
    i64 = _dtype.int64
    return (((b, d), weight.dtype), (tuple(indices._shape), i64), ((b,), i64),
            ((b, d) if mode == MAX else (b,), i64))


def _embedding_bag_backward_meta(grad, indices, offset2bag, bag_size, max_indices, num_weights,
                                 mode, per_sample_weights, padding_idx):
    return (num_weights, grad._shape[1]), grad.dtype


def _valid(indices, padding_idx):
    return indices.ne(padding_idx) if padding_idx >= 0 else None


def _forward_derivative(ctx, grads, weight, indices, offsets, mode, psw, include_last_offset,
                        padding_idx):
    g = grads[0]
    output, offset2bag, bag_size, max_indices = ctx.result
    gw = gp = None
    if ctx.needs(0):
        gw = embedding_bag_backward_op(g, indices, offset2bag, bag_size, max_indices,
                                       ctx.meta(0)[0][0], mode, psw, padding_idx)
    if ctx.needs(4):
        gp = (weight.index_select(0, indices) * g.index_select(0, offset2bag)).sum(1)
        valid = _valid(indices, padding_idx)
        if valid is not None:
            gp = gp * valid
    return gw, None, None, None, gp


def _backward_derivative(ctx, gg, grad, indices, offset2bag, bag_size, max_indices, num_weights,
                         mode, psw, padding_idx):
    """grad_weight is linear in ``grad`` (and in ``per_sample_weights``): its adjoint gathers
    ``gg`` rows back into bags."""
    valid = _valid(indices, padding_idx)
    dgrad = dpsw = None
    if ctx.needs(0):
        if mode == MAX:
            picked = gg.gather(0, max_indices)
            dgrad = picked * bag_size.gt(0).unsqueeze(1)  # an empty bag took no row
        else:
            rows = gg.index_select(0, indices)
            if mode == MEAN:
                rows = rows / bag_size.clamp(min=1).index_select(0, offset2bag).unsqueeze(1)
            elif psw is not None:
                rows = rows * psw.unsqueeze(1)
            if valid is not None:
                rows = rows * valid.unsqueeze(1)
            dgrad = grad.new_zeros(grad._shape).index_add(0, offset2bag, rows)
    if ctx.needs(7):
        dpsw = (gg.index_select(0, indices) * grad.index_select(0, offset2bag)).sum(1)
        if valid is not None:
            dpsw = dpsw * valid
    return dgrad, None, None, None, None, None, None, dpsw, None


embedding_bag_op = define(
    "embedding_bag(Tensor weight, Tensor indices, Tensor offsets, int mode, "
    "Tensor? per_sample_weights, bool include_last_offset, int padding_idx) -> (Tensor output, "
    "Tensor offset2bag, Tensor bag_size, Tensor max_indices)", meta=_embedding_bag_meta,
    derivative=Derivative(_forward_derivative, save=("weight", "indices", "per_sample_weights",
                                                     "result1", "result2", "result3"),
                          diff=("weight", "per_sample_weights"),
                          outputs=(True, False, False, False), name="EmbeddingBagBackward0"))
embedding_bag_backward_op = define(
    "embedding_bag_backward(Tensor grad, Tensor indices, Tensor offset2bag, Tensor bag_size, "
    "Tensor max_indices, int num_weights, int mode, Tensor? per_sample_weights, "
    "int padding_idx) -> Tensor", meta=_embedding_bag_backward_meta,
    derivative=Derivative(_backward_derivative,
                          save=("grad", "indices", "offset2bag", "bag_size", "max_indices",
                                "per_sample_weights"),
                          diff=("grad", "per_sample_weights")))


def _check_index_dtype(t, what):
    if t.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"Expected tensor for argument #1 '{what}' to have one of the "
                           f"following scalar types: Long, Int; but got {t.dtype} instead (while "
                           f"checking arguments for embedding_bag)")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """``F.embedding_bag``: the reductions of bags of embeddings (see the module docstring)."""
    return embedding_bag_outputs(input, weight, offsets, max_norm, norm_type,
                                 scale_grad_by_freq, mode, sparse, per_sample_weights,
                                 include_last_offset, padding_idx)[0]


def embedding_bag_outputs(input, weight, offsets=None, max_norm=None, norm_type=2,
                          scale_grad_by_freq=False, mode="mean", sparse=False,
                          per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``embedding_bag`` with all four outputs of the op (output, offset2bag, bag_size,
    max_indices), as ``torch.embedding_bag`` returns them."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding_bag(): input and weight must be Tensors")
    if weight.dtype is _dtype.int64 and input.is_floating_point():
        input, weight = weight, input  # the pre-0.4 argument order, accepted with a warning
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    _check_index_dtype(input, "indices")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        b, n = input.shape
        offsets = _fac.arange(0, b * n, n, dtype=_dtype.int64, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        _check_index_dtype(offsets, "offsets")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if padding_idx is not None:
        v = weight.shape[0]
        if not -v <= padding_idx < v:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx = padding_idx % v
    else:
        padding_idx = -1
    input = input.to(_dtype.int64) if input.dtype is not _dtype.int64 else input
    offsets = offsets.to(_dtype.int64) if offsets.dtype is not _dtype.int64 else offsets
    # other devices check in their kernels, without a wait; under ember.func.vmap the indices
    # are batched and cannot be read here (the per-example kernels run unchecked)
    if input.device.type == "cpu" and type(input) is Tensor and type(offsets) is Tensor:
        _check_bags(input, offsets, weight.shape[0], include_last_offset)
    return embedding_bag_op(weight, input, offsets, _MODES[mode], per_sample_weights,
                            bool(include_last_offset), padding_idx)


def _check_bags(indices, offsets, num_weights, include_last_offset):
    """Offsets start at 0 and never decrease; indices are rows of weight (this reads the
    tensors, as PyTorch's CPU checks do)."""
    del include_last_offset  # the same rules either way
    off = offsets._host() if offsets.numel() else None
    if off is not None:
        if off[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got "
                               f"{int(off[0])}")
        if (off[1:] < off[:-1]).any() or off[-1] > indices.numel():
            raise RuntimeError(f"embedding_bag: offsets must be non-decreasing and at most the "
                               f"number of indices ({indices.numel()}), got {off.tolist()}")
    if indices.numel():
        idx = indices._host()
        bad = (idx < 0) | (idx >= num_weights)
        if bad.any():
            k = int(bad.argmax())
            raise RuntimeError(f"Index {k} of input takes value {int(idx[k])} which is not in "
                               f"the valid range [0, {num_weights})")
