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

import contextlib
import warnings

from .. import accelerator
from .._tensor import Tensor
from ..autograd import engine
from ..dispatch.grad_mode import enable_grad
from ..autograd.graph import AccumulateGrad, Node, alias, attach
from ..autograd.record import gradient_edge
from ..dispatch import keys as K
from .._generator import device_default_generator
from ..nn.modules.container import Sequential

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "DefaultDeviceType",
           "check_backward_validity", "detach_variable", "get_device_states", "noop_context_fn",
           "set_checkpoint_debug_enabled", "set_checkpoint_early_stop", "set_device_states"]


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce the forward (different outputs'
    shapes or dtypes)."""


# set_checkpoint_debug_enabled: overrides checkpoint(debug=...) when not None
_debug_override = [None]
# set_checkpoint_early_stop: torch stops its recomputation once the needed tensors exist;
# ember's recomputation always runs the segment to its end (it needs its outputs), so the
# setting changes neither results nor memory here
_early_stop = [True]


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """torch's switch for stopping the recomputation once every needed tensor is recomputed.
    Accepted for torch's programs; ember always recomputes the whole segment."""
    prev, _early_stop[0] = _early_stop[0], bool(enable)
    try:
        yield
    finally:
        _early_stop[0] = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Within the block, ``checkpoint``'s ``debug`` is ``enabled`` whatever its caller passes
    (None: the caller's value)."""
    prev, _debug_override[0] = _debug_override[0], enabled
    try:
        yield
    finally:
        _debug_override[0] = prev


def noop_context_fn():
    """The default ``context_fn`` of ``checkpoint``: no context around the forward or the
    recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """The tuple ``inputs`` with each tensor detached, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    """Warn when no tensor among ``inputs`` requires grad (their gradients will be None)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG states ``get_device_states``/``set_device_states`` handle when
    no argument says: the current accelerator's (the CPU without one) unless set."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            acc = accelerator.current_accelerator(True)
            DefaultDeviceType._default_device_type = acc.type if acc is not None else "cpu"
        return DefaultDeviceType._default_device_type


def _tensors_in(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors_in(a)
        elif isinstance(a, dict):
            yield from _tensors_in(list(a.values()))


def _infer_device_type(*args):
    types = [t.device.type for t in _tensors_in(args) if t.device.type != "cpu"]
    if len(set(types)) > 1:
        warnings.warn(f"Tensor arguments, excluding CPU tensors, are detected on at least two "
                      f"types of devices. Device state will only be saved for devices of a "
                      f"single device type, and the remaining devices will be ignored. "
                      f"Consequently, if any checkpointed functions involve randomness, this "
                      f"may result in incorrect gradients.\nDevice types: {sorted(set(types))} "
                      f"first device type: {types[0]}", stacklevel=3)
    if not types:
        return DefaultDeviceType.get_device_type()
    return "cuda" if "cuda" in types else types[0]


def get_device_states(*args):
    """(device indices, RNG states) of the non-CPU devices the tensors in ``args`` live on
    (one device type: see ``_infer_device_type``), for ``set_device_states``."""
    ids = [t.get_device() for t in _tensors_in(args) if t.device.type not in ("cpu", "meta")]
    module = accelerator.get_device_module(_infer_device_type(*args))
    states = []
    for index in ids:
        with module.device(index):
            states.append(module.get_rng_state())
    return ids, states


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore the RNG ``states`` of device indices ``devices`` of ``device_type`` (default:
    ``DefaultDeviceType.get_device_type()``)."""
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    module = accelerator.get_device_module(device_type)
    for index, state in zip(devices, states):
        with module.device(index):
            module.set_rng_state(state)


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
        self.recompute_context = contextlib.nullcontext()  # context_fn's second context
        self.debug = False
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
            with enable_grad(), self.recompute_context:
                out = self.fn(*detached, **self.kwargs)
        finally:
            for g, state in saved:
                g.set_state(state)
        outs, _ = _flatten(out)
        if [(o._shape, o.dtype) for o in outs] != self.metas:
            where = (f" (recomputing {getattr(self.fn, '__qualname__', self.fn)!s} on inputs "
                     f"{[tuple(a.shape) for a in detached if isinstance(a, Tensor)]})"
                     if self.debug else "")
            raise CheckpointError(f"torch.utils.checkpoint: Recomputed values have different "
                                  f"metadata than during the original forward pass: "
                                  f"{[(list(o.shape), o.dtype) for o in outs]} now, "
                                  f"{[(list(s), d) for s, d in self.metas]} before{where}")
        return outs

    def release(self):
        self.fn = self.args = self.kwargs = self.rng = self.recompute_context = None


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` whose activations are recomputed in backward instead of
    being kept. Gradients equal the non-checkpointed ones; ``preserve_rng_state`` replays the
    forward's random numbers (dropout) in the recomputation."""
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant and (context_fn not in (None, noop_context_fn) or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if _debug_override[0] is not None:
        debug = _debug_override[0]
    if not callable(function):
        raise TypeError(f"checkpoint(): function must be callable, got "
                        f"{type(function).__name__}")
    if not K.state.grad_enabled:
        return function(*args, **kwargs)
    rng = _rng_states(args) if preserve_rng_state else None
    start = Node().seq
    forward_context, recompute_context = (context_fn or noop_context_fn)()
    with enable_grad(), forward_context:
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
    node.recompute_context, node.debug = recompute_context, debug
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
