"""The backward engine: dependency-ordered execution of the recorded graph.

From the roots, a first pass counts each reachable node's incoming edges; nodes then run when
all their gradients have arrived, the most recently recorded first (PyTorch's order). Gradients
for one node input are summed in ember ops, so with ``create_graph`` the backward itself is
recorded and can be differentiated again. Leaves accumulate into ``.grad``; ``grad()`` captures
the gradients flowing into its inputs instead and runs only the part of the graph that leads to
them. Every gradient is computed on its tensor's device.
"""
from __future__ import annotations

import heapq
import itertools
import weakref
import warnings

from .. import _fastpath, _tensor
from .._dtype import COMPLEX
from .._tensor import Tensor
from ..dispatch import keys as K
from ..ops import _primitives
from . import anomaly
from .graph import AccumulateGrad, GradientEdge, _clone, _local, accumulate
from ..dispatch.grad_mode import _restore, _save, _set_enabled
from ..ops._grad import zeros_like
from ..ops.factories import full_op, tensor
from .record import gradient_edge
from .._warn import user_stacklevel

_AG = K.AUTOGRAD
# set by a running profiler: ``node_observer(node)`` is a context manager around each node's
# backward (the engine's fast path is taken only while it is None)
node_observer = None


class _Run:
    """Per-backward bookkeeping: which gradient tensors may be stored into ``.grad`` as they
    are (produced here and routed once) and which must be copied first."""

    __slots__ = ("counts", "pinned", "callbacks", "roots", "deps", "needed", "__weakref__")

    def __init__(self, roots=()):
        self.counts = {}
        self.pinned = set()
        self.callbacks = []   # queue_callback: run once this backward's graph is done
        # which nodes this backward runs (graph.will_execute): the roots, the nodes they
        # reach (deps' keys) and, for grad(inputs=), only those ``needed`` or captured
        self.roots = roots
        self.deps = None
        self.needed = None

    def will_execute(self, node) -> bool:
        if self.needed is not None and not any(node in part for part in self.needed):
            return False
        return node in self.deps or any(n is node for n, _ in self.roots)

    def owned(self, g) -> bool:
        # a gradient with history (create_graph) is copied too: x.grad must not share a graph
        # node's output with another leaf
        if g._ag is not None or not g.is_contiguous():
            return False
        root = g
        while True:
            up = getattr(root, "_view_base", None)
            if up is None:
                break
            root = up
        for t in (g, root):
            if id(t) in self.pinned:
                return False
            e = self.counts.get(id(t))
            # the weakref tells a gradient routed twice from a new one that reuses a freed id
            if e is not None and e[0] > 1 and e[1]() is t:
                return False
        return True

    def route(self, g) -> None:
        """Count one more place gradient ``g`` was stored."""
        e = self.counts.get(id(g))
        if e is not None and e[1]() is g:
            e[0] += 1
        else:
            self.counts[id(g)] = [1, weakref.ref(g)]


_LEAF_FIRST = -(1 << 62)


def _key(n):
    # leaf accumulators run as soon as they are ready (PyTorch gives them the highest priority)
    return _LEAF_FIRST if n.__class__ is AccumulateGrad else -n.seq


