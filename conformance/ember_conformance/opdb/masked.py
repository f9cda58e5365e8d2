"""Entries for ``ember.masked`` and the factories issue #30 adds (windows, triangle indices,
``scalar_tensor``, ``empty_strided``): compositions of ember ops, so they cover no registry op
of their own; values on the backend under test against the CPU, and gradients of the masked
reductions (zero where masked out) against finite differences."""
from __future__ import annotations

import ember

from . import OpInfo, SampleInput
from ._cases import entry

_LOOSE = {"float32": (1e-4, 1e-5)}


def _mask(shape, seed):
    def build(dev, dt):
        import numpy as np
        values = np.random.default_rng(seed).random(shape) > 0.4
        values.reshape(-1)[0] = True
        return ember.tensor(values, device=dev)
    return ("fn", build)


_REDUCE = [("dim 1", [((3, 5), "x")], {"dim": 1, "keepdim": False}),
           ("all, keepdim", [((2, 3, 4), "l")], {"keepdim": True})]


def _mask_kw(case_table):
    """Each case twice: without a mask, and with a bool mask of the operand's shape."""
    table = []
    for i, (desc, operands, kw) in enumerate(case_table):
        table.append((desc, operands, kw))
        shape = operands[0][0]
        table.append((desc + ", masked", operands + [_mask(shape, 7 + i)], kw))
    return table


def _reduction(name, **kw):
    fn = getattr(ember.masked, name)
    table = _mask_kw(_REDUCE)
    return entry(f"masked.{name}",
                 lambda x, *m, **k: fn(x, **k, mask=m[0] if m else None), *table,
                 covers=(), tolerances=_LOOSE, **kw)


def _along(name, **kw):
    fn = getattr(ember.masked, name)
    table = _mask_kw([("dim 1", [((3, 5), "x")], {}), ("dim 0", [((4, 2), "l")], {})])
    return entry(f"masked.{name}",
                 lambda x, *m, **k: fn(x, 1 if x.shape[1] == 5 else 0, **k,
                                       mask=m[0] if m else None), *table,
                 covers=(), tolerances=_LOOSE, **kw)


def _on(fn):
    def samples(dtype):
        yield SampleInput(dtype, lambda dev, dt=dtype: ((dev, getattr(ember, dt)), {}))
    return samples


OPS = [_reduction(n) for n in ("sum", "prod", "amax", "amin", "mean", "logsumexp", "var", "std",
                               "norm")]
OPS += [_along(n) for n in ("cumsum", "cumprod", "softmax", "log_softmax", "softmin")]
OPS += [_along(n, differentiable=False) for n in ("argmax", "argmin")]
OPS += [_along("median")]
OPS += [
    OpInfo(f"{name}", lambda d, dt, name=name: getattr(ember, name)(9, True, dtype=dt, device=d),
           _on(None), ("float32", "float64"), covers=(), differentiable=False)
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                 "kaiser_window")
] + [
    OpInfo(f"signal.windows.{name}",
           lambda d, dt, name=name: getattr(ember.signal.windows, name)(8, sym=False, dtype=dt,
                                                                        device=d),
           _on(None), ("float32", "float64"), covers=(), differentiable=False)
    for name in ("hann", "hamming", "blackman", "bartlett", "kaiser", "cosine", "gaussian",
                 "exponential", "nuttall")
] + [
    OpInfo("tril_indices", lambda d, dt: ember.tril_indices(4, 5, 1, device=d), _on(None),
           ("int64",), covers=(), differentiable=False),
    OpInfo("triu_indices", lambda d, dt: ember.triu_indices(5, 3, -1, device=d), _on(None),
           ("int64",), covers=(), differentiable=False),
    OpInfo("scalar_tensor", lambda d, dt: ember.scalar_tensor(2.5, dtype=dt, device=d),
           _on(None), ("float32", "float64", "int64"), covers=(), differentiable=False),
    OpInfo("empty_strided layout", lambda d, dt: ember.empty_strided((2, 3), (1, 2), dtype=dt,
                                                                     device=d).fill_(1),
           _on(None), ("float32", "int64"), covers=(), differentiable=False),
]
