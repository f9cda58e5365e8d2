"""Binding module-level kernels to a backend.

Kit kernels are module-level functions whose first parameter is the backend (``be``): they read
``be.xp``, ``be.native``, ``be.wrap``. A module lists them in a ``TABLE`` (op name -> function)
and its ``register(backend)`` binds each to the backend as a method object: calling a bound
method costs what calling a closure did, so the per-op path is as fast as before.
"""
from __future__ import annotations

from functools import partial
from types import MethodType


def bind(backend, table) -> None:
    """Register ``fn`` bound to ``backend`` for every ``name: fn`` of ``table``."""
    register = backend.kernels.register
    for name, fn in table.items():
        register(name, MethodType(fn, backend))


def bind_with(backend, name, fn, *constants) -> None:
    """Register ``fn(backend, *constants, *op_args)`` as the kernel of ``name`` (a kernel shared
    by a family of ops, each with its own constants, e.g. the ufunc it applies)."""
    backend.kernels.register(name, partial(fn, backend, *constants))