def execute(root_edges, root_grads, *, keep_graph, create_graph, capture_edges=None,
            accumulate_into=None):
    """Run the graph. ``capture_edges``: edges whose incoming gradient is returned (grad()).
    ``accumulate_into``: with captures, the leaves' accumulators that still run (backward with
    inputs=). Returns the captured gradients (None where nothing arrived)."""
    if _tensor._capture_hooks:
        for hook in _tensor._capture_hooks:
            hook("autograd's backward runs inside the function (ember.compile captures "
                 "backward passes only through its compiled forward, or whole training steps "
                 "with mode='reduce-overhead')", "backward")
    run = _Run(root_edges)
    for g in root_grads:
        if g is not None:
            run.pinned.add(id(g))
    if _fastpath.C is not None and capture_edges is None:
        deps, parents = _fastpath.C.dependencies(root_edges), None   # _dependencies, compiled
    else:
        deps, parents = _dependencies(root_edges, capture_edges is not None)
    capture_at = None
    needed = None
    captured = None
    if capture_edges is not None:
        captured = [None] * len(capture_edges)
        capture_at = {}
        for i, e in enumerate(capture_edges):
            capture_at.setdefault(e[0], []).append((e[1], i))
        run_anyway = tuple(accumulate_into or ())
        needed = _needed(list(capture_at) + list(run_anyway), parents, run_anyway)
        run.needed = (needed, capture_at)
    run.deps = deps
    buffers = {}
    ready = []
    pushed = set()
    # ties (leaf accumulators) run in the order they became ready, not by address: the same
    # graph then accumulates in the same order every time (ember.compile compares two steps)
    order = itertools.count()
    for (n, nr), g in zip(root_edges, root_grads):
        _add(buffers, n, nr, g, run)
    for n, _ in root_edges:
        if deps.get(n, 0) == 0 and n not in pushed:
            pushed.add(n)
            heapq.heappush(ready, (_key(n), next(order), n))

    st = K.state
    saved_mode = _save(st)
    prev_run = getattr(_local, "run", None)
    _local.run = run
    _set_enabled(st, create_graph)
    check = anomaly.enabled()
    observe = node_observer
    pop, push = heapq.heappop, heapq.heappush
    try:
        if _fastpath.C is not None and capture_at is None and not check and observe is None:
            # the loop below, compiled (csrc/engine.c); nodes with hooks come back to Python
            _fastpath.C.run_graph(ready, buffers, deps, run, keep_graph, _run_with_extras)
            ready = ()
        while ready:
            n = pop(ready)[2]
            buf = buffers.pop(n, None)
            x = n._x
            # a node grad() does not run (neither needed nor captured) fires no tensor hooks
            if x is not None and buf is not None and (
                    capture_at is None or n in needed or n in capture_at):
                _tensor_hooks(x, buf, run)
            if capture_at is not None:
                for nr, i in capture_at.get(n, ()):
                    g = buf[nr] if buf is not None and nr < len(buf) else None
                    if g is not None and n.__class__ is AccumulateGrad:
                        g = _leaf_hooks(n.variable, g, run)
                    captured[i] = g
                if n not in needed:
                    continue
            if buf is None or (buf[0] is None if len(buf) == 1 else
                               all(g is None for g in buf)):
                outs = ()
            elif x is None and not check and observe is None:
                outs = n.apply(buf)
                if not keep_graph:
                    n.release()
            else:
                outs = _call(n, buf, keep_graph, check, observe)
            k = 0
            n_outs = len(outs)
            route = run.route
            for e in n.next_edges:
                if e is not None:
                    m = e[0]
                    g = outs[k] if k < n_outs else None
                    if g is not None:
                        nr = e[1]
                        buf = buffers.get(m)
                        if buf is None and nr == 0 and m.num_outputs == 1:
                            buffers[m] = [g]
                            route(g)
                        else:
                            _add(buffers, m, nr, g, run)
                    left = deps[m] - 1
                    deps[m] = left
                    if left == 0:  # once per node: only edges from nodes that ran count down
                        push(ready, (_LEAF_FIRST if m.__class__ is AccumulateGrad else -m.seq,
                                     next(order), m))
                k += 1
        callbacks = run.callbacks
        while callbacks:  # a callback may queue another one
            callbacks.pop(0)()
    finally:
        _restore(st, saved_mode)
        _local.run = prev_run
    return captured


def _run_with_extras(n, buf, run, keep_graph):
    """What execute's loop does for a node with hooks or metadata (``n._x``) when the loop is
    the compiled one: its tensor hooks, then the node through ``_call``."""
    if buf is not None:
        _tensor_hooks(n._x, buf, run)
    if buf is None or all(g is None for g in buf):
        return ()
    return _call(n, buf, keep_graph, False, None)


