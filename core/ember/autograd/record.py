"""The Autograd dispatch key: run the op below itself, then record its backward node.

``make_handler(op, bit)`` is registered with ``register_functionality(AUTOGRAD, ...)``. The
dispatcher reaches it only for key sets holding ``AUTOGRAD`` (some input requires grad and grad
mode is on); everything else resolves straight to the backend, so no-grad code pays nothing.

Per op, in order: a custom op's ``op.derivative``; an in-place op (with its own formula when it
only overwrites its target, like copy_ or fill_; else recorded through its functional twin,
``mul`` for ``mul_``), after which the target's history is rebased, through ``CopySlices`` when
the target is a view; a registered formula; a non-differentiable op (outputs never require
grad); a composite (decomposed above autograd, so its inner ops record themselves); else a
``NotImplemented`` node that raises, naming the op, if a backward ever reaches it.
"""
from __future__ import annotations

import traceback

from .. import _fastpath
from .._dtype import COMPLEX, FLOATING
from .._tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch import keys as K
from . import anomaly
from ..dispatch.facets import NOT_DIFFERENTIABLE, CustomDerivative, Derivative
from . import graph as _graph
from .graph import (AutogradMeta, NotImplementedNode, SavedTensor, ZeroGradNode, alias, attach,
                    differentiable_dtype, grad_accumulator)
from .nodes import FormulaNode, bind, node_class
from .view_history import CopySlices, as_strided_node
from ..ops.conversion import copy_op, to_copy_op

_AG = K.AUTOGRAD
_state = K.state


def make_handler(op, bit):
    d = op.derivative
    f = d if d.__class__ is Derivative else None
    # an op with a formula that writes only buffers autograd does not track (batch norm's
    # running statistics, never argument 0) records like any formula op
    if op.mutates and (f is None or 0 in op.mutates):
        return _inplace_handler(op) if f is None else _direct_inplace_handler(op, f)
    if f is not None:
        return _formula_handler(op, f)
    if d is NOT_DIFFERENTIABLE:
        return _nondiff_handler(op)
    if op.composite is not None:
        return _composite_handler(op)
    return _not_implemented_handler(op)


def run_below(op, args, kwargs):
    st = _state
    prev = st.masks
    st.masks = (prev[0], prev[1] & ~_AG)
    try:
        return op(*args, **kwargs)
    finally:
        st.masks = prev


# -- edges --------------------------------------------------------------------------------------
def gradient_edge(t):
    """``(node, input_nr)`` where the gradient of ``t`` goes, or None."""
    ag = t._ag
    if ag is None or not ag.requires_grad:
        return None
    fn = ag.grad_fn
    if fn is not None:
        if ag.view_version is not None and ag.view_version != t._storage.version:
            fn = regenerate_view(t)
        return (fn, ag.output_nr)
    return (grad_accumulator(t), 0)


def view_base(t):
    """The tensor whose history an in-place op on view ``t`` must rebase, or None."""
    ag = t._ag
    if ag is not None and ag.view_version is not None:
        return ag.base
    return _graph.root_view_base(t)


def regenerate_view(t):
    """The view's grad_fn after its storage changed in place: an as_strided of its base."""
    ag = t._ag
    node = as_strided_node(ag.base, gradient_edge(ag.base), t._shape, t._stride, t._offset)
    ag.grad_fn = node
    ag.output_nr = 0
    ag.view_version = t._storage.version
    return node


