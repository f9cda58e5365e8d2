"""``squeeze`` and ``unsqueeze``: views that drop or add size-1 dims.

PyTorch records squeeze by the overload called — ``squeeze()`` as ``SqueezeBackward0``,
``squeeze(dim)`` as ``SqueezeBackward1``, ``squeeze(dims)`` as ``SqueezeBackward2`` — and
programs that walk ``grad_fn`` see those names, so each overload is its own op here. unsqueeze
has one overload and stays an ``as_strided`` (whose node is named ``UnsqueezeBackward0``).
"""
from __future__ import annotations

from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _tangents
from .._lowering import foldable
from .reshaping import _view_backward
from .strided import as_strided_op


def _squeezed(self, dims):
    """The view of ``self`` without those of ``dims`` (wrapped) that have size 1."""
    shape, stride = self._shape, self._stride
    keep = [i for i in range(len(shape)) if shape[i] != 1 or i not in dims]
    return self._view_of(tuple(shape[i] for i in keep), tuple(stride[i] for i in keep),
                         self._offset)


def _squeeze(self):
    return _squeezed(self, range(len(self._shape)))


def _squeeze_dim(self, dim):
    return _squeezed(self, (dim,))


# each gradient is the input's shape again: a view of a contiguous gradient (PyTorch's
# unsqueeze_to), a reshape of any other
squeeze_op = define("squeeze(Tensor self) -> Tensor", composite=_squeeze,
                    derivative=Derivative(_view_backward, view=True, complex_ok=True))
squeeze_dim_op = define("squeeze_dim(Tensor self, int dim) -> Tensor", composite=_squeeze_dim,
                        derivative=Derivative(_view_backward, view=True, complex_ok=True,
                                              name="SqueezeBackward1"))
squeeze_dims_op = define("squeeze_dims(Tensor self, int[] dim) -> Tensor", composite=_squeezed,
                         derivative=Derivative(_view_backward, view=True, complex_ok=True,
                                               name="SqueezeBackward2"))


def _squeeze_onnx(dims_of):
    """ONNX Squeeze of the size-1 dims among ``dims_of(ndim, *args)`` (sizes as captured)."""
    @foldable
    def rule(b, c, x, *args):
        shape = c.meta(0)[0]
        axes = [d for d in dims_of(len(shape), *args) if c.concrete(shape[d]) == 1]
        return b.op("Squeeze", [x, b.ints(axes)]) if axes else b.op("Identity", [x])
    return rule


squeeze_op.def_onnx(_squeeze_onnx(lambda n: range(n)))
squeeze_dim_op.def_onnx(_squeeze_onnx(lambda n, dim: (dim,) if n else ()))
squeeze_dims_op.def_onnx(_squeeze_onnx(lambda n, dims: dims if n else ()))


def _squeeze_batch_rule(args, bdims, layer):
    x = args[0]
    if bdims[0] is None:
        return squeeze_op(x), None
    # the batch dim stays even when the batch has one example
    return squeeze_dims_op(x, tuple(i for i in range(1, x.ndim) if x._shape[i] == 1)), 0


_squeeze_batch_rule.family = "view"
squeeze_op.def_batch_rule(_squeeze_batch_rule)
squeeze_dim_op.def_batch_rule(_batching.shift_dims(squeeze_dim_op, 1))
squeeze_dims_op.def_batch_rule(_batching.shift_dims(squeeze_dims_op, 1))
for _op in (squeeze_op, squeeze_dim_op, squeeze_dims_op):
    _op.def_jvp(_tangents.linear(_op))


def squeeze(input, dim=None):
    if dim is None:
        return squeeze_op(input)
    n = input.ndim
    if not isinstance(dim, (list, tuple)):
        return squeeze_dim_op(input, _wrap_dim(dim, n, "squeeze"))
    wrapped = [_wrap_dim(d, n, "squeeze") for d in dim]
    if len(set(wrapped)) != len(wrapped):
        repeated = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    return squeeze_dims_op(input, tuple(wrapped))


Tensor.squeeze = squeeze


def unsqueeze(input, dim):
    n = input.ndim
    d = _wrap_dim(dim, n + 1, "unsqueeze")
    shape, stride = list(input._shape), list(input._stride)
    new_stride = shape[d] * stride[d] if d < n else 1
    shape.insert(d, 1)
    stride.insert(d, new_stride)
    return as_strided_op(input, tuple(shape), tuple(stride), input._offset)


Tensor.unsqueeze = unsqueeze
