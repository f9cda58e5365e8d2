"""Anomaly detection: forward tracebacks on nodes, NaN checks on every backward result.

While enabled, each recorded node keeps the stack of the forward call that made it. In backward,
a node whose result holds NaN raises, naming the node and the forward op, and an error raised
inside a node is preceded by a warning with that forward traceback.
"""
from __future__ import annotations

import functools
import threading
import warnings

from .._dtype import FLOATING
from ..ops.elementwise import unary_api
from .._warn import user_stacklevel

class _Mode(threading.local):
    # defaults as class attributes: enabled() is asked on every recorded op, and a getattr
    # with a default that misses costs an AttributeError each time
    on = False
    check_nan = True


_local = _Mode()


def enabled() -> bool:
    return _local.on


def is_anomaly_enabled() -> bool:
    return enabled()


def is_anomaly_check_nan_enabled() -> bool:
    return enabled() and getattr(_local, "check_nan", True)


def _set(mode: bool, check_nan: bool = True) -> None:
    _local.on = bool(mode)
    _local.check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager (and decorator) turning anomaly detection on for this thread."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        self._prev = None
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning,
                      stacklevel=user_stacklevel())

    def __enter__(self):
        self._prev = (enabled(), getattr(_local, "check_nan", True))
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._prev)

    def __call__(self, fn):

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off for this thread right away; used as a context manager,
    restores the previous setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (enabled(), getattr(_local, "check_nan", True))
        _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._prev)


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """``torch.set_anomaly_enabled``: turn anomaly detection on or off for this thread."""
    _set(enabled, check_nan)


def _forward_op(node) -> str:
    name = node.name()
    return name[:-len("Backward0")] if name.endswith("Backward0") else name


def _warn_trace(node):
    trace = node._x.trace if node._x is not None else None
    if trace:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      f"the error:\n{''.join(trace)}", UserWarning, stacklevel=user_stacklevel())


def checked_apply(node, grads):
    try:
        outs = node.apply(grads)
    except Exception:
        _warn_trace(node)
        raise
    if is_anomaly_check_nan_enabled():
        isnan = unary_api["isnan"]
        for i, g in enumerate(outs):
            if g is not None and g.dtype.category >= FLOATING and bool(isnan(g).any()):
                _warn_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                                   f"output (the backward of the forward op "
                                   f"'{_forward_op(node)}').")
    return outs
