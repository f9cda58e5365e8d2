"""Kernels for ``ember.ops.ctc`` on array-module backends: the alpha and beta recursions in log
space, one vectorised step per time step over (batch, extended-target position); the gradient
log-sums ``alpha + beta`` per label with ``maximum.at`` and ``add.at`` (methods cupy has too)."""
from __future__ import annotations

import contextlib

from .binding import bind


def _extended(xp, targets, blank, s_max):
    """(N, 2S+1) blank-interleaved labels and the mask of positions that may skip from s-2."""
    n = targets.shape[0]
    ext = xp.full((n, 2 * s_max + 1), blank, dtype=xp.int64)
    ext[:, 1::2] = targets[:, :s_max]
    skip = xp.zeros(ext.shape, dtype=bool)
    if s_max > 1:
        skip[:, 3::2] = ext[:, 3::2] != ext[:, 1:-2:2]
    return ext, skip


def _lse(xp, *terms):
    m = terms[0]
    for t in terms[1:]:
        m = xp.maximum(m, t)
    safe = xp.where(xp.isinf(m), 0, m)
    total = sum(xp.exp(t - safe) for t in terms)
    with _quiet(xp):
        return xp.where(xp.isinf(m) & (m < 0), m, safe + xp.log(total))


def _quiet(xp):
    errstate = getattr(xp, "errstate", None)
    return errstate(all="ignore") if errstate is not None else contextlib.nullcontext()


def _shift(xp, a, k, fill):
    out = xp.full(a.shape, fill, dtype=a.dtype)
    if k < a.shape[-1]:
        out[..., k:] = a[..., :a.shape[-1] - k]
    return out


def _alpha(xp, lp, ext, skip, in_len, tg_len):
    t_max, n, _ = lp.shape
    width = ext.shape[1]
    neg = -xp.inf
    alpha = xp.full((n, t_max, width), neg, dtype=lp.dtype)
    rows = xp.arange(n)[:, None]
    valid = xp.arange(width)[None, :] < (2 * tg_len + 1)[:, None]
    if t_max == 0:
        return alpha
    emit0 = lp[0][rows, ext]
    first = xp.full((n, width), neg, dtype=lp.dtype)
    first[:, 0] = emit0[:, 0]
    if width > 1:
        first[:, 1] = xp.where(tg_len > 0, emit0[:, 1], neg)
    alpha[:, 0] = xp.where(valid, first, neg)
    for t in range(1, t_max):
        prev = alpha[:, t - 1]
        s1 = _shift(xp, prev, 1, neg)
        s2 = xp.where(skip, _shift(xp, prev, 2, neg), neg)
        step = _lse(xp, prev, s1, s2) + lp[t][rows, ext]
        live = (t < in_len)[:, None] & valid
        alpha[:, t] = xp.where(live, step, neg)
    return alpha


def _nll(xp, alpha, in_len, tg_len):
    n = alpha.shape[0]
    rows = xp.arange(n)
    last_t = xp.maximum(in_len - 1, 0)
    end = 2 * tg_len
    a_end = alpha[rows, last_t, end]
    a_prev = xp.where(tg_len > 0, alpha[rows, last_t, xp.maximum(end - 1, 0)], -xp.inf)
    ll = _lse(xp, a_end, a_prev)
    ll = xp.where(in_len > 0, ll, xp.where(tg_len == 0, 0.0, -xp.inf))
    return -ll


