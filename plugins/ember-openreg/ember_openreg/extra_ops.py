"""An op this package ships: ``ember.ops.openreg.fused_bias_gelu(x, bias)``.

``gelu(x + bias)`` (tanh approximation) is the classic fusion: one pass over memory instead of
two, and no intermediate tensor. The op is *defined* for every device with a composite written in
ember ops, so it runs (and differentiates) on the CPU or any other backend; openreg adds a
native kernel for itself only. With autograd recording, the composite runs instead (its inner
ops record their gradients); under ``no_grad`` (inference) the fused kernel does.
"""
from __future__ import annotations

import math

import numpy as np

_C = math.sqrt(2.0 / math.pi)


def _composite(x, bias):
    import ember
    return ember.gelu(x + bias, approximate="tanh")


def register(library):
    library.define("openreg::fused_bias_gelu(Tensor self, Tensor bias) -> Tensor",
                   composite=_composite)

    from ember.runtime.registry import registry
    backend = registry._backends["openreg"]

    def body(out, x, bias):
        o = backend.native(out)
        np.add(backend.native(x), backend.native(bias), out=o)   # one temporary-free pass:
        inner = o * o                                            # u = x + b
        np.multiply(inner, o, out=inner)                         # u^3
        inner *= 0.044715
        inner += o
        inner *= _C
        np.tanh(inner, out=inner)
        inner += 1.0
        np.multiply(o, inner, out=o)
        o *= 0.5                                                 # 0.5 u (1 + tanh(c(u + k u^3)))

    def kernel(x, bias):
        if x.dtype is not bias.dtype or not x.is_floating_point():
            raise TypeError(f"openreg::fused_bias_gelu: expected floating tensors of one dtype, "
                            f"got {x.dtype} and {bias.dtype}")
        if bias.device is not x.device:
            raise RuntimeError(f"openreg::fused_bias_gelu: x is on {x.device} but bias is on "
                               f"{bias.device}")
        shape = tuple(np.broadcast_shapes(x._shape, bias._shape))
        if shape != x._shape:
            raise RuntimeError(f"openreg::fused_bias_gelu: bias of shape {list(bias._shape)} "
                               f"must broadcast to x's shape {list(x._shape)}")
        out = backend.new_tensor(shape, x.dtype, x.device)
        backend.launch(out.device, "openreg::fused_bias_gelu", body, out, x, bias)
        return out

    library.impl("openreg::fused_bias_gelu", kernel, "openreg")
