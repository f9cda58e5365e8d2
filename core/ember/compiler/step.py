"""Whole training steps (``mode="reduce-overhead"``): forward, ``loss.backward()`` and the
optimizer step captured as one graph and replayed with no autograd recording at all.

While such a capture runs, ``loss.backward()`` is allowed: the engine runs the derivative
formulas eagerly and the TRACER key records their ops like any other. What autograd does
outside ops — adding a gradient into a leaf's ``.grad``, and ``p.grad = None`` from
``zero_grad`` — goes through ``StepRecorder`` (``_tensor._grad_recorders``), which does it and
records it as an ``AccumulateGrad``/``SetGrad`` node, so a replay updates ``.grad`` the same
way. The optimizer's in-place ops (foreach/fused updates of parameters and momentum buffers)
are ordinary captured ops that write the same tensors again on replay.

A step is only replayable when it is the same program every time: Python numbers computed from
state that changes per step (an optimizer's step count in a bias correction, a learning-rate
schedule read as a float) would be frozen into the graph. So the first call runs eagerly (the
optimizer creates its state), the second and third are captured, and the step is compiled only
when both captures are the same graph; otherwise it runs eagerly and ``explain`` names the first
difference. A backward that reads a tensor no captured op made (see ``aot.py``) also keeps the
step eager: replaying it would read the capture run's value."""
from __future__ import annotations

from .. import _tensor
from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from .graph import Node, Ref


class AccumulateGrad:
    """Graph node: add ``g`` into ``leaf.grad`` (a fresh ``.grad`` when there was none) and
    return the tensor ``.grad`` holds afterwards. ``owned``: ``g`` is used by no other node,
    so it may become ``.grad`` without a copy (autograd's rule for contiguous gradients)."""
    name = "accumulate_grad"
    mutates = True

    def __call__(self, leaf, g, owned=False):
        ag = leaf._ag
        old = ag.grad
        if old is None:
            new = g if owned and g.is_contiguous() else g.clone()
        else:
            old.add_(g)
            new = old
        ag.grad = new
        return new


class SetGrad:
    """Graph node: ``leaf.grad = value`` (``zero_grad`` sets None)."""
    name = "set_grad"
    mutates = True

    def __call__(self, leaf, value):
        leaf._ag.grad = value
        return None


ACCUMULATE_GRAD = AccumulateGrad()
SET_GRAD = SetGrad()


class StepRecorder:
    """Installed in ``_tensor._grad_recorders`` while a step capture runs."""

    def __init__(self, cap):
        self.cap = cap
        self.saw_backward = False
        self.thread = cap.thread

    def __enter__(self):
        _tensor._grad_recorders.append(self)
        return self

    def __exit__(self, *exc):
        _tensor._grad_recorders.remove(self)
        return False

    def accumulate(self, leaf, g):
        self.saw_backward = True
        cap = self.cap
        with cap.paused(), no_grad():
            new = ACCUMULATE_GRAD(leaf, g)
        _append(cap, ACCUMULATE_GRAD, (cap.ref(leaf), cap.ref(g)), new)

    def set_grad(self, leaf, value):
        cap = self.cap
        _append(cap, SET_GRAD, (cap.ref(leaf), cap.ref(value) if value is not None else None),
                None)


def _append(cap, op, args, out):
    index = len(cap.graph.nodes)
    meta = (tuple(out.shape), out.dtype, out.device) if isinstance(out, Tensor) else None
    cap.graph.nodes.append(Node(op, args, {}, meta))
    if isinstance(out, Tensor):
        # a new object, or the old .grad updated in place: either way later reads of this
        # tensor (the optimizer's) read this node's value
        cap.refs[id(out)] = Ref("node", index)
        cap.alive.append(out)


def mark_owned(graph):
    """Let each AccumulateGrad store its gradient without a copy when nothing else reads it."""
    release = graph.release_plan()
    freed_at = {j: i for i, js in enumerate(release) for j in js}
    for i, node in enumerate(graph.nodes):
        if node.op is ACCUMULATE_GRAD:
            g = node.args[1]
            owned = g.kind == "node" and g.item is None and freed_at.get(g.index) == i
            node.args = node.args[:2] + (owned,)


def difference(a, b):
    """None when captures ``a`` and ``b`` are the same program, else what differs."""
    if len(a.nodes) != len(b.nodes):
        return f"the step ran {len(a.nodes)} ops once and {len(b.nodes)} the next time"
    for i, (x, y) in enumerate(zip(a.nodes, b.nodes)):
        if str(x) != str(y):
            return f"op {i} was `{x}` once and `{y}` the next time"
    if len(a.constants) != len(b.constants):
        return "the step read a different number of tensors from outside"
    for i, (x, y) in enumerate(zip(a.constants, b.constants)):
        if x is not y and not _same_value(x, y):
            return (f"constant c{i} ({list(x.shape)} {x.dtype}) is a different tensor with "
                    f"other values each step (a tensor made from Python data that changes)")
    if str(a.output) != str(b.output):
        return "the step returned a different structure"
    return None


def _same_value(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        return False
    with no_grad():
        return bool((x == y).all()) if x.numel() else True
