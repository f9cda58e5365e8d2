"""The autograd graph: per-tensor metadata, saved tensors, nodes and leaf accumulators.

A node is one recorded op's backward. ``next_edges[i]`` is ``(node, input_nr)`` for the op's i-th
tensor input (None where that input doesn't require grad); ``apply(grads)`` takes one gradient
per forward output and returns one per edge. Nodes hold their inputs' saved values through
``SavedTensor``, which checks the version counter when unpacked and can be freed after backward.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import NamedTuple

from .. import _tensor
from .._dtype import FLOATING
from .._tensor import Tensor
from ..dispatch.facets import camel
from ..dispatch.grad_mode import no_grad
from ..ops._util import _dtype_title
from ..ops.conversion import to_copy_op
from ..utils.hooks import RemovableHandle
from ..dispatch import keys as K
from . import saved_hooks as _saved_hooks
from ..ops import _primitives

_AG = K.AUTOGRAD
_seq = itertools.count()


class AutogradMeta:
    """What a tensor taking part in autograd carries (``Tensor._ag``).

    ``view_version`` is set only on views recorded by autograd: the storage version when the
    view's ``grad_fn`` was made. When they differ, an in-place op went through the shared
    storage and the view's history is regenerated from its ``base``.
    """

    __slots__ = ("requires_grad", "grad_fn", "output_nr", "grad", "hooks", "retains_grad", "acc",
                 "base", "view_version", "post_acc_hooks")

    def __init__(self, requires_grad=False, grad_fn=None, output_nr=0):
        self.requires_grad = requires_grad
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        self.grad = None
        self.hooks = None
        self.retains_grad = False
        self.acc = None
        self.base = None
        self.view_version = None
        self.post_acc_hooks = None


def differentiable_dtype(d) -> bool:
    return d.category >= FLOATING


def alias(t: Tensor) -> Tensor:
    """A new tensor object over the same memory, outside autograd and not marked as a view."""
    if t.__class__ is not Tensor:
        wrapper_alias = getattr(type(t), "_alias", None)  # ember.func's BatchedTensor
        if wrapper_alias is not None:
            return wrapper_alias(t)
    return Tensor._make(t._storage, t._shape, t._stride, t._offset, t.dtype, t.device, t._native)


def root_view_base(t: Tensor):
    """The tensor at the end of ``t``'s chain of view bases (``Tensor._base``), or None when
    ``t`` is not a view."""
    b = getattr(t, "_view_base", None)
    if b is None:
        return None
    while True:
        up = getattr(b, "_view_base", None)
        if up is None:
            return b
        b = up


def attach(t: Tensor, node, output_nr: int) -> None:
    """Make ``t`` an output of ``node``."""
    ag = t._ag
    if ag is None:
        t._ag = ag = AutogradMeta(True, node, output_nr)
    else:
        ag.requires_grad = True
        ag.grad_fn = node
        ag.output_nr = output_nr
    t._ks |= _AG


def tensor_desc(t: Tensor) -> str:
    dev = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"[ember.{dev}{_dtype_title(t.dtype)}Tensor {list(t._shape)}]"


# -- saved tensors ------------------------------------------------------------------------------
_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An op's own output is kept as a detached alias (holding the output itself would make a
    reference cycle output -> node -> output); unpacking re-attaches it to the node when the
    backward itself is being recorded (create_graph).
    """

    __slots__ = ("data", "version", "output_nr", "origin", "hooked")

    def __init__(self, t: Tensor, output_nr=None, version=None):
        self.version = t._storage.version if version is None else version
        self.output_nr = output_nr
        self.hooked = None
        if output_nr is None:
            self.data = t
            ag = t._ag
            # the node itself: its name is only needed for an error message
            self.origin = None if ag is None or ag.grad_fn is None else \
                (ag.grad_fn, ag.output_nr)
        else:
            self.data = alias(t)
            self.origin = None
        if _saved_hooks.in_use:
            hooks = _saved_hooks.current()
            if hooks is not None:
                self._pack(t, hooks)

    def _pack(self, t, hooks):
        """Keep ``pack_hook(t)`` instead of ``t``, with the edge the unpacked tensor takes
        when backward is recorded (torch's SavedVariable with hooks)."""
        pack, unpack = hooks
        before = t._storage.version
        with no_grad():
            packed = pack(t)
        if t._storage.version != before:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as "
                "input to pack hook cannot be modified by in-place operations as this can lead "
                "to unexpected side-effects. Please open an issue if you need to perform "
                "in-place operations on the input to a pack hook.")
        edge = None
        ag = t._ag
        if self.output_nr is None and ag is not None and ag.requires_grad:
            edge = (ag.grad_fn, ag.output_nr) if ag.grad_fn is not None else \
                (grad_accumulator(t), 0)
        self.data = None
        self.hooked = (unpack, packed, edge)

    def _unpack_hooked(self, node):
        unpack, packed, edge = self.hooked
        t = unpack(packed)
        if not isinstance(t, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but "
                            f"got result of type {type(t).__name__}")
        if self.output_nr is not None:
            edge = (node, self.output_nr)
        if edge is not None and K.state.grad_enabled:
            t = alias(t)
            attach(t, edge[0], edge[1])
        return t

    def unpack(self, node):
        d = self.data
        if d is None:
            if self.hooked is not None:   # the version check is skipped with hooks, as in torch
                return self._unpack_hooked(node)
            raise RuntimeError(_FREED)
        if d._storage.version != self.version:
            origin = self.origin
            if self.output_nr is not None:
                origin = (node.name(), self.output_nr)
            name = origin[0] if origin is None or isinstance(origin[0], str) else \
                origin[0].name()
            where = "" if origin is None else f", which is output {origin[1]} of {name},"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {tensor_desc(d)}{where} is at version "
                f"{d._storage.version}; expected version {self.version} instead. Hint: enable "
                f"anomaly detection to find the operation that failed to compute its gradient, "
                f"with ember.autograd.set_detect_anomaly(True).")
        if self.output_nr is not None and K.state.grad_enabled:
            out = alias(d)
            attach(out, node, self.output_nr)
            fw = getattr(d, "_fw", None)  # forward-AD tangents of the saved output
            if fw:
                out._fw = fw
                out._ks |= K.BATCHED
            return out
        return d

    def free(self):
        self.data = None
        self.hooked = None


