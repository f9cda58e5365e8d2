"""What an op means besides its kernels: the facets kept on the ``Op`` object.

An op is defined once, in its family module under ``ember/ops/``, with every device-agnostic
facet beside its ``define`` (JAX's ``lax.py`` and PyTorch's ``derivatives.yaml`` are the
models)::

    exp = define("exp(Tensor self, dtype compute) -> Tensor", meta=float_unary_meta)

    @exp.backward(save=["result"], complex_ok=True)
    def _(ctx, grad, self, compute):
        return (grad * conj(ctx.result),)

Facets (attributes of ``Op``):

``schema``        the parsed :class:`~ember.dispatch.schema.Schema`.
``meta``          ``meta(*args) -> (shape, dtype)`` (a tuple of pairs for several outputs; the
                  mutated argument for in-place ops): output metadata without reading data.
``composite``     an implementation written in ember ops (PyTorch's CompositeImplicit): used on
                  any backend without a kernel, and seen through by autograd.
``derivative``    a :class:`Derivative` (formula in ember ops, run by autograd's nodes), a
                  :class:`CustomDerivative` (``ember.library``'s ``register_autograd``),
                  ``NOT_DIFFERENTIABLE`` (outputs never require grad), or None (a composite
                  decomposes; otherwise a backward through it raises, naming the op).
``jvp``           forward-mode rule ``jvp(ctx, tangents, *args) -> tangent(s)`` (ember.func):
                  ``tangents`` mirrors the arguments (None where there is none), ``ctx.result``
                  is the primal output; None means a zero tangent, ``NotImplemented`` leaves
                  the case to the transpose of the backward formula. Helpers:
                  ``ops/_tangents.py``.
``batch_rule``    vmap rule ``rule(args, batch_dims) -> (outputs, out_dims)`` (ember.func):
                  batched arguments arrive as physical tensors with their batch dim in
                  ``batch_dims`` (None: not batched). Helpers: ``ops/_batching.py``.
``decomposition`` ``fn(*args)`` in simpler ops, for graph compilers (ember.compile).
``pointwise``     the op's value for one element as a dialect-neutral expression
                  ``rule(e, *args) -> str | None`` (``op.def_pointwise``): fusion renders it in
                  C for the CPU compiler, OpenCL C and CUDA C. ``args`` are the schema
                  arguments, tensors as operands: ``e(x)`` an operand (a variable, or a literal
                  for a Python number), ``e.fn("exp", v)`` a math call, ``e.lit(0.5)`` a
                  constant in the compute dtype. None: this variant stays a library call (``div``
                  with a rounding mode). A rule keeps the op's eager NaN/inf behaviour. Its
                  ``operands`` attribute (``ops/_lowering.py``) says how operand, compute and
                  result dtypes relate when not all alike (comparisons, casts, ``where``).
                  Helpers: ``ops/_lowering.py``.
``onnx``          the op's ONNX translation ``rule(b, c, *args)`` (``op.def_onnx``): ``b`` the
                  exporter's builder (``b.op(type, inputs, **attrs)``, ``b.const``, ``b.ints``),
                  ``c`` the node's context (``c.shape(i)``, ``c.out_dtype``, ``c.scalar(v)``,
                  ``c.refuse(detail)``), tensors given as ONNX value names; returns the output
                  name(s). A rule marked ``fold`` (``ops/_lowering.foldable``) is computed once
                  at export when every tensor it reads is a parameter or buffer.
``applies``       for a foreach op (``_foreach_mul_``), the elementwise op it applies at each
                  index of its lists, with the same arguments element by element (``mul``):
                  fusion runs runs of them as one loop with that op's ``pointwise`` rule.
``functional``    for an in-place op (``add_``), its functional twin (``add``) with the same
                  arguments, through which autograd records it.

Setting a facet clears the op's dispatch cache, so facets may be attached at any time.
"""
from __future__ import annotations