def ctc_loss(be, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    xp = be.xp
    lp = be.native(log_probs)
    tg = be.native(targets).astype(xp.int64)
    in_len = xp.asarray(input_lengths, dtype=xp.int64)
    tg_len = xp.asarray(target_lengths, dtype=xp.int64)
    ext, skip = _extended(xp, tg, blank, tg.shape[1])
    with _quiet(xp):
        alpha = _alpha(xp, lp, ext, skip, in_len, tg_len)
        nll = _nll(xp, alpha, in_len, tg_len)
    return (be.wrap(xp.ascontiguousarray(nll.astype(lp.dtype)), log_probs.device),
            be.wrap(alpha, log_probs.device))


def _beta(xp, lp, ext, skip, in_len, tg_len):
    t_max, n, _ = lp.shape
    width = ext.shape[1]
    neg = -xp.inf
    beta = xp.full((n, t_max, width), neg, dtype=lp.dtype)
    rows = xp.arange(n)
    pos = xp.arange(width)[None, :]
    end = (2 * tg_len)[:, None]
    valid = pos <= end
    # skipping forward from s to s+2 is allowed when s+2 may skip back to s
    skip_fwd = xp.zeros(skip.shape, dtype=bool)
    skip_fwd[:, :-2] = skip[:, 2:]
    for t in range(t_max - 1, -1, -1):
        emit = lp[t][rows[:, None], ext]
        at_last = (t == in_len - 1)[:, None]
        init = xp.where((pos == end) | ((pos == end - 1) & (end > 0)), emit, neg)
        if t + 1 < t_max:
            nxt = beta[:, t + 1]
            n1 = xp.full(nxt.shape, neg, dtype=nxt.dtype)
            n1[:, :-1] = nxt[:, 1:]
            n2 = xp.full(nxt.shape, neg, dtype=nxt.dtype)
            n2[:, :-2] = nxt[:, 2:]
            n2 = xp.where(skip_fwd, n2, neg)
            step = _lse(xp, nxt, n1, n2) + emit
        else:
            step = xp.full(init.shape, neg, dtype=init.dtype)
        cur = xp.where(at_last, init, step)
        beta[:, t] = xp.where(valid & (t < in_len)[:, None], cur, neg)
    return beta


def ctc_loss_backward(be, grad, log_probs, targets, input_lengths, target_lengths, nll,
                      log_alpha, blank, zero_infinity):
    xp = be.xp
    lp = be.native(log_probs)
    tg = be.native(targets).astype(xp.int64)
    in_len = xp.asarray(input_lengths, dtype=xp.int64)
    tg_len = xp.asarray(target_lengths, dtype=xp.int64)
    t_max, n, c = lp.shape
    g = be.native(grad)
    loss = be.native(nll)
    alpha = be.native(log_alpha)
    ext, skip = _extended(xp, tg, blank, tg.shape[1])
    with _quiet(xp):
        beta = _beta(xp, lp, ext, skip, in_len, tg_len)
        ab = alpha + beta                                    # (N, T, W)
        nn_ = xp.broadcast_to(xp.arange(n)[:, None, None], ab.shape)
        tt = xp.broadcast_to(xp.arange(t_max)[None, :, None], ab.shape)
        cc = xp.broadcast_to(ext[:, None, :], ab.shape)
        # log-sum-exp per label without logaddexp.at (cupy lacks it): the maximum per
        # (sequence, time, label), then the shifted exponentials summed into it
        top = xp.full((n, t_max, c), -xp.inf, dtype=lp.dtype)
        xp.maximum.at(top, (nn_, tt, cc), ab)
        shift = xp.where(xp.isinf(top), 0, top)
        total = xp.zeros((n, t_max, c), dtype=lp.dtype)
        be.add_at("ctc_loss_backward", total, (nn_, tt, cc), xp.exp(ab - shift[nn_, tt, cc]))
        lcab = xp.where(total > 0, xp.log(total) + shift, -xp.inf)
        lpt = lp.transpose(1, 0, 2)                          # (N, T, C)
        out = xp.exp(lpt) - xp.exp(lcab + loss[:, None, None] - lpt)
        out = out * g[:, None, None]
        live = xp.arange(t_max)[None, :] < in_len[:, None]
        out = xp.where(live[:, :, None], out, 0)
        if zero_infinity:
            out = xp.where(xp.isinf(loss)[:, None, None], 0, out)
    return be.wrap(xp.ascontiguousarray(out.transpose(1, 0, 2)).astype(lp.dtype),
                   log_probs.device)


TABLE = {"_ctc_loss": ctc_loss, "_ctc_loss_backward": ctc_loss_backward}


def register(backend) -> None:
    bind(backend, TABLE)
