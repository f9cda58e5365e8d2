"""``embedding(Tensor weight, Tensor indices, int padding_idx, bool scale_grad_by_freq)``: the
rows of ``weight`` (V, D) that ``indices`` name, shaped ``indices.shape + (D,)`` — one op, as
in PyTorch, so its node is ``EmbeddingBackward0``. Its gradient (PyTorch's
``embedding_dense_backward``) adds each output row's gradient into the weight row it came
from, none for ``padding_idx`` (-1: none), divided by the index's count with
``scale_grad_by_freq``. ``F.embedding`` (``nn/_embedding.py``) checks the arguments and the
indices' range and calls it."""
from __future__ import annotations

from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import _grad, _tangents
from .elementwise import where
from .indexing import index_add_op, index_select_op
from .sorting import unique

__all__: list = []


def _embedding_meta(weight, indices, padding_idx, scale_grad_by_freq):
    return tuple(indices._shape) + (weight._shape[1],), weight.dtype


def _embedding(weight, indices, padding_idx, scale_grad_by_freq):
    rows = index_select_op(weight, 0, indices.reshape(-1))
    return rows.reshape(*indices._shape, weight._shape[1])


def _embedding_backward(ctx, g, weight, indices, padding_idx, scale_grad_by_freq):
    shape = ctx.meta(0)[0]
    flat = indices.reshape(-1)
    rows = g.reshape(-1, shape[1])
    if scale_grad_by_freq:
        _, inverse, counts = unique(flat, return_inverse=True, return_counts=True)
        rows = rows / counts.to(rows.dtype).index_select(0, inverse).unsqueeze(-1)
    if padding_idx >= 0:
        rows = where(flat.ne(padding_idx).unsqueeze(-1), rows, 0.0)
    return (index_add_op(_grad.zeros(shape, g), 0, flat, rows, 1),)


embedding_op = define(
    "embedding(Tensor weight, Tensor indices, int padding_idx, bool scale_grad_by_freq) -> Tensor",
    meta=_embedding_meta, composite=_embedding,
    derivative=Derivative(_embedding_backward, save=("indices",), diff=("weight",)))
embedding_op.def_jvp(_tangents.linear(embedding_op))


@embedding_op.def_onnx
def _embedding_onnx(b, c, weight, indices, *rest):
    return b.op("Gather", [weight, indices], axis=0)