def queue_callback(callback) -> None:
    """Run ``callback()`` when the backward pass now running has finished its graph (PyTorch's
    ``Variable._execution_engine.queue_callback``; DistributedDataParallel waits for its
    gradient all-reduces there). Only valid inside a backward pass, e.g. from a hook."""
    run = getattr(_local, "run", None)
    if run is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    run.callbacks.append(callback)


def _dependencies(root_edges, want_parents):
    deps = {}
    parents = {} if want_parents else None
    seen = set()
    stack = []
    for n, _ in root_edges:
        if n not in seen:
            seen.add(n)
            stack.append(n)
    while stack:
        n = stack.pop()
        for e in n.next_edges:
            if e is None:
                continue
            m = e[0]
            deps[m] = deps.get(m, 0) + 1
            if want_parents:
                parents.setdefault(m, []).append(n)
            if m not in seen:
                seen.add(m)
                stack.append(m)
    return deps, parents


def _needed(targets, parents, run_anyway):
    """Nodes that must run: those with a target (capture point or leaf accumulator that
    ``backward(inputs=...)`` runs) strictly below them, plus those accumulators."""
    needed = set(run_anyway)
    stack = list(targets)
    seen = set(stack)
    while stack:
        n = stack.pop()
        for p in parents.get(n, ()):
            needed.add(p)
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return needed


def _add(buffers, n, nr, g, run):
    buf = buffers.get(n)
    if buf is None:
        buf = buffers[n] = [None] * max(n.num_outputs, nr + 1)
    elif nr >= len(buf):
        buf.extend([None] * (nr + 1 - len(buf)))
    old = buf[nr]
    if old is None:
        buf[nr] = g
        run.route(g)
    else:
        buf[nr] = old + g


def _tensor_hooks(x, buf, run):
    hooks = x.tensor_pre_hooks
    if hooks:
        for nr, d in hooks.items():
            if nr < len(buf) and buf[nr] is not None:
                for h in list(d.values()):
                    r = h(buf[nr])
                    if r is not None:
                        buf[nr] = r
                        run.pinned.add(id(r))
    retain = x.retain_hooks
    if retain:
        for nr, ref in list(retain.items()):
            t = ref()
            if t is not None and nr < len(buf) and buf[nr] is not None:
                _retain(t, buf[nr])


def _retain(t, g):
    ag = t._ag
    if ag.grad is None:
        ag.grad = _clone(g)
    else:
        ag.grad = ag.grad + g


def _leaf_hooks(t, g, run):
    ag = t._ag
    if ag is not None and ag.hooks:
        for h in list(ag.hooks.values()):
            r = h(g)
            if r is not None:
                g = r
                run.pinned.add(id(g))
    return g


def _call(n, grads, keep_graph, check, observe=None):
    x = n._x
    if x is not None and x.pre_hooks:
        for h in list(x.pre_hooks.values()):
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    if observe is not None:
        with observe(n):
            outs = anomaly.checked_apply(n, grads) if check else n.apply(grads)
    else:
        outs = anomaly.checked_apply(n, grads) if check else n.apply(grads)
    if not keep_graph:
        n.release()
    if x is not None and x.hooks:
        for h in list(x.hooks.values()):
            r = h(tuple(outs), tuple(grads))
            if r is not None:
                outs = list(r)
    return outs


# -- the public entry points ---------------------------------------------------------------------
def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs):
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if out.dtype.category != 2:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                g = full_op.on(out.device, out._shape, 1, out.dtype, out.device)
            grads.append(g)
            continue
        if not isinstance(g, Tensor):
            g = tensor(g, dtype=out.dtype, device=out.device)
        if g._shape != out._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{g.shape} and output[{i}] has a shape of {out.shape}.")
        if (g.dtype.category == COMPLEX) != (out.dtype.category == COMPLEX):
            raise RuntimeError("For complex Tensors, both grad_output and output are required to "
                               "have the same dtype. Mismatch in dtype: grad_output[" + str(i) +
                               f"] has a dtype of {g.dtype} and output[{i}] has a dtype of "
                               f"{out.dtype}.")
        grads.append(g)
    return grads


