"""``linear`` and ``bilinear`` of ``ember.nn.functional``. ``linear`` takes PyTorch's paths
(Linear.cpp), so a program sees torch's graph: one ``addmm`` for a 2-D input with a bias; a
contiguous input of any other rank with a row-like bias flattened to rows around one ``addmm``;
otherwise ``matmul`` with ``weight.t()`` and the bias added after. Without a recorded graph,
``matmul`` and one add. ``bilinear`` as two matmuls."""
from __future__ import annotations

import math

from .. import _dtype
from ..ops import _grad
from ..ops import linalg as _la
from ..ops import views as _views
from ..ops._util import require_tensor, torch_function

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    require_tensor(input, "linear")
    require_tensor(weight, "linear", "weight")
    n, n_weight = len(input._shape), len(weight._shape)
    if n == 0 or n_weight == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {n}D "
                           f"and {n_weight}D")
    weight_t = _views.t_op(weight) if n_weight <= 2 else weight.t()   # .t() raises torch's error
    if bias is not None:
        require_tensor(bias, "linear", "bias")
        if n == 2:
            return _addmm(bias, input, weight_t)
        if _la.records_graph(input._ks | weight._ks | bias._ks) and _row_like(bias) and \
                input.is_contiguous():
            return _flatten_nd_linear(input, weight_t, bias)
        # unrecorded, the folded addmm and a product with the bias added are the same numbers
    out = _la.matmul(input, weight_t)
    if bias is None:
        return out
    if bias.dtype is out.dtype and _grad.expandable(bias._shape, out._shape):
        # torch adds the bias in place (out.add_(bias)) to a product no one else holds: out of
        # place is the same numbers and the same AddBackward0 node, and graph captures (ONNX
        # export) and vmapped or dual biases need no in-place op
        return out + bias
    if _row_like(bias) and input.is_contiguous():
        return _flatten_nd_linear(input, weight_t, bias)   # torch's path, and its error
    return out.add_(bias)   # in-place semantics: out keeps its dtype and shape, or it raises


def _row_like(bias):
    """torch's "bias likely fusable": one row (a 1-D bias, or one after squeezing) laid out
    contiguously, which addmm adds to every row of the flattened input."""
    shape = bias._shape
    if len(shape) != 1 and sum(s != 1 for s in shape) != 1:
        return False
    return bias.is_contiguous()


def _flatten_nd_linear(input, weight_t, bias):
    """All but the last dim folded into rows (a view: the input is contiguous), one addmm, and
    the rows viewed back."""
    sizes = input._shape
    rows = _views.view_op(input, (math.prod(sizes[:-1]), sizes[-1]))
    out = _addmm(bias, rows, weight_t)
    return _views.view_op(out, sizes[:-1] + out._shape[1:])


def _addmm(bias, rows, weight_t):
    """addmm(bias, rows, weight_t); when the operands are plainly right (one dtype that is not
    bool, matching inner sizes, a bias that broadcasts to the result) without addmm's checks,
    which raise torch's errors for the rest."""
    d = rows.dtype
    if d is weight_t.dtype and d is bias.dtype and d is not _dtype.bool_ and \
            len(rows._shape) == 2 and len(weight_t._shape) == 2 and \
            rows._shape[1] == weight_t._shape[0] and \
            _grad.expandable(bias._shape, (rows._shape[0], weight_t._shape[1])):
        return _la.addmm_op(bias, rows, weight_t, 1, 1)
    return _la.addmm(bias, rows, weight_t)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]``."""
    require_tensor(input1, "bilinear", "input1")
    require_tensor(input2, "bilinear", "input2")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got shape "
                           f"{list(weight.shape)}")
    o, i, j = weight._shape
    if input1._shape[-1:] != (i,) or input2._shape[-1:] != (j,) or \
            input1._shape[:-1] != input2._shape[:-1]:
        raise RuntimeError(f"bilinear(): input1 {list(input1.shape)} and input2 "
                           f"{list(input2.shape)} must agree on leading dims and end in {i} and "
                           f"{j} (weight shape {list(weight.shape)})")
    # x1 @ W viewed as (i, o*j), then contract j against x2: two matmuls, no einsum
    w = weight.permute(1, 0, 2).reshape(i, o * j)
    t = _la.matmul(input1, w).reshape(*input1._shape[:-1], o, j)
    out = _la.matmul(t, input2.unsqueeze(-1)).squeeze(-1)
    return out if bias is None else out + bias
torch_function("bilinear")(bilinear)
