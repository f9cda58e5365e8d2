"""The runtime's read-only view of the op registry, and output specs from meta functions.

Ops are defined above the runtime (``ember.dispatch``), so the runtime cannot import them; the
dispatch layer installs its lookup functions here when it is imported (``install``). Backends
read ops through this module: ``get_op(name)`` / ``all_ops()`` give ``Op`` objects with
``name``, ``schema`` (``str(op.schema)`` is the schema text), ``meta`` (the meta function or
None), ``composite`` (None, or the implementation in ember ops), ``mutates`` (positions of the
arguments the op writes) and ``pointwise`` (None, or the op's expression for one element, which
a backend that generates code may render: ``ember.dispatch.facets``).

``output_specs(op, *args)`` runs the op's meta function: what the outputs' shapes and dtypes
will be for these arguments, without computing anything. A backend whose kernels run later (an
asynchronous device) can allocate outputs from it; the meta device is built on it; the kernel
checks (``ember.runtime.checks``) compare kernel results with it.
"""
from __future__ import annotations

from typing import NamedTuple

from .._dtype import dtype as _dtype_cls
from .tensors import is_tensor

_lookup = {"get_op": None, "all_ops": None}


def install(get_op, all_ops) -> None:
    """Called by the dispatch layer at import: ``get_op(name)`` raises KeyError for an unknown
    op; ``all_ops()`` returns ``{name: Op}``."""
    _lookup["get_op"] = get_op
    _lookup["all_ops"] = all_ops


def _need(name):
    fn = _lookup[name]
    if fn is None:
        raise RuntimeError("ember.runtime: no op registry is installed yet (import ember first)")
    return fn


def get_op(name: str):
    """The op called ``name`` (``"add"``, ``"openreg::fused_bias_gelu"``); KeyError if none."""
    return _need("get_op")(name)


def all_ops() -> dict:
    """Every op defined so far: ``{name: Op}`` (a copy)."""
    return _need("all_ops")()


class OutputSpec(NamedTuple):
    """One output of an op call: its ``shape`` (tuple) and ``dtype``; ``alias`` is the argument
    tensor itself when the output *is* an argument (in-place ops), else None."""
    shape: tuple
    dtype: object
    alias: object = None


def output_specs(op, *args, **kwargs) -> tuple:
    """The outputs ``op(*args, **kwargs)`` will have, from the op's meta function: a tuple of
    ``OutputSpec`` (one per output; several for ops like ``max_dim``). ``op`` is an Op or its
    name. Raises LookupError when the op has no meta function, and whatever the meta function
    raises for bad arguments (errors that name the op)."""
    if isinstance(op, str):
        op = get_op(op)
    if op.meta is None:
        raise LookupError(f"op '{op.name}' has no meta function, so its outputs can't be known "
                          f"before it runs")
    return specs_of(op.meta(*args, **kwargs))


def specs_of(result) -> tuple:
    """A meta function's result as ``OutputSpec``s: it returns ``(shape, dtype)``, a tuple of
    such pairs (None for an output left undefined), or the mutated argument (a Tensor)."""
    if is_tensor(result):
        return (OutputSpec(tuple(result.shape), result.dtype, result),)
    if len(result) == 2 and isinstance(result[1], _dtype_cls):
        return (OutputSpec(tuple(result[0]), result[1]),)
    # None: an output the op leaves undefined for these arguments (a backward op's output that
    # its output_mask does not ask for, as PyTorch's undefined tensors)
    return tuple(None if r is None else OutputSpec(tuple(r[0]), r[1]) for r in result)
