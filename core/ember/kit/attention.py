"""Fused scaled dot-product attention for array-module backends: a blocked, flash-attention
style forward and backward (``ember.ops.attention`` gives the calling convention).

Scores exist one tile at a time: a block of queries x a block of keys, for a group of heads
at once (so each array-module call does real work). The heads are split into chunks whose tiles
together stay under ``TILE_BUDGET`` elements; with numpy the chunks run on ``threads()``
worker threads (numpy releases the GIL in BLAS and ufuncs), with BLAS held to one thread
meanwhile: many small products are faster side by side than each split over threads, and
oversubscribed spinning BLAS threads are very slow on a loaded machine. A device backend (values
not on the host) takes whole-sequence tiles instead, as many heads at once as
``DEVICE_TILE_BUDGET`` allows: there a launch costs more than the memory.

The forward keeps a running maximum, sum and output per query row (online softmax) and returns
the rows' log-sum-exp; the backward walks key blocks, recomputes each tile's probabilities as
``exp(s - lse)`` and accumulates the gradients of query, key and value, with ``rowsum(grad_out
* out)`` as the softmax correction. Memory beyond the inputs and outputs: a few tiles per chunk
and O(L) per head. Half-precision inputs are computed in float32. A causal mask skips the key
blocks above the diagonal.

Kernels are module-level functions of ``(backend, *op arguments)``; ``register`` binds them.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
import numpy

from .._threads import get_num_threads
from .binding import bind
from .linalg import HALF

Q_BLOCK = 256          # queries per tile
K_BLOCK = 512          # keys per tile
TILE_BUDGET = 1 << 22  # score elements held at once by all chunks together (16 MB float32)
CHUNK_TILE = 1 << 18   # score elements per chunk: its tiles stay in a core's cache (1 MB)
THREADS = None         # worker threads for numpy (None: ember.get_num_threads(), at most 8)
#: score elements a device backend holds at once (256 MB float32): its tiles span the whole
#: sequence, since there a kernel launch costs more than the memory (the cache-sized numpy
#: tiles took 2,000 launches for one small GPT step on an H200)
DEVICE_TILE_BUDGET = 1 << 26

_pool = None
_pool_lock = threading.Lock()


def threads():
    # intra-op parallelism, as every other CPU kernel: set_num_threads(1) means one thread
    if THREADS is not None:
        return max(1, THREADS)
    return max(1, min(8, get_num_threads()))


def _executor(n):
    """The worker pool (made again in a forked child, whose copy has no threads)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid() or _pool[1]._max_workers < n:
            _pool = (os.getpid(), ThreadPoolExecutor(n, thread_name_prefix="ember-attention"))
        return _pool[1]


class _OneBlasThread:
    """Holds BLAS to one thread (threadpoolctl) while any attention kernel runs. The setting
    is process-wide, so kernels running at once in several threads share one hold: the first
    takes it, the last gives the previous setting back."""

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._limit = None
        self._controller = None

    def __enter__(self):
        with self._lock:
            if self._controller is None:
                try:
                    # start-up: threadpoolctl, first use only
                    from threadpoolctl import ThreadpoolController
                    self._controller = ThreadpoolController()
                except ImportError:
                    self._controller = False
            if self._controller and self._users == 0:
                self._limit = self._controller.limit(limits=1, user_api="blas")
            self._users += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._limit is not None:
                self._limit.restore_original_limits()
                self._limit = None
        return False


_one_blas_thread = _OneBlasThread()


def _run(xp, work, chunks):
    """``work(bs, hs)`` for every chunk: on worker threads for numpy, else in turn."""
    chunks = list(chunks)
    if xp is not numpy:
        for c in chunks:
            work(*c)
        return
    n = min(threads(), len(chunks))
    with xp.errstate(all="ignore"), _one_blas_thread:
        if n <= 1:
            for c in chunks:
                work(*c)
            return
        for f in [_executor(n).submit(_quiet, work, *c) for c in chunks]:
            f.result()


def _quiet(work, *chunk):
    with numpy.errstate(all="ignore"):  # errstate is per thread
        work(*chunk)


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


