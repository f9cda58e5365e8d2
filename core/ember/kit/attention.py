"""Fused scaled dot-product attention for array-module backends: a blocked, flash-attention
style forward and backward (``ember.ops.attention`` gives the calling convention).

Scores exist one tile at a time: a block of queries x a block of keys, for a group of heads
at once (so each array-module call does real work), with the group sized so that the tiles of
the group stay under ``TILE_BUDGET`` elements. The forward keeps a running maximum, sum and
output per query row (online softmax) and returns the rows' log-sum-exp; the backward walks key
blocks, recomputes each tile's probabilities as ``exp(s - lse)`` and accumulates the gradients
of query, key and value, with ``rowsum(grad_out * out)`` as the softmax correction. Memory
beyond the inputs and outputs: a few tiles and O(L) per head. Half-precision inputs are
computed in float32. A causal mask skips the key blocks above the diagonal.

Kernels are module-level functions of ``(backend, *op arguments)``; ``register`` binds them.
"""
from __future__ import annotations

import functools

from .linalg import HALF

Q_BLOCK = 256          # queries per tile
K_BLOCK = 512          # keys per tile
TILE_BUDGET = 1 << 22  # score elements held at once over all heads of a group (16 MB float32)


def _work_dtype(xp, dt):
    return xp.dtype(xp.float32) if dt in HALF else dt


def _operand(xp, a, wt):
    """``a`` in the work dtype with a unit stride in its last dim (what BLAS reads directly)."""
    if a.dtype != wt:
        return a.astype(wt)
    if a.ndim and a.shape[-1] > 1 and a.strides[-1] != a.itemsize:
        return xp.ascontiguousarray(a)
    return a


