"""``ember.cond`` and ``ember.while_loop``: torch's control-flow operators, run eagerly (torch
captures them as higher-order ops under ``torch.compile``; ember's compiler traces the branch
taken)."""
from __future__ import annotations

from ._tensor import Tensor


def _truth(pred, op):
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"{op}: expected the predicate to be a bool or a one-element "
                               f"tensor, got a tensor of shape {list(pred.shape)}")
        return bool(pred.item())
    if not isinstance(pred, (bool, int)):
        raise RuntimeError(f"{op}: expected the predicate to be a bool or a one-element tensor, "
                           f"got {type(pred).__name__}")
    return bool(pred)


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``."""
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond: expected operands to be a tuple or list, got "
                           f"{type(operands).__name__}")
    return (true_fn if _truth(pred, "cond") else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Apply ``body_fn`` to the carried values while ``cond_fn`` of them holds; the final
    values (a tuple, as torch's)."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"while_loop: expected carried_inputs to be a tuple or list, got "
                           f"{type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    while _truth(cond_fn(*carried), "while_loop"):
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return carried
