"""Loss kernels for array-module backends.

``nll_loss_forward`` / ``nll_loss_backward``: one fancy-index read (or write) of the target
column of each row; the class-range check is a ``value_checks`` device assert. 2-D float
host arrays reduced by mean or sum take csrc/nll_loss.c (one pass, torch's cascade sums).

The regression losses (mse, smooth L1, Huber) and their backward ops: the same arithmetic as
their composites in ``ember.ops.nn.loss``, in one pass of array calls instead of eight
dispatched ops (half precision computed in float32 and rounded once, as torch's CPU kernels
do). ``reduction`` is 0/1/2 = none/mean/sum.
"""
from __future__ import annotations

from .._fastpath import C as _C
from .binding import bind
from .linalg import HALF
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


def _compiled_operands(be, self, target, weight):
    """(x, t, w) for csrc/nll_loss.c when the compiled module is there, else None."""
    if _C is None:
        return None
    return be.native(self), be.native(target), None if weight is None else be.native(weight)


def nll_loss_forward(be, self, target, weight, reduction, ignore_index):
    xp = be.xp
    ops = _compiled_operands(be, self, target, weight)
    if ops is not None:   # 2-D float host arrays, mean or sum: torch's cascade sums, one pass
        r = _C.nll_loss(*ops, reduction, ignore_index)
        if r is not None:
            return be.wrap(r[0], self.device), be.wrap(r[1], self.device)
    x = be.native(self)
    rows, safe, w = _weights(be, self, target, weight, ignore_index)
    loss = -(x[rows, safe] * w)
    # half precision sums in float32 and rounds once, as torch does: summed in bfloat16, 512
    # rows of ~6.3 stall at 2048 and their weights at 256 (a loss of 8.0 for 6.34)
    acc = xp.float32 if x.dtype in HALF else x.dtype
    total = w.sum(dtype=acc)
    if reduction == 1:
        loss = be.ieee(xp.true_divide, loss.sum(dtype=acc), total)
    elif reduction == 2:
        loss = loss.sum(dtype=acc)
    dev = self.device
    return (be.wrap(xp.asarray(loss, dtype=x.dtype), dev),
            be.wrap(xp.asarray(total, dtype=x.dtype), dev))


def nll_loss_backward(be, grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    xp = be.xp
    g = be.native(grad_output)
    ops = _compiled_operands(be, self, target, weight)
    if ops is not None:
        r = _C.nll_loss_backward(g, *ops, reduction, ignore_index, be.native(total_weight))
        if r is not None:
            return be.wrap(r, self.device)
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


# -- regression losses ---------------------------------------------------------------------------
def _difference(be, self, target):
    """(xp, result dtype, self - target in the dtype to compute in)."""
    xp = be.xp
    a, b = be.native(self), be.native(target)
    dt = a.dtype
    return xp, dt, xp.subtract(a, b, dtype=xp.float32 if dt in HALF else dt)


def _loss(be, xp, loss, dt, reduction, device):
    if reduction == 1:
        loss = loss.sum() / loss.size      # an empty mean is nan, as the composite's
    elif reduction == 2:
        loss = loss.sum()
    return be.wrap(xp.asarray(loss, dtype=dt, order="C"), device)


def _gradient(be, xp, slope, grad_output, dt, reduction, device):
    g = slope * be.native(grad_output)
    if reduction == 1:
        g /= slope.size
    return be.wrap(xp.asarray(g, dtype=dt, order="C"), device)


def mse_loss(be, self, target, reduction):
    xp, dt, d = _difference(be, self, target)
    with xp.errstate(all="ignore"):
        return _loss(be, xp, d * d, dt, reduction, self.device)


def mse_loss_backward(be, grad_output, self, target, reduction):
    xp, dt, d = _difference(be, self, target)
    with xp.errstate(all="ignore"):
        return _gradient(be, xp, 2 * d, grad_output, dt, reduction, self.device)


def smooth_l1_loss(be, self, target, reduction, beta):
    xp, dt, d = _difference(be, self, target)
    with xp.errstate(all="ignore"):
        z = xp.abs(d)
        return _loss(be, xp, xp.where(z < beta, 0.5 * d * d / beta, z - 0.5 * beta), dt,
                     reduction, self.device)


def smooth_l1_loss_backward(be, grad_output, self, target, reduction, beta):
    xp, dt, d = _difference(be, self, target)
    with xp.errstate(all="ignore"):
        return _gradient(be, xp, xp.clip(d / beta, -1.0, 1.0), grad_output, dt, reduction,
                         self.device)


def huber_loss(be, self, target, reduction, delta):
    xp, dt, d = _difference(be, self, target)
    with xp.errstate(all="ignore"):
        z = xp.abs(d)
        return _loss(be, xp, xp.where(z < delta, 0.5 * d * d, delta * (z - 0.5 * delta)), dt,
                     reduction, self.device)


def huber_loss_backward(be, grad_output, self, target, reduction, delta):
    xp, dt, d = _difference(be, self, target)
    with xp.errstate(all="ignore"):
        return _gradient(be, xp, xp.clip(d, -delta, delta), grad_output, dt, reduction,
                         self.device)


TABLE = {"nll_loss_forward": nll_loss_forward, "nll_loss_backward": nll_loss_backward,
         "mse_loss": mse_loss, "mse_loss_backward": mse_loss_backward,
         "smooth_l1_loss": smooth_l1_loss, "smooth_l1_loss_backward": smooth_l1_loss_backward,
         "huber_loss": huber_loss, "huber_loss_backward": huber_loss_backward}


def register(backend) -> None:
    bind(backend, TABLE)
