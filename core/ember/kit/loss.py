"""Kernels of ``nll_loss_forward`` / ``nll_loss_backward`` for array-module backends: one
fancy-index read (or write) of the target column of each row; the class-range check is a
``value_checks`` device assert."""
from __future__ import annotations

from .binding import bind
from .value_checks import first_failure


def _weights(be, self, target, weight, ignore_index):
    """(row indices, safe targets, per-row weights) after the class-range check (at once on
    host arrays, at the next synchronization on a device: ``value_checks``)."""
    xp = be.xp
    t = be.native(target)
    c = self.shape[1]
    keep = t != ignore_index
    bad = keep & ((t < 0) | (t >= c))
    first_failure(be, "nll_loss", bad, t, IndexError,
                  f"Target {{value}} is out of bounds. (nll_loss: {c} classes, "
                  f"ignore_index={ignore_index})")
    safe = xp.where(keep & ~bad, t, 0)
    dt = be.native(self).dtype
    w = keep.astype(dt)
    if weight is not None:
        w *= be.native(weight)[safe]
    return xp.arange(t.shape[0]), safe, w


def nll_loss_forward(be, self, target, weight, reduction, ignore_index):
    xp = be.xp
    x = be.native(self)
    rows, safe, w = _weights(be, self, target, weight, ignore_index)
    loss = -(x[rows, safe] * w)
    total = w.sum(dtype=x.dtype)
    if reduction == 1:
        loss = be.ieee(xp.true_divide, loss.sum(dtype=x.dtype), total)
    elif reduction == 2:
        loss = loss.sum(dtype=x.dtype)
    dev = self.device
    return (be.wrap(xp.asarray(loss, dtype=x.dtype), dev),
            be.wrap(xp.asarray(total, dtype=x.dtype), dev))


def nll_loss_backward(be, grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    xp = be.xp
    g = be.native(grad_output)
    dt = be.native(self).dtype
    rows, safe, w = _weights(be, self, target, weight, ignore_index)
    val = -w * g
    if reduction == 1:
        val = be.ieee(xp.true_divide, val, be.native(total_weight))
    out = xp.zeros(self.shape, dtype=dt)
    # ignored rows stay 0 (even over a 0 total), without boolean-mask indexing: its output
    # size is a host read on a device
    keep = be.native(target) != ignore_index
    out[rows, safe] = xp.where(keep, val, xp.zeros((), dtype=val.dtype))
    return be.wrap(out, self.device)


TABLE = {"nll_loss_forward": nll_loss_forward, "nll_loss_backward": nll_loss_backward}


def register(backend) -> None:
    bind(backend, TABLE)
