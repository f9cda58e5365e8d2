"""``ember.autograd.Function``: user-defined ops with a hand-written backward.

The node is the ``ctx``: ``save_for_backward``/``saved_tensors``, ``needs_input_grad``,
``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads`` and any attribute the
forward sets. Both PyTorch styles work: ``forward(ctx, *args)``, or ``forward(*args)`` plus
``setup_context(ctx, inputs, output)``. Custom ops from ``ember.library`` with
``register_autograd(backward, setup_context=...)`` are recorded by the same machinery.
"""
from __future__ import annotations

import functools

from .._tensor import Tensor
from ..dispatch import keys as K
from ..dispatch import levels as _levels
from ..ops import _grad
from . import dual as _dual
from .graph import DelayedError, Node, SavedTensor, _FREED, alias, attach, differentiable_dtype
from ..dispatch.grad_mode import _restore, _save, _set_enabled, no_grad
from ..ops.factories import full_op
from .nodes import validate
from .record import check_inplace_target, gradient_edge, rebase, run_below, view_base as view_root

_AG = K.AUTOGRAD


class FunctionCtx(Node):
    """A custom function's node and context (attributes are free-form)."""

    def __init__(self, edges=()):
        super().__init__(edges)
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._to_save = ()
        self._saved = None
        self._dirty = ()
        self._non_diff = ()
        self._out_meta = ()
        self._arg_tensor = ()
        self._released = False

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors (or None), but "
                                f"argument {tensors.index(t)} is a {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        """Tensors ``jvp`` reads as ``ctx.saved_tensors`` (forward-mode AD)."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; but got "
                                f"an argument of type {type(t).__name__}")
        self._fw_to_save = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(_FREED)
        if getattr(self, "_in_jvp", False):
            return tuple(getattr(self, "_fw_to_save", None) or self._to_save)
        if self._saved is None:  # still inside forward/setup_context
            return tuple(self._to_save)
        return tuple(None if s is None else s.unpack(self) for s in self._saved)

    saved_variables = saved_tensors

    @property
    def num_outputs(self):
        return len(self._out_meta) or 1

    def release(self):
        if self._saved:
            for s in self._saved:
                if s is not None:
                    s.free()
        self._released = True

    # -- backward -----------------------------------------------------------------------------
    def _backward(self, *grads):
        raise NotImplementedError

    def apply(self, grads):
        grads = list(grads) + [None] * (len(self._out_meta) - len(grads))
        if self.materialize_grads:
            for k, m in enumerate(self._out_meta):
                if grads[k] is None and m is not None:
                    grads[k] = full_op.on(m[2], m[0], 0, m[1], m[2])
        res = self._backward(*grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self._arg_tensor)
        if len(res) > n and all(r is None for r in res[n:]):
            res = res[:n]
        if len(res) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(res)})")
        out = []
        k = 0
        for i, (is_tensor, r) in enumerate(zip(self._arg_tensor, res)):
            if not is_tensor:
                if r is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different "
                                       f"than None at position {i + 1}, but the corresponding "
                                       f"forward input was not a Variable")
                continue
            meta = self._metas[k]
            out.append(None if r is None or self.next_edges[k] is None
                       else validate(r, meta, self, k))
            k += 1
        return out


def _edges(args):
    edges, metas, needs, is_tensor = [], [], [], []
    for a in args:
        if isinstance(a, Tensor):
            e = gradient_edge(a)
            edges.append(e)
            metas.append((a._shape, a.dtype, a.device) if e is not None else None)
            needs.append(e is not None)
            is_tensor.append(True)
        else:
            needs.append(False)
            is_tensor.append(False)
    return edges, metas, tuple(needs), tuple(is_tensor)


def _finish(ctx, args, out):
    """Attach the outputs of a custom function to ``ctx`` (dirty, non-differentiable, aliasing
    an input), then save what it asked for."""
    multi = isinstance(out, tuple)
    outs = list(out) if multi else [out]
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_diff}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    metas = []
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            metas.append(None)
            continue
        metas.append((o._shape, o.dtype, o.device))
        if id(o) in dirty:
            check_inplace_target(o, "an in-place operation (marked dirty by a custom Function)")
            rebase(o, ctx) if k == 0 else _rebase_nr(o, ctx, k)
            continue
        if id(o) in non_diff or not differentiable_dtype(o.dtype):
            continue
        if id(o) in inputs or o._ag is not None:
            o = outs[k] = alias(o)
        elif getattr(o, "_view_base", None) is not None and \
                not getattr(view_root(o), "requires_grad", False):
            del o._view_base   # a view of a temporary of the forward: a new tensor to autograd
        attach(o, ctx, k)
    ctx._out_meta = tuple(metas)
    ids = {id(o): k for k, o in enumerate(outs) if isinstance(o, Tensor)}
    saved = []
    for t in ctx._to_save:
        if t is None:
            saved.append(None)
        elif id(t) in ids and t._ag is not None and t._ag.grad_fn is ctx:
            saved.append(SavedTensor(t, ids[id(t)]))
        else:
            saved.append(SavedTensor(t))
    ctx._saved = saved
    ctx._to_save = ()
    return tuple(outs) if multi else outs[0]


