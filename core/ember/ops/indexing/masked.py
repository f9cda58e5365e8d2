"""Masks: ``masked_fill`` and ``masked_select`` — each op with its meta and derivative — and
``one_hot``."""
from __future__ import annotations

from ... import _dtype
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _tangents
from .. import _meta
from .. import conversion as _conv
from .. import elementwise as _ew
from ..elementwise._rules import write_in_place
from .. import factories as _fac
from .._util import broadcast_shapes, every_example, tensor_method, write_out
from ..views import select_op
from .advanced import index_put_op, nonzero_op


def _masked_fill_meta(self, mask, value):
    return _meta.broadcast("masked_fill", self, mask), self.dtype


def _masked_fill_backward(ctx, g, self, mask, value):
    return (_grad.mask_fill_zero(g, mask) if ctx.needs(0) else None, None,
            _grad.keep_where(g, mask) if ctx.needs(2) else None)


def _masked_select_backward(ctx, g, self, mask):
    shape = broadcast_shapes(ctx.meta(0)[0], mask._shape)
    m = mask if mask._shape == shape else mask.expand(*shape)
    hits = nonzero_op(m)
    idx = [select_op(hits, 1, k) for k in range(len(shape))]
    if not shape:  # 0-d: g holds the one element if it was selected, else nothing
        return (_ew.where(mask, g.sum(), 0.0),)
    return (index_put_op(_grad.zeros(shape, g), idx, g, False),)


masked_fill_op = define("masked_fill(Tensor self, Tensor mask, Tensor value) -> Tensor",
                        meta=_masked_fill_meta,
                        derivative=Derivative(_masked_fill_backward, save=("mask",),
                                              diff=("self", "value"), complex_ok=True,
                                              name="MaskedFillBackward1"))
# torch's masked_fill.Scalar: the number (a 0-d tensor here, so kernels are shared) is no input
# of the node, which has one edge, self's (MaskedFillBackward0)
masked_fill_scalar_op = define(
    "masked_fill_scalar(Tensor self, Tensor mask, Tensor value) -> Tensor",
    meta=_masked_fill_meta, composite=lambda self, mask, value: masked_fill_op(self, mask, value),
    derivative=Derivative(_masked_fill_backward, save=("mask",), diff=("self",),
                          complex_ok=True, name="MaskedFillBackward0"),
    doc="masked_fill with a number: value is its 0-d tensor, which gets no gradient")
@masked_fill_op.def_onnx
@masked_fill_scalar_op.def_onnx
def _masked_fill_onnx(b, c, x, mask, value, *rest):
    return b.op("Where", [mask, value, x])


# in place: torch records masked_fill_ with its functional node (MaskedFillBackward0/1)
masked_fill__op = define(
    "masked_fill_(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
    meta=_meta.inplace("masked_fill_"), composite=_conv.written_back(masked_fill_op),
    functional=masked_fill_op)
masked_fill_scalar__op = define(
    "masked_fill_scalar_(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
    meta=_meta.inplace("masked_fill_scalar_"),
    composite=_conv.written_back(masked_fill_scalar_op), functional=masked_fill_scalar_op)
# no meta: the output's size depends on the mask's values
masked_select_op = define("masked_select(Tensor self, Tensor mask) -> Tensor",
                          derivative=Derivative(_masked_select_backward, save=("mask",),
                                                diff=("self",), complex_ok=True))


def _fill_args(input, mask, value):
    """(tensor value, whether it came as a number) after torch's checks."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        return value.to(device=input.device, dtype=input.dtype), False
    return _fac.tensor(value, dtype=input.dtype, device=input.device), True


@tensor_method()
def masked_fill(input, mask, value):
    value, number = _fill_args(input, mask, value)
    _broadcastable("masked_fill", input, mask)
    return (masked_fill_scalar_op if number else masked_fill_op)(input, mask, value)


def _broadcastable(op, input, mask):
    try:
        broadcast_shapes(input._shape, mask._shape)
    except RuntimeError as e:
        raise RuntimeError(f"{op}: {e} (input shape {list(input._shape)}, mask shape "
                           f"{list(mask._shape)})") from None


@tensor_method()
def masked_fill_(self, mask, value):
    value, number = _fill_args(self, mask, value)
    _broadcastable("masked_fill", self, mask)
    shape = broadcast_shapes(self._shape, mask._shape)
    if shape != self._shape:
        raise RuntimeError(f"masked_fill_: output with shape {list(self._shape)} doesn't match "
                           f"the broadcast shape {list(shape)}")
    return write_in_place(masked_fill_scalar__op if number else masked_fill__op, "masked_fill_",
                          self, mask, value)


@tensor_method()
def masked_select(input, mask, *, out=None):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    _broadcastable("masked_select", input, mask)
    r = masked_select_op(input, mask)
    return r if out is None else write_out(out, r, "masked_select")


def one_hot(tensor, num_classes=-1):
    if not isinstance(tensor, Tensor) or tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel():
        every = every_example(tensor)
        lo, hi = int(every.min().item()), int(every.max().item())
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError(f"one_hot: Class values must be smaller than num_classes ({num_classes}), "
                               f"got {hi}.")
    elif num_classes <= 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    classes = _fac.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


# -- ember.func ---------------------------------------------------------------------------------
def _masked_fill_batch_rule(args, bdims, layer):
    """A batched fill value (one per example) is a ``where``; otherwise elementwise."""
    self, mask, value = args
    if bdims[2] is None:
        return _elementwise_masked_fill(args, bdims, layer)
    size = _batching.batch_size_of(args, bdims, layer)
    rank = max(t.ndim - (d is not None) for t, d in zip(args, bdims))
    parts = [_batching.pad_logical(t, rank) if d is not None else t for t, d in zip(args, bdims)]
    x, m, v = parts
    out = _ew.where(m, v, x)
    target = (size,) + broadcast_shapes(self._shape[1:] if bdims[0] is not None else self._shape,
                                        mask._shape[1:] if bdims[1] is not None else mask._shape)
    return (out if out._shape == target else out.expand(*target)), 0


_elementwise_masked_fill = _batching.elementwise(masked_fill_op)
masked_fill_op.def_batch_rule(_masked_fill_batch_rule)
masked_fill_op.def_jvp(_tangents.linear(masked_fill_op, (0, 2)))
masked_select_op.def_jvp(_tangents.linear(masked_select_op))