# -- formula ops --------------------------------------------------------------------------------
def _formula_handler(op, f):
    spec = bind(op, f)
    slots = spec.slots
    diff_out = spec.diff_out
    if any(is_list for _, is_list in slots):
        list_cls = None if callable(f.name) else node_class(spec, None)

        def handler(*args, **kwargs):
            return record(spec, args, run_below(op, args, kwargs), slots, diff_out,
                          cls=list_cls)
        return handler

    # the common case, in one pass: no Tensor[] arguments
    slot_idx = tuple(i for i, _ in slots)
    nargs = len(spec.arg_names)
    save_pos = tuple(spec.save_pos)
    complex_ok = f.complex_ok
    cls = None if callable(f.name) else node_class(spec, None)
    # one tensor output, no setup, no saved result, not a view: attached right here
    simple = spec.n_out == 1 and f.setup is None and not spec.save_result and not f.is_view \
        and diff_out[0]
    anomaly_on = anomaly.enabled

    def handler(*args, **kwargs):
        st = _state
        prev = st.masks
        st.masks = (prev[0], prev[1] & ~_AG)
        try:
            out = op(*args, **kwargs)
        finally:
            st.masks = prev
        edges = []
        metas = []
        needs = [False] * nargs
        req = False
        na = len(args)
        for i in slot_idx:
            x = args[i] if i < na else None
            if x.__class__ is Tensor or isinstance(x, Tensor):
                ag = x._ag
                if ag is not None and ag.requires_grad:
                    fn = ag.grad_fn
                    if fn is not None and ag.view_version is None:
                        edges.append((fn, ag.output_nr))
                    else:
                        edges.append(gradient_edge(x))
                    d = x.dtype
                    metas.append((x._shape, d, x.device))
                    needs[i] = True
                    req = True
                    if d.category == COMPLEX and not complex_ok:
                        _complex_error(spec)
                    continue
            edges.append(None)
            metas.append(None)
        if not req:
            return out
        saved = list(args)
        for i in slot_idx:
            if i < na and saved[i].__class__ is Tensor:
                saved[i] = None
        for i, c in save_pos:
            if i < na and (c is None or needs[c]):
                a = args[i]
                if a.__class__ is Tensor or isinstance(a, Tensor):
                    saved[i] = SavedTensor(a)
        node = (cls or node_class(spec, args))(edges)
        node._metas = metas
        node._spec = spec
        node._needs = needs
        node._args = saved
        if simple and out.__class__ is Tensor and out._ag is None and \
                out.dtype.category >= 2 and not anomaly_on():
            if getattr(out, "_view_base", None) is not None:
                del out._view_base  # a view of a temporary inside the op: a new tensor here
            out._ag = AutogradMeta(True, node, 0)
            out._ks |= _AG
            node._info = None
            return out
        return _outputs(spec, node, args, out, diff_out)

    handler.__name__ = f"autograd_{op.name}"
    if _fastpath.C is not None:
        # the same handler, compiled (csrc/record.c); it also does what _outputs does for a
        # one-output op (its setup, its saved result, a view's base)
        one_output = spec.n_out == 1 and diff_out[0]
        return _fastpath.C.FormulaRecorder(op, spec, cls, slot_idx, nargs, save_pos, complex_ok,
                                          one_output, bool(spec.save_result), tuple(diff_out),
                                          handler, handler.__name__, f.setup, f.is_view)
    return handler


def _complex_error(spec):
    raise NotImplementedError(f"the derivative of '{spec.op_name}' does not support complex "
                              f"inputs yet")


def collect(spec, args, slots):
    """Edges and input metadata of the tensor arguments; None when nothing requires grad."""
    edges = []
    metas = []
    any_req = False
    cplx = False
    for i, is_list in slots:
        a = args[i] if i < len(args) else None
        for x in (a if is_list else (a,)):
            if isinstance(x, Tensor) and x._ag is not None and x._ag.requires_grad:
                edges.append(gradient_edge(x))
                metas.append((x._shape, x.dtype, x.device))
                any_req = True
                if x.dtype.category == COMPLEX:
                    cplx = True
            else:
                edges.append(None)
                metas.append(None)
    if not any_req:
        return None
    if cplx and not spec.formula.complex_ok:
        raise NotImplementedError(f"the derivative of '{spec.op_name}' does not support complex "
                                  f"inputs yet")
    return edges, metas


def record(spec, args, out, slots, diff_out, edges_metas=None, cls=None):
    em = edges_metas or collect(spec, args, slots)
    if em is None:
        return out
    edges, metas = em
    node = (cls or node_class(spec, args))(edges)
    node._metas = metas
    node._spec = spec
    needs = spec.needs(args, edges)
    node._needs = needs
    node._args = spec.saved_args(args, needs)
    return _outputs(spec, node, args, out, diff_out)


