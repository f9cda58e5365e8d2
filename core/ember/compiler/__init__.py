"""``ember.compile``: capture a function's ops through the dispatcher once, guard what the
capture assumed, lower the graph (fused kernels, a compiled backward, whole training steps)
and replay it on later calls. One module per stage (docs/architecture.md, "Compile"):

* ``capture.py``: a real eager run with the TRACER dispatch key on; every top-level op call
  becomes a node of a ``Graph`` (``graph.py``). Reading a tensor's value in Python is a graph
  break: that case runs eagerly from then on, its reason kept for ``explain``;
  ``fullgraph=True`` raises instead, naming the line.
* guards (``CompiledFunction._guards``): each tensor argument's shape, dtype, device and
  requires_grad, which arguments alias, the other arguments by value, grad mode, and for a
  module its parameters' and buffers' identities and ``training``; past ``RECOMPILE_LIMIT``
  cases the function warns and runs eagerly, like torch's recompile_limit.
* ``dynamic.py``: after a size changes, ints that follow it become ``SymInt``s.
* ``pointwise.py`` / ``fusion.py``: pointwise chains (with a reduction epilogue) and foreach
  runs become one kernel through ``Backend.compile_pointwise`` / ``compile_foreach``.
* ``aot.py``: a graph that must record autograd gets its backward captured and compiled too.
* ``step.py``: ``mode="reduce-overhead"`` captures forward + backward + optimizer step.
* ``codegen.py``: the replay is a generated Python function over the graph's nodes.

A ``backend`` callable gets the graph and example inputs and returns what runs instead
(torch's backend contract); ``backend="eager"`` replays without fusion or a compiled
backward. Not done: resuming a graph after a break (the whole call runs eagerly). Python side
effects inside the function (prints, appends) and tensors made from Python data happen on the
capture runs only.
"""
from __future__ import annotations

import functools
import warnings

from .._tensor import Tensor
from ..autograd import grad_mode as _grad_mode
from . import aot, codegen, dynamic, fusion, step
from .capture import Capture, GraphBreak
from .graph import Graph, Node, Ref, rebuild
from ..runtime.layout import contiguous_strides

__all__ = ["compile", "explain", "run_graph", "CompiledFunction", "GraphBreak", "Graph", "Node", "Ref",
           "RECOMPILE_LIMIT"]

RECOMPILE_LIMIT = 8
KNOWN_OPTIONS = {"trace.graph_diagram", "debug"}


def _tensors_in(args):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(_tensors_in(a))
        elif isinstance(a, dict):
            out.extend(_tensors_in(list(a.values())))
    return out


def _structure(args):
    """The non-tensor part of the arguments, hashable, with tensors as placeholders."""
    if isinstance(args, Tensor):
        return "<T>"
    if isinstance(args, (list, tuple)):
        return (type(args).__name__,) + tuple(_structure(a) for a in args)
    if isinstance(args, dict):
        return ("dict",) + tuple((k, _structure(v)) for k, v in sorted(args.items()))
    try:
        hash(args)
        return args
    except TypeError:
        return ("id", id(args))


class _Entry:
    """One guarded case: ``graph`` as captured (what ``explain`` shows), ``lowered`` what runs
    (fused loops in place of pointwise chains), or ``runner`` from a callable backend."""
    __slots__ = ("graph", "lowered", "breaks", "runner", "calls", "joint", "eager_autograd",
                 "warming", "pending", "step", "shapes", "guard")

    def __init__(self, graph, breaks=(), runner=None, lowered=None):
        self.graph, self.breaks, self.runner = graph, list(breaks), runner
        self.lowered = lowered if lowered is not None else graph
        self.calls = 0
        self.joint = None            # aot.JointGraph when the backward is compiled too
        self.eager_autograd = None   # why replay records autograd per op, when it does
        self.warming = False         # reduce-overhead: not captured (or confirmed) yet
        self.pending = None          # reduce-overhead: the first capture of a training step
        self.step = False            # a whole training step: replayed without autograd
        self.shapes = None           # the input shapes it was captured for (plain graphs)
        self.guard = None            # dynamic.ShapeGuard of a graph generalized over sizes


