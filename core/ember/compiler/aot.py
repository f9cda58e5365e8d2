"""Compiling through autograd (AOT-autograd style): the forward and its backward as two graphs.

``capture_joint`` runs the function under a capture, then — still capturing — asks autograd for
the gradients of the outputs that require grad with respect to every tensor the function read
that requires grad (its inputs and the parameters it closed over), with placeholder output
gradients. The ops the derivative formulas run are recorded after the forward's, reading the
forward's values by reference. The joint graph is cut in two:

* the forward graph returns the function's output plus the values the backward reads
  ("saved" values);
* the backward graph takes the output gradients, the saved values and the inputs, and returns
  one gradient per differentiable source.

Both are fused like any graph. At run time ``CompiledAutograd`` (an ``autograd.Function``) runs
the forward graph without recording per-op autograd, saves what the backward needs through
``save_for_backward`` (so in-place changes to them are caught as in eager mode), and its
backward runs the backward graph: one node in the autograd graph instead of one per op.

A backward that reads a tensor no captured op made (an intermediate kept inside an op's
implementation, e.g. a composite's) can't be replayed — it would read the capture run's stale
value — so that case replays op by op with eager autograd instead (``explain`` says why).
Double backward through a compiled backward raises, as torch.compile's does."""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.function import Function
from ..dispatch.grad_mode import is_grad_enabled
from .graph import Graph, Ref, _refs, rebuild
from ..utils._pytree import leaves_of_type
from ..autograd import grad as autograd_grad
from ..ops.factories import ones_like


def _flat_tensors(x):
    return leaves_of_type(x, Tensor)


def _unique_tensors(x):
    """The tensors in ``x``, each once (a loss returned and also stored by a side effect is
    one output of the compiled forward, so it keeps one autograd history)."""
    seen, out = set(), []
    for t in _flat_tensors(x):
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


class JointGraph:
    """What ``capture_joint`` produced: ``forward`` (returns ``(output, saved)``), ``backward``
    (inputs: output grads, saved values, the function's inputs; returns grads per source),
    ``sources`` (Refs of the tensors gradients flow to), ``diff_outputs`` (positions among the
    output's tensors that carry gradients)."""

    def __init__(self, forward, backward, sources, diff_outputs, n_saved):
        self.forward, self.backward = forward, backward
        self.sources, self.diff_outputs, self.n_saved = sources, diff_outputs, n_saved
        self.forward_run, self.backward_run = forward, backward

    def __str__(self):
        return f"forward {self.forward}\nbackward {self.backward}"


def capture_joint(cap, out, inputs):
    """Differentiate inside the running capture ``cap`` (after the forward ran and returned
    ``out``). Returns a ``JointGraph``, or a reason string when the backward can't be captured."""
    graph = cap.graph
    n_fwd, n_consts = len(graph.nodes), len(graph.constants)
    n_inputs = graph.n_inputs
    reason = _differentiate(cap, out, inputs, graph, n_inputs)
    if isinstance(reason, str):      # the forward graph stays as captured
        del graph.nodes[n_fwd:]
        del graph.constants[n_consts:]
        return reason
    placeholders, grads, sources, diff_outputs = reason
    grad_refs = [cap.ref(g) if g is not None else None for g in grads]
    return _split(graph, n_fwd, n_inputs, len(placeholders), grad_refs, sources, diff_outputs,
                  [_meta(t) for t in inputs] + [_meta(g) for g in placeholders])


def _differentiate(cap, out, inputs, graph, n_inputs):
    out_tensors = _unique_tensors(out)
    diff_outputs = [i for i, t in enumerate(out_tensors) if t.requires_grad]
    if not diff_outputs:
        return "no output requires grad"
    source_tensors, sources = [], []
    for i, t in enumerate(inputs):
        if t.requires_grad:
            source_tensors.append(t)
            sources.append(Ref("input", i))
    for i, c in enumerate(list(graph.constants)):
        if c.requires_grad:
            source_tensors.append(c)
            sources.append(Ref("const", i))
    with cap.paused():
        placeholders = [ones_like(out_tensors[i]) for i in diff_outputs]
    for k, g in enumerate(placeholders):
        cap._bind(g, Ref("input", n_inputs + k))
    cap.phase = "backward"
    try:
        grads = autograd_grad([out_tensors[i] for i in diff_outputs], source_tensors,
                              placeholders, retain_graph=True, allow_unused=True)
    finally:
        cap.phase = "forward"
    if cap.opaque:
        return cap.opaque
    if cap.breaks:
        return cap.breaks[0][0]
    return placeholders, grads, sources, diff_outputs


def _meta(t):
    return (tuple(t.shape), t.dtype, t.device)


