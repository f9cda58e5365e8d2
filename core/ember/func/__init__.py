"""``ember.func``: composable function transforms (``torch.func``, JAX's ideas).

``vmap`` vectorizes a function over a batch dimension, ``grad``/``vjp`` differentiate it in
reverse mode, ``jvp`` in forward mode, ``jacrev``/``jacfwd``/``hessian`` build Jacobians from
them, and ``functional_call``/``stack_module_state`` turn modules into functions of their state.
Transforms nest freely (``vmap(grad(f))``, ``jacfwd(jacrev(f))``, ``grad(grad(f))``).

vmap is a dispatch layer, not a loop: the ``BATCHED`` key's handler (``_handler.py``) runs each op's
batching rule (its ``batch_rule`` facet, written once per op family beside the defines) on the
physical batch. Forward-mode AD is the same handler at a tangent level, using each op's ``jvp``
facet. See docs/architecture.md, "ember.func".
"""
from __future__ import annotations

from . import _handler
from ._autodiff import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._handler import VmapFallbackWarning
from ._module import functional_call, replace_all_batch_norm_modules_, stack_module_state
from ._vmap import vmap

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "functional_call", "stack_module_state", "replace_all_batch_norm_modules_",
           "VmapFallbackWarning"]

_handler.register()
