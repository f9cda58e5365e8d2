"""``linear`` and ``bilinear`` of ``ember.nn.functional``: one ``addmm`` (2-D input with a
bias) or ``matmul`` per call; ``bilinear`` as two matmuls."""
from __future__ import annotations

from ..ops import linalg as _la
from ..ops._util import require_tensor, torch_function

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: one addmm for 2-D inputs, one matmul otherwise."""
    require_tensor(input, "linear")
    require_tensor(weight, "linear", "weight")
    if weight.ndim not in (1, 2):
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D, got shape {list(weight.shape)}")
    if input.ndim == 0:
        raise RuntimeError("linear(): input must have at least 1 dimension, got a 0-d tensor")
    if bias is not None:
        require_tensor(bias, "linear", "bias")
        out_f = weight._shape[0] if weight.ndim == 2 else 1
        if bias.ndim > 1 or bias.numel() not in (1, out_f):
            raise RuntimeError(f"linear(): bias of shape {list(bias.shape)} does not match "
                               f"weight of shape {list(weight.shape)} (expected [{out_f}])")
        if input.ndim == 2 and weight.ndim == 2:
            return _la.addmm(bias, input, weight.t())
    out = _la.matmul(input, weight.t() if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


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