def _rebase_nr(t, node, nr):
    rebase(t, node)
    t._ag.output_nr = nr


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        # the node class, named like PyTorch's (``MyFnBackward``)
        cls._backward_cls = type(f"{name}Backward", (FunctionCtx,), {
            "_backward": lambda self, *grads: cls.backward(self, *grads)})


class Function(metaclass=_FunctionMeta):
    """Subclass with static ``forward`` and ``backward``; call ``MyFn.apply(*args)``."""

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        level = _tangent_level(args)
        if level:
            return _apply_forward_ad(cls, level, args, kwargs)
        return _run(cls, args, kwargs)[0]


def _run(cls, args, kwargs):
    """Function.apply's body: (outputs, ctx)."""
    new_style = cls.setup_context is not Function.setup_context
    st = K.state
    recording = st.grad_enabled and any(isinstance(a, Tensor) and a.requires_grad
                                        for a in args)
    edges, metas, needs, is_tensor = _edges(args) if recording else ([], [], (), ())
    ctx = cls._backward_cls(edges)
    ctx._metas = metas
    ctx._arg_tensor = is_tensor or tuple(isinstance(a, Tensor) for a in args)
    ctx.needs_input_grad = needs or (False,) * len(args)
    saved_mode = _save(st)
    _set_enabled(st, False)
    try:
        if new_style:
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
    finally:
        _restore(st, saved_mode)
    if not recording:
        return out, ctx
    return _finish(ctx, args, out), ctx


def _tangent_level(args) -> int:
    """The highest visible forward-AD level among the tensor arguments (0: none)."""
    if not any(getattr(a, "_fw", None) for a in args if isinstance(a, Tensor)):
        return 0
    ceiling = _levels.state.ceiling
    return max((_dual.visible_level(a, ceiling) for a in args if isinstance(a, Tensor)),
               default=0)


def _apply_forward_ad(cls, level, args, kwargs):
    """A Function under forward AD: its forward one level down, then its ``jvp`` gives the
    outputs' tangents (PyTorch's contract: without a ``jvp`` it raises)."""
    if cls.jvp is Function.jvp:
        Function.jvp(None)   # raises PyTorch's "You must implement the jvp function" error
    with _levels.Ceiling(level - 1):
        out, ctx = _run(cls, args, kwargs)
        tangents = [(_dual.tangent_at(a, level) if _dual.tangent_at(a, level) is not None
                     else _grad.zeros_like(a)) if isinstance(a, Tensor) else None for a in args]
        ctx._in_jvp = True
        try:
            t_out = cls.jvp(ctx, *tangents)
        finally:
            ctx._in_jvp = False
    _dual.attach(out, t_out, level)
    return out


def once_differentiable(fn):
    """Backward runs without recording; differentiating its result again raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not K.state.grad_enabled:
            return outputs
        edges = [gradient_edge(a) for a in args if isinstance(a, Tensor) and a.requires_grad]
        if not edges:
            return outputs
        err = DelayedError(edges, "trying to differentiate twice a function that was marked "
                                  "with @once_differentiable")
        single = not isinstance(outputs, tuple)
        outs = [outputs] if single else list(outputs)
        for k, o in enumerate(outs):
            if isinstance(o, Tensor) and differentiable_dtype(o.dtype):
                o = outs[k] = alias(o)
                attach(o, err, k)
        return outs[0] if single else tuple(outs)
    return wrapper


class _CustomOpCtx(FunctionCtx):
    def _backward(self, *grads):
        return self._custom_backward(self, *grads)


def custom_op_handler(op):
    """``op.derivative``: a CustomDerivative from ``CustomOp.register_autograd``."""
    backward, setup_context = op.derivative.backward, op.derivative.setup_context
    short = op.name.replace("::", "_")
    cls = type(f"GeneratedBackwardFor_{short}", (_CustomOpCtx,), {})

    def handler(*args, **kwargs):
        out = run_below(op, args, kwargs)
        edges, metas, needs, is_tensor = _edges(args)
        if not any(e is not None for e in edges):
            return out
        ctx = cls(edges)
        ctx._metas = metas
        ctx._arg_tensor = is_tensor
        ctx.needs_input_grad = needs
        ctx._custom_backward = backward
        if setup_context is not None:
            setup_context(ctx, args, out)
        return _finish(ctx, args, out)

    return handler