def _split(graph, n_fwd, n_inputs, n_grads, grad_refs, sources, diff_outputs, input_meta):
    bwd_nodes = graph.nodes[n_fwd:]
    # forward values (and inputs) the backward reads
    saved, saved_pos = [], {}
    for node in bwd_nodes:
        for r in _refs([node.args, node.kwargs]):
            if r.kind == "node" and r.index < n_fwd and (r.index, r.item) not in saved_pos:
                saved_pos[(r.index, r.item)] = len(saved)
                saved.append(r)
    for r in grad_refs:
        if r is not None and r.kind == "node" and r.index < n_fwd and \
                (r.index, r.item) not in saved_pos:
            saved_pos[(r.index, r.item)] = len(saved)
            saved.append(r)

    forward = Graph(nodes=graph.nodes[:n_fwd], constants=graph.constants, n_inputs=n_inputs)
    forward.plain = getattr(graph, "plain", False)
    forward.output = (graph.output, tuple(saved))
    forward.input_meta = input_meta[:n_inputs]

    # backward inputs: output grads, then saved values, then the function's inputs
    def move(x):
        if isinstance(x, Ref):
            if x.kind == "input":
                if x.index >= n_inputs:               # an output-gradient placeholder
                    return Ref("input", x.index - n_inputs)
                return Ref("input", n_grads + len(saved) + x.index)
            if x.kind == "node":
                if x.index < n_fwd:
                    return Ref("input", n_grads + saved_pos[(x.index, x.item)])
                return Ref("node", x.index - n_fwd, x.item)
            return x
        if isinstance(x, (list, tuple)):
            return rebuild(x, [move(v) for v in x])
        if isinstance(x, dict):
            return {k: move(v) for k, v in x.items()}
        return x

    backward = Graph(constants=graph.constants, n_inputs=n_grads + len(saved) + n_inputs)
    backward.plain = forward.plain
    for node in bwd_nodes:
        backward.nodes.append(node.moved(args=move(node.args), kwargs=move(node.kwargs)))
    backward.output = tuple(move(r) if r is not None else None for r in grad_refs)
    saved_meta = []
    for r in saved:
        m = graph.nodes[r.index].meta
        saved_meta.append(m[r.item] if r.item is not None else m)
    backward.input_meta = (input_meta[n_inputs:] + saved_meta + input_meta[:n_inputs])
    return JointGraph(forward, backward, sources, diff_outputs, len(saved))


class CompiledAutograd(Function):
    """One autograd node for a compiled forward: ``apply(joint, inputs, structure, *sources)``
    (``structure`` receives the output's structure)."""

    @staticmethod
    def forward(ctx, joint, inputs, structure, *sources):
        from . import run_graph  # cycle: ember.compiler (its __init__)
        out, saved = run_graph(joint.forward_run, inputs)
        tensors = _unique_tensors(out)
        structure.append((out, tensors))
        ctx.joint = joint
        ctx.n_saved = len(saved)
        ctx.save_for_backward(*saved, *inputs)
        ctx.n_out = len(tensors)
        ctx.mark_non_differentiable(*[t for i, t in enumerate(tensors)
                                      if i not in joint.diff_outputs])
        return tuple(tensors)

    @staticmethod
    def backward(ctx, *grads):
        from . import run_graph  # cycle: ember.compiler (its __init__)
        if is_grad_enabled():
            raise RuntimeError("ember.compile: double backward through a compiled function's "
                               "backward is not supported (torch.compile's aot_autograd has "
                               "the same limit); compile with backend='eager' or call the "
                               "function uncompiled for higher-order gradients")
        joint = ctx.joint
        stored = ctx.saved_tensors
        saved, inputs = stored[:ctx.n_saved], stored[ctx.n_saved:]
        # the backward graph was captured on contiguous placeholder gradients, and its view
        # ops (as_strided) keep that layout: an expanded or strided incoming gradient is
        # made contiguous first
        out_grads = [grads[i].contiguous() for i in joint.diff_outputs]
        result = run_graph(joint.backward_run, list(out_grads) + list(saved) + list(inputs))
        return (None, None, None) + tuple(result)


def run(joint, inputs, constants):
    """Calls the compiled forward and returns the function's output structure, its tensors
    connected to autograd through one ``CompiledAutograd`` node."""
    sources = [inputs[r.index] if r.kind == "input" else constants[r.index]
               for r in joint.sources]
    structure = []
    flat = CompiledAutograd.apply(joint, list(inputs), structure, *sources)
    if not isinstance(flat, tuple):
        flat = (flat,)
    out, tensors = structure[0]
    returned = {id(t): r for t, r in zip(tensors, flat)}
    return _rebuild(out, returned)


def _rebuild(x, returned):
    if isinstance(x, Tensor):
        return returned[id(x)]
    if isinstance(x, (list, tuple)):
        return rebuild(x, [_rebuild(v, returned) for v in x])
    if isinstance(x, dict):
        return {k: _rebuild(v, returned) for k, v in x.items()}
    return x
