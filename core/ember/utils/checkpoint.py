"""Activation checkpointing: ``checkpoint(fn, *args)`` keeps only the inputs of ``fn`` for
backward and recomputes its activations there.

How it works. The forward runs once with autograd on, to learn which gradient edges outside the
segment the outputs depend on (the inputs' histories and the parameters' accumulators, closures
included). Those edges become the edges of one ``CheckpointBackward`` node; the outputs are
re-attached to it and the segment's own graph, with its saved activations, is dropped right
away. In backward the node restores the RNG state of the forward, reruns ``fn`` on detached
inputs with grad enabled and pulls the gradients of its boundary edges out of that fresh graph
(the engine's capture mode), so parameters and inputs get exactly the non-checkpointed
gradients. Peak memory inside one segment is unchanged; what is saved is every segment's
activations between forward and backward.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd import engine
from ..dispatch.grad_mode import enable_grad
from ..autograd.graph import AccumulateGrad, Node, alias, attach
from ..autograd.record import gradient_edge
from ..dispatch import keys as K
from .._generator import device_default_generator
from ..nn.modules.container import Sequential

__all__ = ["checkpoint", "checkpoint_sequential"]


def _flatten(out):
    if isinstance(out, Tensor):
        return [out], lambda ts: ts[0]
    if isinstance(out, (tuple, list)):
        idx = [i for i, o in enumerate(out) if isinstance(o, Tensor)]

        def rebuild(ts):
            seq = list(out)
            for k, i in enumerate(idx):
                seq[i] = ts[k]
            return tuple(seq) if isinstance(out, tuple) else seq
        return [out[i] for i in idx], rebuild
    return [], lambda ts: out


def _rng_states(args):
    devices = {"cpu": None}
    for a in args:
        if isinstance(a, Tensor) and a.device.type != "cpu":
            devices[str(a.device)] = a.device
    gens = [device_default_generator(d) for d in devices.values()]
    return [(g, g.get_state()) for g in gens]


def _boundary(outputs, start):
    """The edges outside the segment that the outputs' new graph leads to (nodes recorded
    before ``start`` and every leaf accumulator), in a fixed order."""
    edges, seen, visited = [], set(), set()
    stack = [gradient_edge(o) for o in outputs if o.requires_grad]
    while stack:
        e = stack.pop()
        if e is None:
            continue
        n = e[0]
        if n.__class__ is AccumulateGrad or n.seq <= start:
            key = (id(n), e[1])
            if key not in seen:
                seen.add(key)
                edges.append(e)
            continue
        if id(n) in visited:
            continue
        visited.add(id(n))
        stack.extend(n.next_edges)
    return edges


class CheckpointBackward(Node):
    """Reruns the checkpointed function and hands out the gradients of its boundary edges."""

    def __init__(self, edges, fn, args, kwargs, rng, arg_edges, metas, num_outputs):
        super().__init__(tuple(edges))
        self.fn, self.args, self.kwargs, self.rng = fn, args, kwargs, rng
        self.arg_edges = arg_edges      # boundary edge key -> index of the arg it came from
        self.metas = metas
        self.num_outputs = num_outputs
        self.versions = [a._storage.version if isinstance(a, Tensor) else None for a in args]

    def apply(self, grads):
        if self.fn is None:
            raise RuntimeError("Trying to backward through a checkpointed segment a second time "
                               "(its inputs were released after the first backward). Specify "
                               "retain_graph=True if you need to backward twice.")
        for a, v in zip(self.args, self.versions):
            if isinstance(a, Tensor) and a._storage.version != v:
                raise RuntimeError("one of the inputs of a checkpointed function was modified by "
                                   "an inplace operation after the forward; the recomputation "
                                   "would not match")
        detached = []
        for a in self.args:
            if isinstance(a, Tensor):
                d = alias(a)
                if a.requires_grad:
                    d.requires_grad_(True)
                detached.append(d)
            else:
                detached.append(a)
        outs = self._recompute(detached)
        roots, root_grads = [], []
        for o, g in zip(outs, grads):
            if g is not None and o.requires_grad:
                roots.append(gradient_edge(o))
                root_grads.append(g)
        capture = []
        for e in self.next_edges:
            i = self.arg_edges.get((id(e[0]), e[1]))
            capture.append(gradient_edge(detached[i]) if i is not None else e)
        if not roots:
            return [None] * len(capture)
        create = K.state.grad_enabled
        got = engine.execute(roots, root_grads, keep_graph=False, create_graph=create,
                             capture_edges=capture)
        return [g if g is None or create else g.detach() for g in got]

    def _recompute(self, detached):
        saved = [(g, g.get_state()) for g, _ in self.rng] if self.rng else []
        try:
            for g, state in self.rng or ():
                g.set_state(state)
            with enable_grad():
                out = self.fn(*detached, **self.kwargs)
        finally:
            for g, state in saved:
                g.set_state(state)
        outs, _ = _flatten(out)
        if [(o._shape, o.dtype) for o in outs] != self.metas:
            raise RuntimeError(f"torch.utils.checkpoint: Recomputed values have different "
                               f"metadata than during the original forward pass: "
                               f"{[(list(o.shape), o.dtype) for o in outs]} now, "
                               f"{[(list(s), d) for s, d in self.metas]} before")
        return outs

    def release(self):
        self.fn = self.args = self.kwargs = self.rng = None


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` whose activations are recomputed in backward instead of
    being kept. Gradients equal the non-checkpointed ones; ``preserve_rng_state`` replays the
    forward's random numbers (dropout) in the recomputation."""
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None:
        raise ValueError("checkpoint(context_fn=...) is not supported by ember")
    if not callable(function):
        raise TypeError(f"checkpoint(): function must be callable, got "
                        f"{type(function).__name__}")
    if not K.state.grad_enabled:
        return function(*args, **kwargs)
    rng = _rng_states(args) if preserve_rng_state else None
    start = Node().seq
    with enable_grad():
        out = function(*args, **kwargs)
    outs, rebuild = _flatten(out)
    edges = _boundary(outs, start)
    if not edges:
        return out
    arg_edges = {}
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            e = gradient_edge(a)
            if e is not None:
                arg_edges.setdefault((id(e[0]), e[1]), i)
    node = CheckpointBackward(edges, function, args, kwargs, rng, arg_edges,
                              [(o._shape, o.dtype) for o in outs], len(outs))
    new = []
    for k, o in enumerate(outs):
        a = alias(o)
        if o.requires_grad:
            attach(a, node, k)
        new.append(a)
    return rebuild(new)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules) in ``segments`` checkpointed
    chunks; the last chunk runs normally, as in PyTorch."""
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)
    size = len(functions) // segments

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(functions) - 1)(input)
