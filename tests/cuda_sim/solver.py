"""cuSOLVER on the simulated GPU: LAPACK (scipy) on the host with cuSOLVER's behaviour where
it differs from numpy's -- nothing raises on a singular or indefinite matrix: factorizations
report ``info`` per matrix, and ``cupy.linalg.solve``/``inv`` return non-finite values (cupy
checks ``info`` only under ``cupyx.errstate(linalg="raise")``)."""
from __future__ import annotations

import numpy as np
import scipy.linalg


def _run(sim, fn, *arrays):
    """``fn`` on host copies of device ``arrays`` (read on the current stream); its array
    results as new device arrays written by that stream."""
    stream = sim.current_stream()
    stamp = stream.issue()
    host = [sim.arrays.readable(a, stream) for a in arrays]
    out = fn(*host)
    return tuple(sim.arrays.adopt(np.asarray(o, order="C"), stream, stamp) for o in out)


def _each(a, fn):
    flat = a.reshape((-1,) + a.shape[-2:])
    return [fn(m) for m in flat]


def potrf(sim, a):
    def host(x):
        potrf_ = scipy.linalg.get_lapack_funcs("potrf", (x,))
        outs = _each(x, lambda m: potrf_(m, lower=True, clean=False))
        L = np.stack([np.tril(c) for c, _ in outs]).reshape(x.shape)
        info = np.array([i for _, i in outs], dtype=np.int32).reshape(x.shape[:-2])
        return L.astype(x.dtype), info
    return _run(sim, host, a)


def getrf(sim, a):
    def host(x):
        getrf_ = scipy.linalg.get_lapack_funcs("getrf", (x,))
        outs = _each(x, getrf_)
        lu = np.stack([o[0] for o in outs]).reshape(x.shape)
        piv = (np.stack([o[1] for o in outs]) + 1).astype(np.int32).reshape(x.shape[:-1])
        info = np.array([o[2] for o in outs], dtype=np.int32).reshape(x.shape[:-2])
        return lu.astype(x.dtype), piv, info
    return _run(sim, host, a)


def no_raise(fn, shape_of):
    """numpy's ``fn`` made to answer as cupy's does on a singular matrix: non-finite values of
    the result's shape instead of LinAlgError."""
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except np.linalg.LinAlgError:
            shape, dtype = shape_of(*args)
            return np.full(shape, np.nan, dtype=dtype)
    call.__name__ = fn.__name__
    return call


def _solve_shape(a, b, *rest):
    return np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], \
        np.result_type(a, b)


def _inv_shape(a, *rest):
    return a.shape, a.dtype


EMULATED = {"solve": (np.linalg.solve, _solve_shape), "inv": (np.linalg.inv, _inv_shape)}