def _root_edges(outputs, grads):
    edges, gs = [], []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        e = gradient_edge(t) if isinstance(t, Tensor) else None
        if e is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               f"a grad_fn")
        edges.append(e)
        gs.append(g)
    return edges, gs


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves (or of
    ``inputs``) of their graph."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) or (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad_tensors has {len(grads)} elements but tensors has "
                           f"{len(tensors)}")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(tensors, grads)
    edges, gs = _root_edges(tensors, grads)
    if inputs is None:
        execute(edges, gs, keep_graph=retain_graph, create_graph=create_graph)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    cap, run_acc, nonleaf = [], [], []
    for t in inputs:
        e = gradient_edge(t)
        if e is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        if isinstance(e[0], AccumulateGrad):
            run_acc.append(e[0])   # runs as usual (hooks, accumulation)
        else:
            nonleaf.append((len(cap), t))
            cap.append(e)
    got = execute(edges, gs, keep_graph=retain_graph, create_graph=create_graph,
                  capture_edges=cap, accumulate_into=run_acc)
    st = K.state
    saved = _save(st)
    _set_enabled(st, create_graph)
    try:
        for i, t in nonleaf:
            if got[i] is not None and not t._ag.retains_grad:  # retain_grad already stored it
                accumulate(t, got[i])
    finally:
        _restore(st, saved)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``."""
    if is_grads_batched:  # the first dim of each grad_output is a batch: one vmapped backward
        import ember  # layering: ember.func is above autograd (the public face, at call time)
        vmap = ember.func.vmap
        outs = _as_tuple(outputs)

        def one(*gs):
            return grad(outs, inputs, gs, retain_graph=retain_graph, create_graph=create_graph,
                        only_inputs=only_inputs, allow_unused=allow_unused,
                        materialize_grads=materialize_grads)
        return vmap(one)(*_as_tuple(grad_outputs))
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, GradientEdge) else _as_tuple(inputs)
    grads = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grads)} for "
                           f"{len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    for t in inputs:
        if not isinstance(t, (Tensor, GradientEdge)):
            raise TypeError(f"grad(): inputs must be Tensors or GradientEdges, got "
                            f"{type(t).__name__}")
    cap = []
    for t in inputs:
        # a GradientEdge (graph.get_gradient_edge) names the edge itself
        e = (t.node, t.output_nr) if isinstance(t, GradientEdge) else gradient_edge(t)
        if e is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        cap.append(e)
    grads = _make_grads(outputs, grads)
    edges, gs = _root_edges(outputs, grads)
    got = execute(edges, gs, keep_graph=retain_graph, create_graph=create_graph,
                  capture_edges=cap)
    result = []
    for t, g in zip(inputs, got):
        if g is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            if materialize_grads:
                if isinstance(t, GradientEdge):
                    raise RuntimeError("materialize_grads cannot be used when the given input "
                                       "is a GradientEdge")
                g = zeros_like(t)
        elif not create_graph and g._ag is not None:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _warn_nonleaf_grad():
    warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                  "Its .grad attribute won't be populated during autograd.backward(). If you "
                  "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                  ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
                  "mistake, make sure you access the leaf Tensor instead.", UserWarning,
                  stacklevel=user_stacklevel())


_primitives.provide(grad=grad)   # for ops whose backward differentiates their composite

if _fastpath.C is not None:
    from .nodes import FormulaNode, Spec, _unpack, validate
    from ..dispatch.facets import Derivative
    _fastpath.C.install_engine(FormulaNode, AccumulateGrad, Spec, Derivative, _Run, validate,
                               _unpack, accumulate)