class _NotDifferentiable:
    __slots__ = ()

    def __repr__(self):
        return "NOT_DIFFERENTIABLE"

    def __reduce__(self):
        return "NOT_DIFFERENTIABLE"


NOT_DIFFERENTIABLE = _NotDifferentiable()


def camel(op_name: str) -> str:
    """``log1p`` -> ``Log1P``, ``special_i0e`` -> ``SpecialI0E``: how PyTorch's autograd codegen
    names an op's backward node (each ``_``-separated part ``str.title()``d, so a letter after
    a digit is upper case too)."""
    short = op_name.rsplit("::", 1)[-1]
    return "".join(p.title() for p in short.strip("_").split("_"))


class Derivative:
    """A backward formula, written in ember ops so every backend (and double backward) gets it.

    ``backward(ctx, grad, *args)``: ``args`` mirror the op's arguments (saved tensors unpacked,
    tensors that were not saved as None, other arguments as given). It returns one gradient per
    argument position (None where there is none; a list for a ``Tensor[]`` argument). Gradients
    may come back broadcast or in the compute dtype: the node sums them to each input's shape,
    casts them to its dtype and moves them to its device.

    ``ctx`` is the node: ``ctx.needs(i)`` (does argument i need a gradient), ``ctx.result`` (the
    saved output), ``ctx.meta(i)`` ((shape, dtype, device) of tensor argument i), ``ctx.info``
    (what ``setup(*args)`` returned at record time).

    save        the argument names (and ``"result"``, or ``"result0"``, ``"result1"``… for single
                outputs of several) the backward reads; a dict entry
                ``{"self": "other"}`` saves ``self`` only when ``other`` needs a gradient (what
                PyTorch's generated code does), so in-place ops don't save what they overwrite.
    name        the node's class name, or ``callable(*args) -> name`` for ops PyTorch names by
                overload (``SumBackward0`` for a full reduction, ``SumBackward1`` over dims);
                default ``<CamelOp>Backward0``.
    diff        argument names that get gradients (default: every Tensor argument).
    outputs     per output, whether it is differentiable (indices are not).
    complex_ok  the formula is right for complex inputs (PyTorch's conjugate convention).
    view        the op returns a view of its first argument.
    scalars     ``{node name: argument names}``: the overloads PyTorch gives a Scalar there
                (``PowBackward0``'s exponent, ``ClampBackward1``'s bounds), whose node has no
                edge for it — next_functions leaves those slots out, as torch's does (mul, add,
                where... wrap a number as a tensor in torch and keep its empty edge).
    """

    __slots__ = ("backward", "save", "name", "setup", "diff", "outputs", "complex_ok", "is_view",
                 "node_classes", "scalars")

    def __init__(self, backward, *, save=(), name=None, setup=None, diff=None, outputs=None,
                 complex_ok=False, view=False, scalars=None):
        self.backward = backward
        self.save = save
        self.name = name
        self.setup = setup
        self.diff = diff
        self.outputs = outputs
        self.complex_ok = complex_ok
        self.is_view = view
        self.node_classes = {}
        self.scalars = scalars or {}

    def node_name(self, op_name: str, args=()) -> str:
        if self.name is None:
            return f"{camel(op_name)}Backward0"
        return self.name if isinstance(self.name, str) else self.name(*args)

    def __repr__(self):
        return f"<Derivative {getattr(self.backward, '__qualname__', self.backward)}>"


class CustomDerivative:
    """``torch.library``-style autograd of an op defined through ``ember.library``:
    ``backward(ctx, *grads)`` and ``setup_context(ctx, inputs, output)``."""

    __slots__ = ("backward", "setup_context")

    def __init__(self, backward, setup_context=None):
        self.backward = backward
        self.setup_context = setup_context

    def __repr__(self):
        return f"<CustomDerivative {getattr(self.backward, '__qualname__', self.backward)}>"