class CompiledFunction:
    """What ``ember.compile(fn)`` returns: call it like ``fn``."""

    def __init__(self, fn, *, fullgraph=False, dynamic=None, backend="ember", mode=None,
                 options=None, module=None, name=None, recompile_limit=None):
        self.fn = fn
        self.name = name
        self.recompile_limit = RECOMPILE_LIMIT if recompile_limit is None else recompile_limit
        self.fullgraph = fullgraph
        self.backend = backend
        self.mode = mode
        self.options = dict(options or {})
        self.module = module
        self.cache = {}
        self.dynamic_entries = {}    # family key -> entries valid for many shapes
        self.recompiles = 0
        self._warned_limit = False
        functools.update_wrapper(self, fn)
        # dynamic=None: torch's automatic dynamic (generalize after a size changes);
        # dynamic=True: the same here, since a graph needs two captures to see which ints
        # follow a size; dynamic=False: every shape is its own graph
        self.dynamic = dynamic

    # -- dynamic shapes (dynamic.py) ------------------------------------------------------------
    @staticmethod
    def _family(key):
        # sizes generalize; strides are kept only as "contiguous or not" (a contiguous
        # tensor's strides follow its sizes)
        shapes = tuple((dynamic.family_key([s[0]])[0],) + s[1:4] +
                       (contiguous_strides(s[0]) == tuple(s[4]), s[5]) for s in key[0])
        return (shapes,) + key[1:]

    def _same_family(self, family, key):
        """A plain graph captured for another shape of this family, if any."""
        for k, entry in self.cache.items():
            if k != key and entry.graph is not None and entry.joint is None and \
                    not entry.step and entry.runner is None and self._family(k) == family:
                return entry
        return None

    def _generalize(self, family, previous, entry, tensors):
        if entry is None or entry.graph is None or entry.joint is not None or entry.step or \
                entry.runner is not None or entry.shapes is None:
            return
        result = dynamic.generalize(previous.graph, entry.graph, previous.shapes, entry.shapes)
        if result is None:
            return
        graph, guard = result
        general = _Entry(graph)
        general.guard = guard
        general.shapes = None
        lowered = graph
        if self.backend in ("ember", "inductor") and not _records_autograd(graph, tensors):
            lowered = fusion.fuse(graph, [_meta(t) for t in tensors], _lower)
        general.lowered = lowered
        self.dynamic_entries.setdefault(family, []).append(general)

    # -- guards ---------------------------------------------------------------------------------
    def _guards(self, args, kwargs):
        tensors = _tensors_in([args, kwargs])
        # exact shapes key the cache; a dynamic family (dynamic.py) shares everything else
        # strides and offset too: a captured view op (as_strided) bakes the layout it saw
        shapes = tuple((tuple(t.shape), t.dtype, str(t.device), t.requires_grad, t._stride,
                        t._offset) for t in tensors)
        # which arguments are the same tensor: the graph reads one input for both
        first = {}
        aliases = tuple(first.setdefault(id(t), i) for i, t in enumerate(tensors))
        key = (shapes, aliases, _structure((args, kwargs)), _grad_mode.is_grad_enabled())
        if self.module is not None:
            m = self.module
            key += (m.training,
                    tuple((id(p), tuple(p.shape), p.requires_grad) for p in m.parameters()),
                    tuple(id(b) for b in m.buffers()))
        return key, tensors

    # -- calling --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        key, tensors = self._guards(args, kwargs)
        entry = self.cache.get(key)
        if entry is None and self.dynamic is not False:
            family = self._family(key)
            shapes = [t._shape for t in tensors]
            for general in self.dynamic_entries.get(family, ()):
                if general.guard.holds(shapes):
                    general.calls += 1
                    return run_graph(general.lowered, tensors)
            previous = self._same_family(family, key)
            if previous is not None and len(self.cache) < self.recompile_limit:
                self.recompiles += 1
                out = self._capture(key, tensors, args, kwargs)
                self._generalize(family, previous, self.cache.get(key), tensors)
                return out
        if entry is None:
            if len(self.cache) >= self.recompile_limit:
                what = (f"ember.compile: {getattr(self.fn, '__name__', self.fn)} hit the "
                        f"recompile limit ({self.recompile_limit})")
                if self.fullgraph:
                    raise RuntimeError(f"{what} with fullgraph=True")
                if not self._warned_limit:
                    self._warned_limit = True
                    warnings.warn(f"{what}; new argument shapes/dtypes run eagerly from now on",
                                  UserWarning, stacklevel=2)
                return self.fn(*args, **kwargs)
            if self.cache:
                self.recompiles += 1
            if self.mode == "reduce-overhead":
                # warm-up: the first call runs eagerly (optimizers create their state)
                self.cache[key] = entry = _Entry(None)
                entry.warming = True
                return self.fn(*args, **kwargs)
            return self._capture(key, tensors, args, kwargs)
        entry.calls += 1
        if entry.warming:
            return self._capture(key, tensors, args, kwargs, previous=entry)
        if entry.graph is None:          # a graph break: this case runs eagerly
            return self.fn(*args, **kwargs)
        return _replay(entry, tensors)

    def _capture(self, key, tensors, args, kwargs, previous=None):
        joint = None
        steps = self.mode == "reduce-overhead"
        with Capture(tensors, self.fullgraph, allow_backward=steps) as cap, \
                step.StepRecorder(cap) if steps else _nothing() as recorder:
            out = self.fn(*args, **kwargs)
            if not cap.breaks:
                cap.graph.output = _encode_output(cap, out)
            is_step = recorder is not None and recorder.saw_backward
            if not cap.breaks and not is_step and not callable(self.backend) and \
                    self.backend != "eager" and _records_autograd(cap.graph, tensors):
                joint = aot.capture_joint(cap, out, tensors)
        if cap.breaks:
            self.cache[key] = _Entry(None, cap.breaks)
            return out
        graph = cap.graph
        if is_step and cap.opaque:
            self.cache[key] = _Entry(None, [(f"the training step's backward can't be replayed: "
                                             f"{cap.opaque}", "<step>")])
            return out
        if is_step:
            return self._step_captured(key, graph, tensors, out, previous)
        if callable(self.backend):       # torch's contract: backend(graph, example_inputs)
            self.cache[key] = _Entry(graph, runner=self.backend(graph, list(tensors)))
            return out
        fusing = self.backend in ("ember", "inductor")
        if isinstance(joint, aot.JointGraph):
            if fusing:
                joint.forward_run = fusion.fuse(joint.forward, joint.forward.input_meta, _lower)
                joint.backward_run = fusion.fuse(joint.backward, joint.backward.input_meta,
                                                 _lower)
            entry = _Entry(graph)
            entry.joint = joint
            self.cache[key] = entry
            return out
        lowered = graph
        if fusing and not _records_autograd(graph, tensors):
            lowered = fusion.fuse(graph, [_meta(t) for t in tensors], _lower)
        entry = _Entry(graph, lowered=lowered)
        entry.eager_autograd = joint     # why the backward isn't compiled (or None)
        entry.shapes = [t._shape for t in tensors]
        self.cache[key] = entry
        return out

    def _step_captured(self, key, graph, tensors, out, previous):
        """A captured training step: compiled once two captures agree (step.py)."""
        first = previous.pending if previous is not None else None
        if first is None:
            entry = _Entry(None)
            entry.warming = True
            entry.pending = graph
            self.cache[key] = entry
            return out
        why = step.difference(first, graph)
        if why is not None:
            self.cache[key] = _Entry(None, [(f"the training step is not the same program "
                                             f"each time: {why}", "<step>")])
            return out
        step.mark_owned(graph)
        lowered = graph
        if self.backend in ("ember", "inductor"):
            metas = [_meta(t) for t in tensors]
            lowered = fusion.fuse_foreach(fusion.fuse(graph, metas, _lower), metas,
                                          _lower_foreach)
        entry = _Entry(graph, lowered=lowered)
        entry.step = True
        self.cache[key] = entry
        return out


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _meta(t):
    return (tuple(t.shape), t.dtype, t.device)


