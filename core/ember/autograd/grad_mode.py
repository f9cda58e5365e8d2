"""``ember.autograd.grad_mode`` (PyTorch's path): ``no_grad``, ``enable_grad``,
``set_grad_enabled``, ``inference_mode``. They switch the Autograd dispatch key per thread, so
they live with the dispatcher (``ember.dispatch.grad_mode``), below the op families that use
them; this module is their public address."""
from ..dispatch.grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                                  is_inference_mode_enabled, no_grad, set_grad_enabled)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]