class _HookDict(dict):
    """A dict that can be weakly referenced (for RemovableHandle)."""
    __slots__ = ("__weakref__",)


def add_hook(container: _HookDict, fn) -> RemovableHandle:
    handle = RemovableHandle(container)
    container[handle.id] = fn
    return handle


class _Extras:
    """What few nodes carry (hooks, metadata, an anomaly-mode traceback), kept off the node so
    recording and the engine only test one attribute."""

    __slots__ = ("pre_hooks", "hooks", "tensor_pre_hooks", "retain_hooks", "metadata", "trace")

    def __init__(self):
        self.pre_hooks = None
        self.hooks = None
        self.tensor_pre_hooks = None
        self.retain_hooks = None
        self.metadata = None
        self.trace = None


class Node:
    """Base of every backward node; ``name()`` is the class name (``MulBackward0``)."""

    __slots__ = ("next_edges", "seq", "_x", "__weakref__")

    def __init__(self, next_edges=()):
        self.next_edges = next_edges
        self.seq = next(_seq)
        self._x = None

    def extras(self) -> _Extras:
        x = self._x
        if x is None:
            x = self._x = _Extras()
        return x

    def name(self) -> str:
        return type(self).__name__

    #: positions of next_edges torch's node has no edge for (a Scalar overload's number)
    _scalar_edges = ()

    @property
    def next_functions(self):
        hidden = self._scalar_edges
        return tuple((None, 0) if e is None else e for k, e in enumerate(self.next_edges)
                     if k not in hidden)

    @property
    def metadata(self) -> dict:
        x = self.extras()
        if x.metadata is None:
            x.metadata = {}
        return x.metadata

    num_outputs = 1  # forward outputs = gradients this node receives

    def apply(self, grads):
        raise NotImplementedError

    def release(self):
        """Free saved values once a backward without retain_graph went through."""

    def __call__(self, *grads):
        return tuple(self.apply(list(grads)))

    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` after the node ran; may return new grad_inputs."""
        x = self.extras()
        if x.hooks is None:
            x.hooks = _HookDict()
        return add_hook(x.hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs)`` before the node runs; may return new grad_outputs."""
        x = self.extras()
        if x.pre_hooks is None:
            x.pre_hooks = _HookDict()
        return add_hook(x.pre_hooks, fn)

    def _tensor_hooks(self, output_nr) -> _HookDict:
        x = self.extras()
        if x.tensor_pre_hooks is None:
            x.tensor_pre_hooks = {}
        d = x.tensor_pre_hooks.get(output_nr)
        if d is None:
            d = x.tensor_pre_hooks[output_nr] = _HookDict()
        return d

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: hooks, then accumulation into ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    def apply(self, grads):
        accumulate(self.variable, grads[0])
        return []


# Guards the two read-modify-writes that concurrent backward passes share: a leaf's one
# AccumulateGrad (two threads recording at once must get the same node, or grad(inputs=leaf)
# looks for an edge the other graph never used) and ``leaf.grad += g`` (torch locks it too).
leaf_lock = threading.RLock()
# the backward pass running on this thread (engine.py sets it): which gradients it owns, so a
# leaf can take them without a copy
_local = threading.local()


def _clone(g):
    return to_copy_op(g, g.dtype)


def accumulate(t: Tensor, g) -> None:
    """Add ``g`` into ``t.grad`` after running ``t``'s hooks (AccumulateGrad's body)."""
    ag = t._ag
    run = getattr(_local, "run", None)
    if ag.hooks:
        for h in list(ag.hooks.values()):
            r = h(g)
            if r is not None:
                g = r
                if run is not None:
                    run.pinned.add(id(g))
    if g is None:
        return
    rec = _tensor._grad_recorders and _tensor._grad_recorder()
    if rec:                          # ember.compile records the accumulation as a step node
        rec.accumulate(t, g)
    else:
        _accumulate(ag, g, run)
    if ag.post_acc_hooks:
        for h in list(ag.post_acc_hooks.values()):
            h(t)


def _accumulate(ag, g, run):
    with leaf_lock:  # backward passes on other threads may accumulate into the same leaf
        old = ag.grad
        if old is None:
            ag.grad = g if run is not None and run.owned(g) else _clone(g)
        elif K.state.grad_enabled or old.requires_grad:
            ag.grad = old + g
        else:
            with no_grad():
                old.add_(g)


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    ag = t._ag
    acc = ag.acc() if ag.acc is not None else None
    if acc is None:
        with leaf_lock:
            acc = ag.acc() if ag.acc is not None else None
            if acc is None:
                acc = AccumulateGrad(t)
                ag.acc = weakref.ref(acc)
    return acc


class NotImplementedNode(Node):
    """Recorded for an op with no derivative: backward through it raises, naming the op."""

    __slots__ = ("op_name", "num_outputs")

    def __init__(self, next_edges, op_name, num_outputs):
        super().__init__(next_edges)
        self.op_name = op_name
        self.num_outputs = num_outputs

    def name(self):
        return "NotImplemented"

    def apply(self, grads):
        raise NotImplementedError(f"the derivative for '{self.op_name}' is not implemented")


class DelayedError(Node):
    """Stands between a once_differentiable backward's results and their inputs."""

    __slots__ = ("msg",)

    def __init__(self, next_edges, msg):
        super().__init__(next_edges)
        self.msg = msg

    def apply(self, grads):
        raise RuntimeError(self.msg)


class ZeroGradNode(Node):
    """The history of a value written by an op with no derivative (``eq_``): no gradient flows
    back through it."""

    __slots__ = ("op_name",)

    def __init__(self, op_name):
        super().__init__(())
        self.op_name = op_name

    def name(self):
        return f"{camel(self.op_name)}Backward0"

    def apply(self, grads):
        return []




# -- torch.autograd.graph's public face ---------------------------------------------------------
class GradientEdge(NamedTuple):
    """Where a tensor's gradient enters the graph: a node and which of its inputs."""
    node: Node
    output_nr: int
    ownership_token: Node | None = None


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge ``tensor``'s gradient flows into (its grad_fn, or its leaf accumulator); usable
    as ``inputs=`` of ``autograd.grad`` even after ``tensor`` is changed in place."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node = tensor.grad_fn    # regenerates a view's history after an in-place change
    return GradientEdge(node if node is not None else grad_accumulator(tensor),
                        tensor.output_nr)


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place write does: saved copies of it then fail their check at backward."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._storage.version += 1


def _grad_fn_or_acc(t):
    return t.grad_fn if t.grad_fn is not None else grad_accumulator(t)


def _current_run():
    run = getattr(_local, "run", None)
    if run is None:
        raise AssertionError("expected this hook to be called inside a backward call")
    return run


class _MultiHandle(RemovableHandle):
    """Removes every per-tensor hook a multi-grad hook registered."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """``mode="all"``: ``fn(grads)`` once per backward, after the gradients of all the
    ``tensors`` this backward computes arrived (None for those it does not). ``mode="any"``:
    ``fn(grad)`` with the first of them to arrive."""
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    if mode == "all":
        grad_fns = [_grad_fn_or_acc(t) for t in tensors]
        pending = {}   # id of the backward run -> [arrived, expected, grads]

        def inner_hook(idx):
            def hook(grad):
                run = _current_run()
                with lock:
                    state = pending.get(id(run))
                    if state is None:
                        expected = sum(map(run.will_execute, grad_fns))
                        state = pending[id(run)] = [0, expected, [None] * len(grad_fns)]
                    state[0] += 1
                    state[2][idx] = grad
                    done = state[0] == state[1]
                    if done:
                        del pending[id(run)]
                if done:
                    fn(state[2])
            return hook

        handles = tuple(t.register_hook(inner_hook(i)) for i, t in enumerate(tensors))
    else:
        ran = weakref.WeakKeyDictionary()   # backward runs that already called fn

        def wrapped(grad):
            run = _current_run()
            with lock:
                if run in ran:
                    return
                ran[run] = True
            fn(grad)

        handles = tuple(t.register_hook(wrapped) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


saved_tensors_hooks = _saved_hooks.saved_tensors_hooks
save_on_cpu = _saved_hooks.save_on_cpu
disable_saved_tensors_hooks = _saved_hooks.disable_saved_tensors_hooks

_primitives.provide(SavedTensor=SavedTensor)   # statistics ops save for their derivative
