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

FORMULAS: dict = {}
NONDIFFERENTIABLE: set = set()
INPLACE_FUNCTIONAL: dict = {}   # in-place op name -> functional op name, where names differ


class Formula:
    __slots__ = ("op_name", "backward", "save", "name", "setup", "diff", "outputs",
                 "complex_ok", "is_view", "node_classes")

    def __init__(self, op_name, backward, save, name, setup, diff, outputs, complex_ok, is_view):
        self.op_name = op_name
        self.backward = backward
        self.save = save
        self.name = name
        self.setup = setup
        self.diff = diff
        self.outputs = outputs
        self.complex_ok = complex_ok
        self.is_view = is_view
        self.node_classes = {}


def camel(op_name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in op_name.strip("_").split("_"))


def derivative(op_name, *, save=(), name=None, setup=None, diff=None, outputs=None,
               complex_ok=False, view=False):
    """Register ``backward`` as the derivative of ``op_name``.

    ``name``: the node's class name, or ``callable(*args) -> name`` for ops PyTorch names by
    overload (``SumBackward0`` for a full reduction, ``SumBackward1`` over dims); default
    ``<CamelOp>Backward0``. ``diff``: the argument names that get gradients (default: every
    Tensor argument of the schema). ``outputs``: per output, whether it is differentiable
    (indices are not). ``view``: the op returns a view of its first argument.
    """
    def register(fn):
        FORMULAS[op_name] = Formula(op_name, fn, save, name or f"{camel(op_name)}Backward0",
                                    setup, diff, outputs, complex_ok, view)
        return fn
    return register


def nondifferentiable(*op_names):
    """Ops whose outputs never carry gradients (comparisons, predicates, integer results)."""
    NONDIFFERENTIABLE.update(op_names)


def _load():
    from . import conversion, elementwise, indexing, linalg, random, reduction, shape  # noqa
    from . import sorting, views  # noqa: F401


_load()