def _tiling(backend, B, Hkv, G, L, S):
    """(queries per tile, keys per tile, head chunks): cache-sized tiles on ``threads()``
    for host arrays, whole-sequence tiles in as few chunks as ``DEVICE_TILE_BUDGET`` allows
    for a device."""
    if backend.values_on_host:
        bq, bk = min(L, Q_BLOCK), min(S, K_BLOCK)
        return bq, bk, _head_chunks(B, Hkv, G * bq * bk, threads())
    bq = max(1, min(L, DEVICE_TILE_BUDGET // max(1, G * S)))
    return bq, S, _head_chunks(B, Hkv, G * bq * S, 1, DEVICE_TILE_BUDGET, DEVICE_TILE_BUDGET)


def _head_chunks(B, Hkv, per_kv_head, parts, chunk_tile=None, budget=None):
    """(batch slice, kv-head slice) pairs covering (B, Hkv): at least ``parts`` of them when
    there are enough heads, each holding at most ``chunk_tile`` and ``budget / parts``
    tile elements (and at least one kv head); ``CHUNK_TILE`` and ``TILE_BUDGET`` by default."""
    chunk_tile = CHUNK_TILE if chunk_tile is None else chunk_tile
    budget = TILE_BUDGET if budget is None else budget
    cap = max(1, min(chunk_tile, budget // max(1, parts)) // max(1, per_kv_head))
    cap = min(cap, max(1, -(-(B * Hkv) // max(1, parts))))
    if cap >= Hkv:
        nb = cap // Hkv
        for b in range(0, B, nb):
            yield slice(b, min(B, b + nb)), slice(0, Hkv)
        return
    for b in range(B):
        for h in range(0, Hkv, cap):
            yield slice(b, b + 1), slice(h, min(Hkv, h + cap))


def _mask_tile(xp, s, mask, i0, i1, j0, j1, is_causal):
    """Apply the user's mask and the causal mask to the score tile ``s`` (in place). Tiles are
    held transposed, keys down and queries across: reductions over a query's keys then run
    down the rows, which numpy vectorizes (a reduction along short contiguous rows does not)."""
    if mask is not None:
        m = mask[..., i0:i1, j0:j1].swapaxes(-1, -2)
        if m.dtype == bool:
            xp.copyto(s, -xp.inf, where=xp.logical_not(m))
        else:
            s += m
    if is_causal and j1 - 1 > i0:  # the tile reaches above the diagonal
        keys = xp.arange(j0, j1)[:, None]
        queries = xp.arange(i0, i1)[None, :]
        xp.copyto(s, -xp.inf, where=keys > queries)


def _key_end(S, i1, is_causal):
    """Keys a query block [i0, i1) can see: all, or j < i1 when causal (top-left aligned)."""
    return min(S, i1) if is_causal else S


def _mask_view(xp, backend, attn_mask, groups, wt):
    if attn_mask is None:
        return None
    m = _grouped(backend.native(attn_mask), groups)
    return m if m.dtype == bool or m.dtype == wt else m.astype(wt)


def sdpa_fused_forward(backend, query, key, value, attn_mask, is_causal, scale):
    xp = backend.xp
    dt = backend.native(query).dtype
    wt = _work_dtype(xp, dt)
    q, k, v = (_operand(xp, backend.native(t), wt) for t in (query, key, value))
    B, Hq, L, E = q.shape
    Hkv, S, Ev = k.shape[1], k.shape[2], v.shape[3]
    out = xp.zeros((B, Hq, L, Ev), dtype=wt)
    lse = xp.full((B, Hq, L), -xp.inf, dtype=wt)
    if out.size and S:
        G = Hq // Hkv
        q5, k5, v5 = _grouped(q, G), _grouped(k, 1), _grouped(v, 1)
        mask = _mask_view(xp, backend, attn_mask, G, wt)
        out5, lse5 = _grouped(out, G), lse.reshape(B, Hkv, G, 1, L)
        bq, bk, chunks = _tiling(backend, B, Hkv, G, L, S)

        def work(bs, hs):
            _forward_chunk(xp, q5[bs, hs], k5[bs, hs], v5[bs, hs],
                           None if mask is None else mask[bs, hs], out5[bs, hs], lse5[bs, hs],
                           is_causal, scale, bq, bk)
        _run(xp, work, chunks)
    lse_dt = xp.float64 if dt == xp.float64 else xp.float32
    return (backend.wrap(out.astype(dt, copy=False), query.device),
            backend.wrap(lse.astype(lse_dt, copy=False), query.device))


def _forward_chunk(xp, q, k, v, mask, out, lse, is_causal, scale, bq, bk):
    L, S = q.shape[-2], k.shape[-2]
    ones = xp.ones((1, bk), dtype=q.dtype)  # row sums as a product: cheaper than a reduction
    for i0 in range(0, L, bq):
        i1 = min(L, i0 + bq)
        qt = q[..., i0:i1, :].swapaxes(-1, -2)
        m = l = acc = None
        end = _key_end(S, i1, is_causal)
        for j0 in range(0, end, bk):
            j1 = min(end, j0 + bk)  # causal: no tile reaches past the block's last query
            s = xp.matmul(k[..., j0:j1, :], qt)  # (keys, queries)
            s *= scale
            _mask_tile(xp, s, mask, i0, i1, j0, j1, is_causal)
            tile_max = s.max(-2, keepdims=True)
            m_new = tile_max if m is None else xp.maximum(m, tile_max)
            # queries that no key has taken part in yet shift by 0, so exp gives 0, not NaN
            shift = xp.where(m_new == -xp.inf, 0, m_new)
            s -= shift
            p = xp.exp(s, out=s)
            pv = xp.matmul(p.swapaxes(-1, -2), v[..., j0:j1, :])
            sums = xp.matmul(ones[:, :j1 - j0], p)
            if m is None:
                l, acc = sums, pv
            else:
                corr = xp.exp(m - shift)
                l *= corr
                l += sums
                acc *= corr.swapaxes(-1, -2)
                acc += pv
            m = m_new
        if m is None:  # causal rows past every key: nothing seen (output 0, lse -inf)
            continue
        seen = l > 0  # False where every key was masked out: output 0, lse -inf
        inv = xp.where(seen, 1 / xp.where(seen, l, 1), 0)
        xp.multiply(acc, inv.swapaxes(-1, -2), out=out[..., i0:i1, :])
        lse[..., i0:i1] = xp.where(seen, xp.where(m == -xp.inf, 0, m) +
                                   xp.log(xp.where(seen, l, 1)), -xp.inf)


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
        mask = _mask_view(xp, backend, attn_mask, G, wt)
        per_query = [_grouped(a, G) for a in (q, do, dq)]
        per_row = [a.reshape(B, Hkv, G, 1, L) for a in (lse, delta)]
        per_key = [_grouped(a, 1) for a in (k, v, dk, dv)]
        bq, bk, chunks = _tiling(backend, B, Hkv, G, L, S)

        def work(bs, hs):
            q5, do5, dq5 = (a[bs, hs] for a in per_query)
            lse5, delta5 = (a[bs, hs] for a in per_row)
            k5, v5, dk5, dv5 = (a[bs, hs] for a in per_key)
            _backward_chunk(xp, q5, k5, v5, do5, lse5, delta5,
                            None if mask is None else mask[bs, hs], dq5, dk5, dv5, is_causal,
                            scale, bq, bk)
        _run(xp, work, chunks)
    dev = query.device
    return tuple(backend.wrap(a.astype(dt, copy=False), dev) for a in (dq, dk, dv))


def _backward_chunk(xp, q, k, v, do, lse, delta, mask, dq, dk, dv, is_causal, scale, bq, bk):
    L, S = q.shape[-2], k.shape[-2]
    for j0 in range(0, S, bk):
        j1 = min(S, j0 + bk)
        kj, vj = k[..., j0:j1, :], v[..., j0:j1, :]
        dk_j = dv_j = None
        # causal: only queries i >= j0 see a key of this block
        for i0 in range((j0 // bq) * bq if is_causal else 0, L, bq):
            i1 = min(L, i0 + bq)
            qi, doi = q[..., i0:i1, :], do[..., i0:i1, :]
            s = xp.matmul(kj, qi.swapaxes(-1, -2))  # (keys, queries), as in the forward
            s *= scale
            _mask_tile(xp, s, mask, i0, i1, j0, j1, is_causal)
            s -= lse[..., i0:i1]
            p = xp.exp(s, out=s)
            t = xp.matmul(p, doi)
            dv_j = t if dv_j is None else xp.add(dv_j, t, out=dv_j)
            ds = xp.matmul(vj, doi.swapaxes(-1, -2))
            ds -= delta[..., i0:i1]
            ds *= p
            t = xp.matmul(ds.swapaxes(-1, -2), kj)
            t *= scale
            dq[..., i0:i1, :] += t
            t = xp.matmul(ds, qi)
            dk_j = t if dk_j is None else xp.add(dk_j, t, out=dk_j)
        if dk_j is not None:
            dk_j *= scale
            dk[..., j0:j1, :] = _sum_groups(dk_j)
            dv[..., j0:j1, :] = _sum_groups(dv_j)


def _sum_groups(x):
    """Sum the query heads of each group (axis 2) into their key/value head."""
    return x if x.shape[2] == 1 else x.sum(2, keepdims=True)


TABLE = {
    "_scaled_dot_product_fused_attention": sdpa_fused_forward,
    "_scaled_dot_product_fused_attention_backward": sdpa_fused_backward,
}


def register(backend) -> None:
    bind(backend, TABLE)
