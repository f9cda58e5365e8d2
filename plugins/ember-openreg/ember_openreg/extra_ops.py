"""An op this package ships: ``ember.ops.openreg.fused_bias_gelu(x, bias)``.

``gelu(x + bias)`` (tanh approximation) is the classic fusion: one pass over memory instead of
two, and no intermediate tensor. The op is *defined* for every device with a composite written in
ember ops, so it runs (and differentiates) on the CPU or any other backend; openreg adds a
native kernel for itself only. With autograd recording, the composite runs instead (its inner
ops record their gradients); under ``no_grad`` (inference) the fused kernel does.
"""
from __future__ import annotations

import math
from types import MethodType

import numpy as np

import ember
from ember.runtime import registry

_C = math.sqrt(2.0 / math.pi)


def _composite(x, bias):
    return ember.gelu(x + bias, approximate="tanh")


def _body(be, out, x, bias):
    o = be.native(out)
    np.add(be.native(x), be.native(bias), out=o)                 # one temporary-free pass:
    inner = o * o                                                # u = x + b
    np.multiply(inner, o, out=inner)                             # u^3
    inner *= 0.044715
    inner += o
    inner *= _C
    np.tanh(inner, out=inner)
    inner += 1.0
    np.multiply(o, inner, out=o)
    o *= 0.5                                                     # 0.5 u (1 + tanh(c(u + k u^3)))


def fused_bias_gelu(be, x, bias):
    """The host half: check, allocate, queue ``_body``."""
    if x.dtype is not bias.dtype or not x.is_floating_point():
        raise TypeError(f"openreg::fused_bias_gelu: expected floating tensors of one dtype, "
                        f"got {x.dtype} and {bias.dtype}")
    if bias.device is not x.device:
        raise RuntimeError(f"openreg::fused_bias_gelu: x is on {x.device} but bias is on "
                           f"{bias.device}")
    shape = tuple(np.broadcast_shapes(x.shape, bias.shape))
    if shape != tuple(x.shape):
        raise RuntimeError(f"openreg::fused_bias_gelu: bias of shape {list(bias.shape)} "
                           f"must broadcast to x's shape {list(x.shape)}")
    out = be.new_tensor(shape, x.dtype, x.device)
    be.launch(out.device, "openreg::fused_bias_gelu", _body, be, out, x, bias)
    return out


def register(library):
    library.define("openreg::fused_bias_gelu(Tensor self, Tensor bias) -> Tensor",
                   composite=_composite)
    # the backend this plugin just added (ember_register_ops runs right after
    # ember_register_backends, before the backend is handed out)
    backend = registry.loaded("openreg")
    library.impl("openreg::fused_bias_gelu", MethodType(fused_bias_gelu, backend), "openreg")
