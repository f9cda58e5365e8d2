"""The ``BATCHED`` dispatch key's handler: ``ember.func``'s layer of the dispatcher.

An op reaches it when one of its tensors is a ``BatchedTensor`` or carries a tangent, or when a
vmap is active (the key is then included for every op). Per call it finds the highest level it
can see among the arguments (levels above the thread's ceiling belong to transforms already being
handled further up) and handles that level:

* a tangent level above every batch level: forward-mode AD (``_forward.py``): the op runs one
  level down, its ``jvp`` facet gives the output's tangent;
* a batch level: if a grad transform above that level tracks one of its wrappers (``_ag`` on a
  ``BatchedTensor``), autograd records the op on the wrappers first; then the op's ``batch_rule``
  runs on the physical tensors (``_value``, batch in dim 0) one level down and its outputs are
  wrapped again. An op without a rule decomposes if it is a core composite that is not a view,
  else runs the fallback: once per example, stacked, with a warning naming the op;
* nothing visible: a random op inside a vmap follows the vmap's ``randomness``; any other op
  runs below this key.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch import keys as K
from ..dispatch import levels as _levels
from ._batched import BatchedTensor, make_batched, move_bdim_to_front
from ._calls import _decomposes, _positional
from .._warn import user_stacklevel

_BATCHED = K.BATCHED
_AG = K.AUTOGRAD
_kstate = K.state
_lstate = _levels.state


class VmapFallbackWarning(UserWarning):
    """An op without a batching rule ran once per example under vmap (shown once per op)."""


# ops that ran on the fallback (every op, even after its warning was shown), and the sets of
# whoever is recording them right now (conformance's runner lists them per run)
fallback_ops: set = set()
recorders: list = []
_warned: set = set()


def make_handler(op, bit):
    return _Handler(op)


class _Handler:
    __slots__ = ("op", "_autograd", "_tensor_pos", "_list_pos", "_factory_device")

    def __init__(self, op):
        self.op = op
        self._autograd = None
        self._tensor_pos = op._tensor_pos
        self._list_pos = op._list_pos or ()
        self._factory_device = None   # ops that name their device (factories): its position
        if op.schema.typed:
            for i, a in enumerate(op.schema.arguments):
                if a.type.startswith("Device"):
                    self._factory_device = i

    def __call__(self, *args, **kwargs):
        op = self.op
        ceiling = _lstate.ceiling
        top_b = top_f = 0
        ag_wrapper = False
        for t in _tensors(self, args):
            if t.__class__ is BatchedTensor:
                lvl = t._level
                if lvl > top_b and lvl <= ceiling:
                    top_b = lvl
            fw = getattr(t, "_fw", None)
            if fw:
                for lvl in fw:
                    if top_f < lvl <= ceiling:
                        top_f = lvl
        if top_f > top_b:
            return _forward.forward_level(op, args, kwargs, top_f)
        if top_b:
            if _kstate.masks[1] & _AG and _kstate.grad_enabled:
                for t in _tensors(self, args):
                    if t.__class__ is BatchedTensor and t._level == top_b:
                        ag = t._ag
                        if ag is not None and ag.requires_grad:
                            ag_wrapper = True
                            break
            if ag_wrapper:
                h = self._autograd
                if h is None:
                    h = self._autograd = dispatcher._functionality_handlers[_AG](op, _AG)
                return h(*args, **kwargs)
            return batch_level(op, args, kwargs, top_b)
        rule = op.batch_rule
        if rule is not None and getattr(rule, "is_random", False):
            layer = _levels.innermost_vmap()
            if layer is not None:
                if layer.randomness == "error":
                    raise RuntimeError(_batching.RANDOMNESS_ERROR)
                if layer.randomness == "different":
                    return batch_level(op, args, kwargs, layer.level)
                with _levels.Ceiling(layer.level - 1):
                    return self(*args, **kwargs)
        return self._below(args, kwargs)

    def _below(self, args, kwargs):
        """Run the op under this key (nothing here is batched or dual at a visible level)."""
        st = _kstate
        prev = st.masks
        st.masks = (prev[0] & ~_BATCHED, prev[1] & ~_BATCHED)
        try:
            i = self._factory_device
            if i is not None and i < len(args) and next(_tensors(self, args), None) is None:
                return self.op.on(args[i], *args, **kwargs)
            return self.op(*args, **kwargs)
        finally:
            st.masks = prev


def _tensors(handler, args):
    pos = handler._tensor_pos
    n = len(args)
    if pos is None:  # untyped schema (a custom op): any argument may hold tensors
        yield from dispatcher.tensors_in(args)
        return
    for i in pos:
        if i < n:
            a = args[i]
            if isinstance(a, Tensor):
                yield a
    for i in handler._list_pos:
        if i < n and args[i] is not None:
            for x in args[i]:
                if isinstance(x, Tensor):
                    yield x


# -- one batch level ----------------------------------------------------------------------------
def _unwrap(a, level):
    if a.__class__ is BatchedTensor and a._level == level:
        return a._value, 0
    return a, None


def physical_grad_mode(level) -> bool:
    """Grad mode for the tensors under vmap ``level``: the mode the first grad transform above
    the level was entered in (a grad inside vmap records on the wrappers; what lies below keeps
    the caller's mode), else the thread's mode."""
    g = _levels.first_grad_above(level)
    return g.prev_grad_enabled if g is not None else _kstate.grad_enabled


def batch_level(op, args, kwargs, level):
    layer = _levels.layer_at(level)
    if layer is None:
        raise RuntimeError(f"vmap: {op.name}: got a batched tensor from a vmap call that has "
                           f"already returned (a BatchedTensor escaped its vmap, e.g. stored in a "
                           f"global or a closure); return it from the vmapped function instead")
    args = _positional(op, args, kwargs)
    if op.batch_rule is None and _decomposes(op):
        return op.composite(*args)
    phys = []
    bdims = []
    # a batch that is one example repeated (stride 0: an input broadcast over the batch, as grad
    # does under vmap) is passed unbatched, so e.g. a broadcast weight stays one GEMM operand
    demote = not op.mutates and not getattr(op.batch_rule, "is_random", False)
    demoted = False
    for a in args:
        if isinstance(a, Tensor):
            v, d = _unwrap(a, level)
            if d is not None and demote and v._stride[0] == 0 and v._shape[0] > 1:
                d, demoted = _REPEATED, True   # made a first-example view below
            phys.append(v)
            bdims.append(d)
        elif isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
            pairs = [_unwrap(x, level) if isinstance(x, Tensor) else (x, None) for x in a]
            phys.append(type(a)(p for p, _ in pairs))
            bdims.append(tuple(d for _, d in pairs))
        else:
            phys.append(a)
            bdims.append(None)
    st = _kstate
    prev_masks, prev_enabled = st.masks, st.grad_enabled
    enabled = physical_grad_mode(level)
    st.grad_enabled = enabled
    st.masks = (prev_masks[0], (prev_masks[1] | _AG) if enabled else (prev_masks[1] & ~_AG))
    ls = _lstate
    prev_ceiling, prev_layer = ls.ceiling, ls.rule_layer
    ls.ceiling = min(prev_ceiling, level - 1)
    ls.rule_layer = layer
    try:
        if demoted:   # in the level's grad mode: the view is recorded like the rule's ops
            for i, d in enumerate(bdims):
                if d is _REPEATED:
                    phys[i], bdims[i] = _first_example(phys[i]), None
        rule = op.batch_rule
        if demoted and all(d is None or (isinstance(d, tuple) and all(x is None for x in d))
                           for d in bdims):
            outs = op(*phys)   # every batched input was a repeated example: so is the output
            return _wrap_outputs(op, args, phys, _repeat(outs, layer.batch_size), 0, level)
        if rule is None:
            outs, out_dims = fallback(op, tuple(phys), tuple(bdims), layer)
        else:
            outs, out_dims = rule(tuple(phys), tuple(bdims), layer)
        return _wrap_outputs(op, args, phys, outs, out_dims, level)
    finally:
        ls.ceiling, ls.rule_layer = prev_ceiling, prev_layer
        st.masks = prev_masks
        st.grad_enabled = prev_enabled


_REPEATED = object()   # marks a batch whose examples are one example repeated (stride 0)


def _first_example(v):
    return _views.select_op(v, 0, 0)


def _repeat(outs, size):
    """Outputs computed once for a batch of identical examples, broadcast over the batch."""
    if isinstance(outs, (tuple, list)):
        return type(outs)(_batching.materialize(o, None, size) if isinstance(o, Tensor) else o
                          for o in outs)
    return _batching.materialize(outs, None, size) if isinstance(outs, Tensor) else outs


def _wrap_outputs(op, args, phys, outs, out_dims, level):
    multi = isinstance(outs, (tuple, list))
    if not multi:
        return _wrap_one(op, args, phys, outs, out_dims, level)
    dims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(outs)
    wrapped = [_wrap_one(op, args, phys, o, d, level) for o, d in zip(outs, dims)]
    return type(outs)(wrapped) if isinstance(outs, tuple) else wrapped


def _wrap_one(op, args, phys, out, dim, level):
    if not isinstance(out, Tensor) or dim is None:
        return out
    for i in op.mutates:  # an in-place op hands back its (wrapped) target
        if i < len(phys) and out is phys[i]:
            return args[i]
    if dim != 0:
        out = move_bdim_to_front(out, dim)
    return make_batched(out, level)


# -- the fallback: once per example -------------------------------------------------------------
def fallback(op, args, bdims, layer):
    name = op.name
    fallback_ops.add(name)
    for r in recorders:
        r.add(name)
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for {name}. It runs once per example of the batch and the "
                      f"results are stacked (ember.func.vmap fallback; shown once per op).",
                      VmapFallbackWarning, stacklevel=user_stacklevel())
    _batching.inplace_check(op, args, bdims)
    return _batching.per_example(op, args, bdims, layer.batch_size)


def register() -> None:
    dispatcher.register_functionality(_BATCHED, make_handler)
    _levels.set_fallback(fallback)


from ..ops import _batching, views as _views  # noqa: E402 - ops load first
from . import _forward  # noqa: E402 - it imports this module's helpers