def _records_autograd(graph, tensors):
    """Whether replaying ``graph`` must record autograd (then its ops stay separate)."""
    return _grad_mode.is_grad_enabled() and any(
        t.requires_grad for t in list(tensors) + list(graph.constants))


_runners = {}


def _lower_foreach(device, kernel):
    key = (device.type, kernel.key)
    if key not in _runners:
        from ..runtime.registry import registry
        _runners[key] = registry.get(device.type).compile_foreach(kernel)
    return _runners[key]


def _lower(device, kernel):
    """The device backend's runner for a fused kernel (None: the backend has no lowering)."""
    key = (device.type, kernel.key)
    if key not in _runners:
        from ..runtime.registry import registry
        _runners[key] = registry.get(device.type).compile_pointwise(kernel)
    return _runners[key]


def _encode_output(cap, out):
    if isinstance(out, Tensor):
        return cap.ref(out)
    if isinstance(out, (list, tuple)):
        return rebuild(out, [_encode_output(cap, o) for o in out])
    if isinstance(out, dict):
        return {k: _encode_output(cap, v) for k, v in out.items()}
    return out


def run_graph(graph, inputs):
    """Runs a captured ``graph`` on ``inputs`` (its tensor arguments, in order): every node
    called again, the function's output rebuilt — through the graph's generated Python
    function (``codegen.py``), made on first use."""
    fn = getattr(graph, "_python", None)
    if fn is None or fn.n_nodes != len(graph.nodes):
        fn = graph._python = codegen.python_function(graph)
        fn.n_nodes = len(graph.nodes)
    return fn(inputs)


