"""Lookups in ``ember.nn.functional``: ``embedding`` (rows of a weight by index, with
``max_norm`` renormalisation), ``embedding_bag`` (the op is ``ember.ops.embedding_bag``) and
``one_hot``; with the ``torch.*`` native forms (the weight first)."""
from __future__ import annotations

import warnings

from .. import _dtype
from .. import _tensor as _tensor_mod
from ..dispatch.grad_mode import no_grad
from ..ops import reduction as _red
from ..ops._util import every_example, require_tensor, torch_function
from ..ops.elementwise import where
from ..ops.embedding import embedding_op
from ..ops.embedding_bag import embedding_bag, embedding_bag_outputs, embedding_renorm_
from ..runtime.backend import Backend
from ..ops.indexing import one_hot as _one_hot
from .._warn import user_stacklevel

__all__ = ["embedding", "embedding_bag", "one_hot"]


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the integer ``input``; the row at ``padding_idx`` gets no
    gradient."""
    require_tensor(input, "embedding")
    require_tensor(weight, "embedding", "weight")
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead "
                           f"(while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got shape {list(weight.shape)}")
    if sparse:
        warnings.warn("embedding(sparse=True): ember computes the weight's gradient dense (its "
                      "sparse COO tensors do not flow through embedding's backward)",
                      UserWarning, stacklevel=user_stacklevel())
    num = weight._shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= num
    pad = -1 if padding_idx is None else padding_idx
    scale_grad_by_freq = bool(scale_grad_by_freq)
    flat = input.reshape(-1)
    # the range check reads index values: the backend makes it (at once on the CPU, on the
    # device and at the next synchronization on CUDA, like PyTorch's device-side assert).
    # Under ember.compile/export the check is the op's own (its kernel's, or index_select's in
    # its composite: it raises on every backend), as it is on a device whose backend would read
    # the values back for it (OpenCL's index_select flags a bad index on the device, raised at
    # the next read): a read here would stall every step
    be = flat._backend()
    if flat.device.type == "cpu" and max_norm is None and not _tensor_mod._capturing():
        # the CPU's kernel checks its indices as it reads them: catch its error rather
        # than check twice (six ops a call), and say it as embedding does
        try:
            return embedding_op(weight, input, pad, scale_grad_by_freq)
        except IndexError:
            bad = flat[(flat < 0) | (flat >= num)][0]
            raise IndexError(f"index out of range in self (embedding of {num} rows got index "
                             f"{int(bad)})") from None
    if flat.numel() and not _tensor_mod._capturing() and (
            flat.device.type == "cpu" or type(be).assert_values is not Backend.assert_values):
        every = every_example(flat)   # every example of a vmapped batch
        with no_grad():
            lo, hi = _red.amin(every), _red.amax(every)
            over = hi >= num
            ok = (lo >= 0) & ~over
            value = where(over, hi, lo)
        be.assert_values(
            "embedding", ok, value, IndexError,
            f"index out of range in self (embedding of {num} rows got index {{value}})")
    if max_norm is not None:
        embedding_renorm_(weight, flat, max_norm, norm_type)
    return embedding_op(weight, input, pad, scale_grad_by_freq)


@torch_function("embedding_renorm_")
def _torch_embedding_renorm_(input, indices, max_norm, norm_type):
    """``torch.embedding_renorm_``: the rows of ``input`` that ``indices`` name rescaled in place
    to a ``norm_type`` norm of at most ``max_norm``; returns ``input``."""
    require_tensor(input, "embedding_renorm_")
    embedding_renorm_(input, indices.reshape(-1), float(max_norm), float(norm_type))
    return input


def one_hot(tensor, num_classes=-1):
    return _one_hot(tensor, num_classes)


# -- the torch.* native forms -------------------------------------------------------------------
@torch_function("embedding")
def _torch_embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@torch_function("embedding_bag")
def _torch_embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                         sparse=False, per_sample_weights=None, include_last_offset=False,
                         padding_idx=None):
    """PyTorch's native form: mode 0/1/2 = sum/mean/max, and the four outputs (output,
    offset2bag, bag_size, max_indices)."""
    names = {0: "sum", 1: "mean", 2: "max"}
    if mode not in names:
        raise ValueError(f"embedding_bag(): mode must be 0 (sum), 1 (mean) or 2 (max), got "
                         f"{mode}")
    return embedding_bag_outputs(indices, weight, offsets, None, 2, scale_grad_by_freq,
                                 names[mode], sparse, per_sample_weights, include_last_offset,
                                 padding_idx)
