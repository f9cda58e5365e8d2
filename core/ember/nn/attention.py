"""``ember.nn.attention``: which implementation ``F.scaled_dot_product_attention`` uses.

``SDPBackend`` has torch's members. On ember's devices two of them exist:

* ``MATH`` — the math path (matmul, softmax, dropout, matmul), differentiable to any order and
  in a float mask; every backend runs it.
* ``FLASH_ATTENTION`` — the fused, tiled kernels a backend registers for
  ``_scaled_dot_product_fused_attention`` (and its backward): the CPU's blocked numpy kernel,
  OpenCL's flash-attention kernel. They hold one tile of scores at a time, have no dropout and
  give no gradient to the mask, so calls that need those take the math path.

``EFFICIENT_ATTENTION``, ``CUDNN_ATTENTION`` and ``OVERRIDEABLE`` may be enabled but have no
implementation here. With every backend enabled (the default) a call uses the first usable one
in priority order (FLASH_ATTENTION, EFFICIENT_ATTENTION, MATH, ...). ``sdpa_kernel`` enables
only the backends it is given (and with ``set_priority=True`` orders them) for the duration of
a ``with`` block; as in torch the setting is process-wide. When none of the enabled backends
can run a call, each says why in a warning and the call raises ``RuntimeError: No available
kernel. Aborting execution.``

``last_sdpa_backend()`` tells which backend the last call (in any thread) ran;
``sdpa_backend_for(query, key, value, ...)`` which one a call would run now.
"""
from __future__ import annotations

import contextlib

from ..ops import attention as _attention
from ..ops.attention import SDPBackend

__all__ = ["SDPBackend", "sdpa_kernel", "last_sdpa_backend", "sdpa_backend_for"]


def _current(with_priority):
    sel = _attention.selection
    enabled = [b for b in sel.priority if b in sel.enabled]
    return enabled if with_priority else sorted(enabled, key=int)


def _set(backends, set_priority):
    sel = _attention.selection
    sel.enabled = frozenset(backends)
    if set_priority:
        sel.priority = tuple(backends) + tuple(b for b in sel.priority if b not in backends)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Enable only ``backends`` (an SDPBackend or a list of them) for scaled dot-product
    attention inside the block; with ``set_priority`` their order is the priority order. The
    previous setting comes back on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise AssertionError(f"Backend must be an instance of SDPBackend or a list of "
                                 f"SDPBackend instances, got a list holding {type(b).__name__}")
    backends = list(dict.fromkeys(backends))
    sel = _attention.selection
    previous = (sel.enabled, sel.priority)
    try:
        _set(backends, set_priority)
        yield {}
    finally:
        sel.enabled, sel.priority = previous


def last_sdpa_backend():
    """The SDPBackend the last scaled_dot_product_attention call ran (None before any)."""
    return _attention.selection.last


def sdpa_backend_for(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                     scale=None, enable_gqa=False):
    """The SDPBackend ``F.scaled_dot_product_attention`` would run for these arguments under the
    current ``sdpa_kernel`` setting; RuntimeError when none can."""
    _attention._check_args(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    return _attention.select_backend(query, key, value, attn_mask, float(dropout_p),
                                     bool(enable_gqa))
