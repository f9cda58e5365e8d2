"""Derivative formulas, keyed by op name, written once in ember ops for every backend.

A formula is registered with ``@derivative(op_name, save=...)`` on a function
``backward(ctx, grad, *args)``: ``args`` mirror the op's positional arguments (the kernel calling
convention of its schema), with saved tensors unpacked, tensors that were not saved as None and
non-tensor arguments as given. It returns one gradient per argument position (None where there is
none; a list for a ``Tensor[]`` argument). Gradients may come back broadcast or in the compute
dtype: the node reduces them to each input's shape (sum_to_size), casts them to its dtype and
moves them to its device.

``ctx`` is the node: ``ctx.needs(i)`` (does argument i need a gradient), ``ctx.result`` (the saved
output), ``ctx.meta(i)`` ((shape, dtype, device) of tensor argument i), ``ctx.info`` (what the
formula's ``setup(*args)`` returned at record time).

``save`` names what the backward reads: schema argument names and ``"result"``. A dict entry
``{"self": "other"}`` saves ``self`` only when ``other`` needs a gradient (what PyTorch's
generated code does), which keeps in-place ops from saving values they overwrite.
"""
from __future__ import annotations

from ...dispatch.dispatcher import get_op
from ...dispatch.facets import NOT_DIFFERENTIABLE, Derivative, camel  # noqa: F401


def derivative(op_name, *, save=(), name=None, setup=None, diff=None, outputs=None,
               complex_ok=False, view=False):
    """Attach ``backward`` as the derivative facet of the op called ``op_name``."""
    def register(fn):
        get_op(op_name).derivative = Derivative(fn, save=save, name=name, setup=setup, diff=diff,
                                                outputs=outputs, complex_ok=complex_ok, view=view)
        return fn
    return register


def nondifferentiable(*op_names):
    """Ops whose outputs never carry gradients (comparisons, predicates, integer results)."""
    for n in op_names:
        get_op(n).derivative = NOT_DIFFERENTIABLE


def _load():
    from . import conversion, indexing, random, shape, views  # noqa: F401


_load()