def _grouped(a, groups):
    """(B, H, n, d) -> (B, H // groups, groups, n, d): a view, whatever the strides."""
    B, H, n, d = a.shape
    return a.reshape(B, H // groups, groups, n, d)


def _head_chunks(B, Hkv, per_kv_head, budget=TILE_BUDGET):
    """(batch slice, kv-head slice) pairs covering (B, Hkv), each holding at most ``budget``
    tile elements (at least one kv head)."""
    if B * Hkv * per_kv_head <= budget:
        yield slice(0, B), slice(0, Hkv)
        return
    step = max(1, budget // per_kv_head)
    for b in range(B):
        for h in range(0, Hkv, step):
            yield slice(b, b + 1), slice(h, min(Hkv, h + step))


def _mask_tile(xp, s, mask, i0, i1, j0, j1, is_causal):
    """Apply the user's mask and the causal mask to the score tile ``s`` (in place)."""
    if mask is not None:
        m = mask[..., i0:i1, j0:j1]
        if m.dtype == bool:
            xp.copyto(s, -xp.inf, where=xp.logical_not(m))
        else:
            s += m
    if is_causal and j1 - 1 > i0:  # the tile reaches above the diagonal
        rows = xp.arange(i0, i1)[:, None]
        cols = xp.arange(j0, j1)[None, :]
        xp.copyto(s, -xp.inf, where=cols > rows)


def _key_end(S, i1, is_causal):
    """Keys a query block [i0, i1) can see: all, or j < i1 when causal (top-left aligned)."""
    return min(S, i1) if is_causal else S


def sdpa_fused_forward(backend, query, key, value, attn_mask, is_causal, scale):
    xp = backend.xp
    qn = backend.native(query)
    dt = qn.dtype
    wt = _work_dtype(xp, dt)
    q, k, v = (_operand(xp, backend.native(t), wt) for t in (query, key, value))
    B, Hq, L, E = q.shape
    Hkv, S, Ev = k.shape[1], k.shape[2], v.shape[3]
    out = xp.zeros((B, Hq, L, Ev), dtype=wt)
    lse = xp.full((B, Hq, L), -xp.inf, dtype=wt)
    if out.size and S:
        G = Hq // Hkv
        q5, k5, v5 = _grouped(q, G), _grouped(k, 1), _grouped(v, 1)
        mask = None if attn_mask is None else _grouped(backend.native(attn_mask), G)
        if mask is not None and mask.dtype != bool and mask.dtype != wt:
            mask = mask.astype(wt)
        out5, lse5 = _grouped(out, G), lse.reshape(B, Hkv, G, L)
        bq, bk = min(L, Q_BLOCK), min(S, K_BLOCK)
        with xp.errstate(all="ignore"):
            for bs, hs in _head_chunks(B, Hkv, G * bq * bk):
                _forward_chunk(xp, q5[bs, hs], k5[bs, hs], v5[bs, hs],
                               None if mask is None else mask[bs, hs], out5[bs, hs],
                               lse5[bs, hs], is_causal, scale, bq, bk)
    lse_dt = xp.float64 if dt == xp.float64 else xp.float32
    return (backend.wrap(out.astype(dt, copy=False), query.device),
            backend.wrap(lse.astype(lse_dt, copy=False), query.device))


def _forward_chunk(xp, q, k, v, mask, out, lse, is_causal, scale, bq, bk):
    L, S = q.shape[-2], k.shape[-2]
    for i0 in range(0, L, bq):
        i1 = min(L, i0 + bq)
        qi = q[..., i0:i1, :]
        m = l = acc = None
        for j0 in range(0, _key_end(S, i1, is_causal), bk):
            j1 = min(S, j0 + bk)
            s = xp.matmul(qi, k[..., j0:j1, :].swapaxes(-1, -2))
            s *= scale
            _mask_tile(xp, s, mask, i0, i1, j0, j1, is_causal)
            tile_max = s.max(-1, keepdims=True)
            m_new = tile_max if m is None else xp.maximum(m, tile_max)
            # rows that no key has taken part in yet shift by 0, so exp gives 0, not NaN
            shift = xp.where(m_new == -xp.inf, 0, m_new)
            s -= shift
            p = xp.exp(s, out=s)
            pv = xp.matmul(p, v[..., j0:j1, :])
            if m is None:
                l, acc = p.sum(-1, keepdims=True), pv
            else:
                corr = xp.exp(m - shift)
                l *= corr
                l += p.sum(-1, keepdims=True)
                acc *= corr
                acc += pv
            m = m_new
        if m is None:  # no key visible (S == 0 is handled by the caller)
            continue
        seen = l > 0  # False where every key was masked out: output 0, lse -inf
        xp.divide(acc, l, out=out[..., i0:i1, :], where=seen)
        row_lse = xp.where(m == -xp.inf, 0, m) + xp.log(xp.where(seen, l, 1))
        lse[..., i0:i1] = xp.where(seen, row_lse, -xp.inf)[..., 0]


def sdpa_fused_backward(backend, grad_out, query, key, value, attn_mask, out, logsumexp,
                        is_causal, scale):
    xp = backend.xp
    dt = backend.native(query).dtype
    wt = _work_dtype(xp, dt)
    do, q, k, v, o = (_operand(xp, backend.native(t), wt)
                      for t in (grad_out, query, key, value, out))
    B, Hq, L, E = q.shape
    Hkv, S, Ev = k.shape[1], k.shape[2], v.shape[3]
    G = Hq // Hkv if Hkv else 1
    dq = xp.zeros((B, Hq, L, E), dtype=wt)
    dk = xp.zeros((B, Hkv, S, E), dtype=wt)
    dv = xp.zeros((B, Hkv, S, Ev), dtype=wt)
    if dq.size + dv.size and L and S:
        lse = backend.native(logsumexp).astype(wt, copy=False)
        # a row no key took part in has lse = -inf and p = 0: exp(s - inf) gives exactly that
        lse = xp.where(lse == -xp.inf, xp.inf, lse)
        delta = xp.einsum("bhld,bhld->bhl", do, o)  # rowsum(grad_out * out)
        mask = None if attn_mask is None else _grouped(backend.native(attn_mask), G)
        if mask is not None and mask.dtype != bool and mask.dtype != wt:
            mask = mask.astype(wt)
        g5 = [_grouped(a, G) for a in (q, do, dq)]
        l5 = [a.reshape(B, Hkv, G, L, 1) for a in (lse, delta)]
        kv5 = [_grouped(a, 1) for a in (k, v, dk, dv)]
        bq, bk = min(L, Q_BLOCK), min(S, K_BLOCK)
        with xp.errstate(all="ignore"):
            for bs, hs in _head_chunks(B, Hkv, G * bq * bk):
                q5, do5, dq5 = (a[bs, hs] for a in g5)
                lse5, delta5 = (a[bs, hs] for a in l5)
                k5, v5, dk5, dv5 = (a[bs, hs] for a in kv5)
                _backward_chunk(xp, q5, k5, v5, do5, lse5, delta5,
                                None if mask is None else mask[bs, hs], dq5, dk5, dv5,
                                is_causal, scale, bq, bk)
    dev = query.device
    return tuple(backend.wrap(a.astype(dt, copy=False), dev) for a in (dq, dk, dv))


def _backward_chunk(xp, q, k, v, do, lse, delta, mask, dq, dk, dv, is_causal, scale, bq, bk):
    L, S = q.shape[-2], k.shape[-2]
    for j0 in range(0, S, bk):
        j1 = min(S, j0 + bk)
        kj, vj = k[..., j0:j1, :], v[..., j0:j1, :]
        # causal: only queries i >= j0 see a key of this block
        for i0 in range((j0 // bq) * bq if is_causal else 0, L, bq):
            i1 = min(L, i0 + bq)
            qi, doi = q[..., i0:i1, :], do[..., i0:i1, :]
            s = xp.matmul(qi, kj.swapaxes(-1, -2))
            s *= scale
            _mask_tile(xp, s, mask, i0, i1, j0, j1, is_causal)
            s -= lse[..., i0:i1, :]
            p = xp.exp(s, out=s)
            dv[..., j0:j1, :] += _sum_groups(xp.matmul(p.swapaxes(-1, -2), doi))
            ds = xp.matmul(doi, vj.swapaxes(-1, -2))
            ds -= delta[..., i0:i1, :]
            ds *= p
            ds *= scale
            dq[..., i0:i1, :] += xp.matmul(ds, kj)
            dk[..., j0:j1, :] += _sum_groups(xp.matmul(ds.swapaxes(-1, -2), qi))


def _sum_groups(x):
    """Sum the query heads of each group (axis 2) into their key/value head."""
    return x if x.shape[2] == 1 else x.sum(2, keepdims=True)


KERNELS = {
    "_scaled_dot_product_fused_attention": sdpa_fused_forward,
    "_scaled_dot_product_fused_attention_backward": sdpa_fused_backward,
}


def register(backend):
    for name, kernel in KERNELS.items():
        backend.kernels.register(name, functools.partial(kernel, backend))