def _outputs(spec, node, args, out, diff_out):
    """Attach the op's differentiable outputs to ``node``; save the result if asked."""
    f = spec.formula
    node._info = f.setup(*args) if f.setup is not None else None
    multi = spec.n_out != 1
    outs = out if multi else (out,)
    if spec.list_out:
        diff_out = diff_out * len(outs)
    fixed = None
    is_view = f.is_view
    for k, o in enumerate(outs):
        if diff_out[k] and isinstance(o, Tensor) and o.dtype.category >= FLOATING:
            if o._ag is not None:  # the op handed back an input or a tensor already in a graph
                o = alias(o)
                fixed = fixed or list(outs)
                fixed[k] = o
            elif not is_view and getattr(o, "_view_base", None) is not None:
                # a view of a temporary inside the op's implementation: to autograd it is a
                # new tensor, so an in-place op on it must rebase it, not that temporary
                del o._view_base
            o._ag = AutogradMeta(True, node, k)
            o._ks |= _AG
    if fixed is not None:
        outs = tuple(fixed)
        out = outs if multi else outs[0]
    keep = spec.save_result
    if keep:
        node._result = tuple(SavedTensor(o, k) if isinstance(o, Tensor) and
                             (keep is True or k in keep) else None
                             for k, o in enumerate(outs)) if multi else SavedTensor(out, 0)
    if multi:
        node._out_meta = tuple((o._shape, o.dtype, o.device) if isinstance(o, Tensor) else None
                               for o in outs)
    if is_view:
        src = args[0]
        sag = src._ag
        base = sag.base if sag.view_version is not None else src
        for o in outs:
            if isinstance(o, Tensor) and o._ag is not None:
                o._ag.base = base
                o._ag.view_version = o._storage.version
    if anomaly.enabled():
        node.extras().trace = traceback.format_stack()[:-3]
    return out


if _fastpath.C is not None:
    _fastpath.C.install_autograd(AutogradMeta, SavedTensor, FormulaNode, _graph._seq, _outputs,
                                 gradient_edge, node_class, _complex_error, anomaly._local,
                                 _AG, COMPLEX, FLOATING)
    collect_reference = collect
    collect = _fastpath.C.collect   # the same function, compiled (csrc/record.c)


# -- ops without their own formula --------------------------------------------------------------
def _nondiff_handler(op):
    def handler(*args, **kwargs):
        return run_below(op, args, kwargs)
    return handler


def _attach_not_implemented(op, args, out, only_missing=False):
    multi = isinstance(out, (tuple, list))
    outs = list(out) if multi else [out]
    todo = [k for k, o in enumerate(outs) if isinstance(o, Tensor) and
            differentiable_dtype(o.dtype) and not (only_missing and o.requires_grad)]
    if not todo:
        return out
    edges = [gradient_edge(t) for t in dispatcher.tensors_in(args)]
    if not any(e is not None for e in edges):
        return out
    node = NotImplementedNode(edges, op.name, len(outs))
    for k in todo:
        o = outs[k]
        if o._ag is not None:
            o = outs[k] = alias(o)
        attach(o, node, k)
    if not multi:
        return outs[0]
    return tuple(outs) if isinstance(out, tuple) else outs


def _not_implemented_handler(op):
    def handler(*args, **kwargs):
        return _attach_not_implemented(op, args, run_below(op, args, kwargs))
    return handler


def _composite_handler(op):
    composite = op.composite

    def handler(*args, **kwargs):
        # decomposed above autograd: the inner ops record themselves. An output that should carry
        # a gradient but doesn't (the composite left ember ops) gets a node that raises.
        return _attach_not_implemented(op, args, composite(*args, **kwargs), only_missing=True)
    return handler


# -- in-place ops -------------------------------------------------------------------------------
def check_inplace_target(t, what="an in-place operation"):
    ag = t._ag
    if ag is not None:
        if ag.requires_grad and ag.grad_fn is None and ag.view_version is None:
            raise RuntimeError(f"a leaf Variable that requires grad is being used in {what}.")
        if ag.view_version is not None:
            b = ag.base._ag
            if b is not None and b.requires_grad and b.grad_fn is None:
                raise RuntimeError(f"a view of a leaf Variable that requires grad is being used "
                                   f"in {what}.")
            return
    if getattr(t, "_view_base", None) is not None:
        root = view_base(t)
        if root is not None and root.requires_grad:
            # the view is not in the graph, so its base's history can't be rewritten
            raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                               "with grad mode enabled. Given that this use case is ambiguous "
                               "and error-prone, it is forbidden. You can clarify your code by "
                               "moving both the view and the inplace either both inside the "
                               "no_grad block (if you don't want the inplace to be tracked) or "
                               "both outside (if you want the inplace to be tracked).")


