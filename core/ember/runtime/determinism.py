"""Deterministic-algorithms mode: ``ember.use_deterministic_algorithms`` and the check kernels
make.

The state is process-wide, as PyTorch's. It lives in the runtime because backends read it: a
kernel with a nondeterministic path (atomics whose order varies, an algorithm chosen by timing)
calls :func:`alert_not_deterministic` with the op's name, which raises PyTorch's RuntimeError in
deterministic mode (warns with ``warn_only=True``) and returns otherwise; the kernel then runs
its nondeterministic path or a deterministic alternative.

ember's built-in kernels have no nondeterministic path: the CPU backend is numpy (``np.add.at``
accumulates in index order), and the OpenCL backend accumulates index_add/index_put/scatter
without atomics (one work-item walks each colliding dim in index order), reduces with fixed
work-group trees and sorts stably. So for them the mode changes only what PyTorch also changes
on every device: uninitialized memory (``empty``, ``empty_like``, ``new_empty``,
``empty_strided``, the legacy ``Tensor(n)``) is filled with NaN (floating, complex) or the
dtype's largest value (integers, bool) while ``fill_uninitialized_memory`` is True.
"""
from __future__ import annotations

import warnings
from .._warn import user_stacklevel

_enabled = False
_warn_only = False
_fill_uninitialized_memory = True

_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False) -> None:
    """Make ops use deterministic algorithms where they have a choice, and make ops that have
    only a nondeterministic one raise (or warn, with ``warn_only=True``)."""
    global _enabled, _warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _enabled, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """True while ``use_deterministic_algorithms(True)`` is in force (kernels with a
    deterministic alternative read it to choose that path)."""
    return _enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """True when deterministic mode only warns about nondeterministic ops."""
    return _warn_only


def set_deterministic_debug_mode(debug_mode) -> None:
    """``"default"``/0 (off), ``"warn"``/1 (on, warn only), ``"error"``/2 (on)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _MODES[debug_mode]
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                               f"{debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn only) or 2 (error), as ``set_deterministic_debug_mode`` takes them."""
    if not _enabled:
        return 0
    return 1 if _warn_only else 2


def fill_uninitialized_memory() -> bool:
    """True when deterministic mode is on and uninitialized memory is to be filled."""
    return _enabled and _fill_uninitialized_memory


def set_fill_uninitialized_memory(value: bool) -> None:
    global _fill_uninitialized_memory
    if not isinstance(value, bool):
        raise TypeError(f"expected a bool, but got {type(value).__name__}")
    _fill_uninitialized_memory = value


def get_fill_uninitialized_memory() -> bool:
    return _fill_uninitialized_memory


def alert_not_deterministic(caller: str) -> None:
    """Called by a kernel about to run a nondeterministic path: raises RuntimeError in
    deterministic mode, warns with ``warn_only``, does nothing otherwise (PyTorch's
    ``alertNotDeterministic``)."""
    if not _enabled:
        return
    if _warn_only:
        warnings.warn(f"{caller} does not have a deterministic implementation, but you set "
                      f"'ember.use_deterministic_algorithms(True, warn_only=True)'.",
                      UserWarning, stacklevel=user_stacklevel())
        return
    raise RuntimeError(f"{caller} does not have a deterministic implementation, but you set "
                       f"'ember.use_deterministic_algorithms(True)'. You can turn off "
                       f"determinism just for this operation, or you can use the "
                       f"'warn_only=True' option, if that's acceptable for your application.")
