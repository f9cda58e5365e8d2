"""``ember.autograd``: reverse-mode automatic differentiation as a dispatch layer.

Setting ``requires_grad`` puts the ``AUTOGRAD`` key in a tensor's key set; ops on such tensors
reach the handler in ``record.py``, which runs the op below itself and records a node whose
backward is the op's derivative formula, written in ember ops beside the op's define. Grad modes take the
key out of dispatch per thread. ``engine.py`` runs the recorded graph.
"""
from __future__ import annotations

from ..dispatch import keys as _keys
from ..dispatch.dispatcher import register_functionality as _register
from ..dispatch.facets import CustomDerivative as _CustomDerivative
from . import forward_ad, function, functional, grad_mode, graph, inference, record, tensor_api
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, \
    set_detect_anomaly
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node
from .variable import Variable
from .threading_mode import is_multithreading_enabled, set_multithreading_enabled

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "gradcheck", "gradgradcheck",
           "GradcheckError", "Node", "graph", "forward_ad", "functional", "Variable",
           "is_multithreading_enabled", "set_multithreading_enabled"]

def _make_handler(op, bit):
    # ops with a formula record through record.py; custom ops (ember.library's
    # register_autograd) through function.py's machinery, as a custom Function does
    if op.derivative.__class__ is _CustomDerivative:
        return function.custom_op_handler(op)
    return record.make_handler(op, bit)


tensor_api.attach_all()
_register(_keys.AUTOGRAD, _make_handler)
# ``ember.autograd.profiler`` (torch.autograd.profiler) is the profiler's legacy face; it is
# imported with ``ember.profiler``, a layer above autograd, by ``ember/__init__``.


def variable(*args, **kwargs):
    """torch keeps ``torch.autograd.variable`` as a function that only says what replaced it
    (the ``variable`` submodule stays importable by its dotted name)."""
    raise RuntimeError("ember.autograd.variable(...) is deprecated, use ember.tensor(...) "
                       "instead")
