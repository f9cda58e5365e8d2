"""A stricter simulated GPU for the CUDA backend's tests (no GPU needed).

``clock.py`` orders work as CUDA does (streams, events, the legacy default stream, the host) and
``arrays.py`` makes cupy-like device arrays over numpy that honour that order: see their
docstrings. ``tests/helpers_cuda.py`` puts them behind ``ember_cuda.cupy_api.CupyAPI``'s
interface (``FakeCupyAPI``).

What the simulator models, so that tests fail where a GPU would misbehave:

* deferred work: results are visible only to those ordered after them (same stream, an event
  waited for, a synchronization); anything else reads poison. Memory reused while another
  stream may still read it poisons that stream's results; non-blocking copies to the host land
  when the host synchronizes, copies from pinned host memory read it when they run;
* two devices with device affinity (no peer access), cupy's out-of-range index wrapping, host
  arrays refused as kernel operands, 0-d results instead of host scalars;
* asynchronous errors (``Sim.fail``) raised at the next synchronization, work that never
  finishes (``Sim.stall``), and a count of host synchronizations (``Sim.syncs``).

What it does not model: cupy's numerics (numpy computes), real concurrency and timing, races
between disjoint parts of one allocation (reported as races), and anything inside cuBLAS,
cuSOLVER or NCCL beyond their interfaces.
"""
from __future__ import annotations

import numpy as np

from .arrays import ArrayOps, Block, DeviceArray, Memory, poison_like, wrap_key
from .clock import Clock, Sim, SimEvent, SimStream, SimulatedHang

__all__ = ["ArrayOps", "Block", "Clock", "DeviceArray", "Memory", "Sim", "SimEvent",
           "SimStream", "SimulatedHang", "make_checker", "poison_like", "probe_ufunc_method",
           "wrap_key"]


def probe_ufunc_method(cupy_ufunc, method) -> bool:
    """True when cupy implements ``ufunc.method``: cupy raises NotImplementedError before looking
    at its arguments when it does not (no GPU needed to ask)."""
    try:
        if method == "at":
            cupy_ufunc.at(None, None, None)
        else:
            getattr(cupy_ufunc, method)(None)
    except NotImplementedError:
        return False
    except Exception:
        return True
    return True


def _counterpart(cupy, func):
    module = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", "")
    if "linalg" in module:
        space = cupy.linalg
    elif "fft" in module:
        space = cupy.fft
    elif "stride_tricks" in module:
        space = cupy.lib.stride_tricks
    else:
        space = cupy
    return getattr(space, name, None)


def make_checker(cupy):
    """``check(func, method)``: raise as cupy would for a numpy function or ufunc method that
    cupy lacks, called on device arrays (NEP 13/18 dispatch reaches only what cupy has)."""
    known = {}

    def check(func, method):
        if isinstance(func, np.ufunc):
            # reduce/accumulate also serve ndarray methods (a.max(), a.cumsum()) that cupy has
            # natively; the surface checks them when a kernel names them (xp.maximum.reduce)
            if method != "at":
                return
            cp = getattr(cupy, func.__name__, None)
            if cp is None:
                return  # scipy.special's ufuncs: the surface checked the name
            key = (func, method)
            ok = known.get(key)
            if ok is None:
                ok = known[key] = probe_ufunc_method(cp, method)
            if not ok:
                raise NotImplementedError(f"cupy.{func.__name__}.{method} is not supported by "
                                          f"cupy")
            return
        ok = known.get(func)
        if ok is None:
            ok = known[func] = _counterpart(cupy, func) is not None
        if not ok:
            raise TypeError(f"no implementation found for 'numpy.{func.__name__}' on types "
                            f"that implement __array_function__: [<class 'cupy.ndarray'>] "
                            f"(cupy has no {func.__name__})")
    return check