def _functional_twin(op):
    """The out-of-place op an in-place op is recorded through: ``op.functional``, else the op
    named without the trailing underscore; its arguments mirror the in-place op's."""
    twin = op.functional or dispatcher.find_op(op.name[:-1])
    if twin is None or (twin.derivative in (None, NOT_DIFFERENTIABLE) and twin.composite is None):
        return None
    if len(twin.schema.arguments) != len(op.schema.arguments):
        raise RuntimeError(f"autograd: in-place op {op.schema} does not mirror its functional "
                           f"twin {twin.schema}")
    return twin


def _inplace_handler(op):
    twin = _functional_twin(op)
    # an in-place comparison (eq_) writes values with no derivative: zero gradient
    twin_op = dispatcher.find_op(op.name[:-1])
    nondiff = twin_op is not None and twin_op.derivative is NOT_DIFFERENTIABLE
    twin_spec = None
    if twin is not None and twin.derivative.__class__ is Derivative:
        twin_spec = bind(twin, twin.derivative)

    def handler(*args, **kwargs):
        target = args[0]
        check_inplace_target(target)
        if twin is None:
            edges = [gradient_edge(t) for t in dispatcher.tensors_in(args)]
            out = run_below(op, args, kwargs)
            if differentiable_dtype(target.dtype) and any(e is not None for e in edges):
                rebase(target, ZeroGradNode(op.name) if nondiff else
                       NotImplementedNode(edges, op.name, 1))
            return out
        fargs = list(args)
        # the twin must not save the target itself: its value is about to be overwritten (a
        # composite twin may save anything, so it always gets the copy)
        if twin_spec is None or twin_spec.saves_self(fargs):
            fargs[0] = history_clone(target)
        r = twin(*fargs, **kwargs)
        run_below(copy_op, (target, r), {})
        if r._ag is not None and r._ag.grad_fn is not None:
            rebase(target, r._ag.grad_fn)
        return target

    return handler


def _direct_inplace_handler(op, f):
    """In-place ops with a formula of their own, recorded directly (PyTorch's in-place entries in
    derivatives.yaml): those that overwrite their target without reading it (copy_, fill_,
    uniform_), and those whose formula reads the target's value before the write (``self``: a
    copy is saved, PyTorch's ``original_self``) or after it (``result``: the target itself, as
    ``leaky_relu_`` and ``elu_`` do, so a later in-place write is caught at backward)."""
    spec = bind(op, f)
    slots = spec.slots

    def handler(*args, **kwargs):
        target = args[0]
        check_inplace_target(target)
        em = collect(spec, args, slots)
        if em is None:
            return run_below(op, args, kwargs)
        rec_args = args
        if spec.saves_self(args):
            rec_args = (history_clone(target),) + tuple(args[1:])
        out = run_below(op, args, kwargs)
        probe = alias(target)
        record(spec, rec_args, probe, slots, (True,), em)
        node = probe._ag.grad_fn if probe._ag is not None else None
        if node is not None:
            if spec.save_result:
                # every in-place API function bumps the version once the op returns: the saved
                # result is the target as it will be then
                node._result = SavedTensor(probe, 0, version=target._storage.version + 1)
            rebase(target, node)
        return out

    return handler


def history_clone(t):
    """A copy of ``t``'s current value that stands for it in the graph (same grad_fn)."""
    c = run_below(to_copy_op, (t, t.dtype), {})
    e = gradient_edge(t)
    if e is not None:
        c._ag = AutogradMeta(True, e[0], e[1])
        c._ks |= _AG
    return c


def rebase(t, node):
    """``t`` now holds the output of ``node``; if ``t`` is a view, its base's history is
    rewritten through CopySlices and ``t`` becomes a view of the new base history."""
    base = view_base(t)
    if base is None:
        attach(t, node, 0)
        t._ag.view_version = None
        return
    base_edge = gradient_edge(base) if base.requires_grad else None
    cs = CopySlices(base, t, node, base_edge)
    attach(base, cs, 0)
    ag = t._ag
    if ag is None:
        t._ag = ag = AutogradMeta(True)
    ag.requires_grad = True
    ag.base = base
    ag.view_version = -1   # stale: the next use regenerates it from the base
    t._ks |= _AG
    regenerate_view(t)