def _replay(entry, inputs):
    if entry.runner is not None:
        return entry.runner(*inputs)
    if entry.joint is not None:
        return aot.run(entry.joint, inputs, entry.graph.constants)
    if entry.step:
        with _grad_mode.no_grad():
            return run_graph(entry.lowered, inputs)
    return run_graph(entry.lowered, inputs)


def _call(node, load):
    from .._device import device as device_cls
    args = load(node.args)
    kwargs = load(node.kwargs)
    if not _tensors_in(args):            # a factory: dispatched on its device argument
        for a in args:
            if isinstance(a, device_cls):
                return node.op.on(a, *args, **kwargs)
    return node.op(*args, **kwargs)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, name=None, disable=False, recompile_limit=None,
            isolate_recompiles=False, shapes_spec=None):
    """``torch.compile``'s signature. ``backend``: "ember" (or "inductor", which maps to it), or
    a callable ``backend(graph, example_inputs) -> callable``; ``mode``: None, "default",
    "reduce-overhead", "max-autotune" (accepted; all replay the same way today).
    ``recompile_limit`` replaces ``RECOMPILE_LIMIT`` for this call (past it, shapes run eagerly;
    with ``fullgraph`` it raises); every call already keeps its own graphs, which is what
    ``isolate_recompiles`` asks torch for; ``name`` is kept on the result."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, name=name, disable=disable,
                                 recompile_limit=recompile_limit,
                                 isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
    if shapes_spec is not None:
        warnings.warn("ember.compile: shapes_spec is not used by ember's compiler (dynamic "
                      "families generalize sizes from the calls seen) and is ignored",
                      UserWarning, stacklevel=2)
    if mode not in (None, "default", "reduce-overhead", "max-autotune",
                    "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, "
                           f"reduce-overhead, max-autotune, max-autotune-no-cudagraphs")
    if isinstance(backend, str) and backend not in ("ember", "inductor", "eager", "aot_eager"):
        raise RuntimeError(f"ember.compile: unknown backend {backend!r}; use 'ember' "
                           f"('inductor' maps to it) or a callable")
    for key in (options or {}):
        if key not in KNOWN_OPTIONS:
            warnings.warn(f"ember.compile: option {key!r} is not used by ember's compiler and "
                          f"is ignored", UserWarning, stacklevel=2)
    if disable:
        return model
    from ..nn.modules.module import Module
    limits = {"name": name, "recompile_limit": recompile_limit}
    if isinstance(model, Module):
        compiled = CompiledFunction(model.forward, fullgraph=fullgraph, dynamic=dynamic,
                                    backend=backend, mode=mode, options=options, module=model,
                                    **limits)
        return _CompiledModule(model, compiled)
    if not callable(model):
        raise RuntimeError("ember.compile: expected a callable or an nn.Module, got "
                           f"{type(model).__name__}")
    return CompiledFunction(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                            mode=mode, options=options, **limits)


class _CompiledModule:
    """A module whose calls go through its compiled forward (``torch.compile(module)``'s
    OptimizedModule): attributes, parameters and state_dict are the original module's."""

    def __init__(self, module, compiled):
        object.__setattr__(self, "_orig_mod", module)
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)


def _module_compile(self, *args, **kwargs):
    """``nn.Module.compile()``: this module's calls go through ``ember.compile`` of its forward
    (in place, like torch's)."""
    compiled = CompiledFunction(self.forward, module=self,
                                **{k: v for k, v in kwargs.items() if k in (
                                    "fullgraph", "dynamic", "backend", "mode", "options", "name",
                                    "recompile_limit")})
    object.__setattr__(self, "forward", compiled)


class _Explanation:
    def __init__(self, graphs, breaks):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.break_reasons = breaks
        self.graph_break_count = len(breaks)
        self.ops_per_graph = [g.op_names() for g in graphs]
        self.op_count = sum(len(g.nodes) for g in graphs)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  {i + 1}. {reason}\n     at {where}"
                  for i, (reason, where) in enumerate(self.break_reasons)]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  graph {i}: {', '.join(ops)}")
        return "\n".join(lines)


def explain(fn):
    """``explain(fn)(*args)``: capture ``fn`` on these arguments and report its graphs, graph
    breaks with their reasons, and the ops of each graph (torch._dynamo.explain's summary)."""
    def run(*args, **kwargs):
        compiled = fn._compiled if isinstance(fn, _CompiledModule) else \
            fn if isinstance(fn, CompiledFunction) else CompiledFunction(fn)
        compiled.cache.clear()
        compiled(*args, **kwargs)
        graphs, breaks = [], []
        for entry in compiled.cache.values():
            if entry.graph is not None:
                graphs.append(entry.graph)
            breaks.extend(entry.breaks)
        return _Explanation(graphs, breaks)
    return run
