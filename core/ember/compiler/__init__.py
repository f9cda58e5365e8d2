"""``ember.compile``: capture a function's ops through the dispatcher once, guard what the
capture assumed, lower the graph (fused kernels, a compiled backward, whole training steps)
and replay it on later calls. One module per stage (docs/architecture.md, "Compile"):

* ``capture.py``: a real eager run with the TRACER dispatch key on; every top-level op call
  becomes a node of a ``Graph`` (``graph.py``). Reading a tensor's value in Python is a graph
  break, its reason kept for ``explain``; ``fullgraph=True`` raises instead, naming the line.
* ``resume.py``: a case with breaks runs as compiled pieces around the statements that broke.
* guards (``CompiledFunction._guards``): each tensor argument's shape, dtype, device and
  requires_grad, which arguments alias, the other arguments by value, grad mode, and for a
  module its parameters' and buffers' identities and ``training``; past ``RECOMPILE_LIMIT``
  cases the function warns and runs eagerly, like torch's recompile_limit.
* ``tracing.py`` / ``guards.py``: the Python state the call read (globals, closure cells,
  attributes, container items), found by tracing the capture run, guarded by one generated
  check; ``effects.py``: the state it wrote, redone after each replay with its values.
* ``dynamic.py``: after a size changes, ints that follow it become ``SymInt``s.
* ``pointwise.py`` / ``fusion.py``: pointwise chains (with a reduction epilogue) and foreach
  runs become one kernel through ``Backend.compile_pointwise`` / ``compile_foreach``.
* ``aot.py``: a graph that must record autograd gets its backward captured and compiled too.
* ``step.py``: ``mode="reduce-overhead"`` captures forward + backward + optimizer step.
* ``codegen.py``: the replay is a generated Python function over the graph's nodes, calling
  device handlers directly and rebuilding views where no autograd is needed.

A ``backend`` callable gets the graph and example inputs and returns what runs instead
(torch's backend contract); ``backend="eager"`` replays without fusion or a compiled
backward. Tensors made from Python data inside the function are constants of the graph (the
Python values they came from are guarded).
"""
from __future__ import annotations

import functools
import warnings

from .._tensor import Tensor
from ..dispatch import grad_mode as _grad_mode
from . import aot, codegen, dynamic, effects, fusion, guard_log, guards, resume, step, tracing
from .capture import Capture, GraphBreak
from .capture import _local as _capture_local
from .graph import Graph, Node, Ref, rebuild
from ..runtime.layout import contiguous_strides
from .._device import device as device_cls
from .._dtype import dtype as dtype_cls
from ..nn.modules.module import Module
from ..runtime.registry import registry
from ..utils._pytree import leaves_of_type
from .._warn import user_stacklevel

__all__ = ["compile", "explain", "is_compiling", "run_graph", "CompiledFunction", "GraphBreak",
           "Graph", "Node", "Ref",
           "RECOMPILE_LIMIT"]

RECOMPILE_LIMIT = 8
KNOWN_OPTIONS = {"trace.graph_diagram", "debug"}


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
    (fused loops in place of pointwise chains), or ``runner`` from a callable backend.
    ``state`` guards the Python values the capture read, ``effects`` are the side effects a
    replay redoes, ``next`` the case captured before for the same arguments (other state)."""
    __slots__ = ("graph", "lowered", "breaks", "runner", "calls", "joint", "eager_autograd",
                 "warming", "pending", "step", "shapes", "guard", "state", "effects", "next",
                 "resumed")

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
        self.state = None            # guards.StateGuard: the Python state the capture read
        self.effects = None          # effects.Effects: side effects redone on each replay
        self.next = None             # an older case for the same arguments
        self.resumed = None          # resume.Driver: a case with breaks run as pieces


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
        """A graph (plain, or forward+backward) captured for another shape of this family."""
        for k, entry in self.cache.items():
            if k != key and entry.graph is not None and entry.shapes is not None and \
                    not entry.step and entry.runner is None and self._family(k) == family:
                return entry
        return None

    def _generalize(self, family, previous, entry, tensors):
        if entry is None or entry.graph is None or entry.step or entry.runner is not None or \
                entry.shapes is None or (entry.joint is None) != (previous.joint is None):
            return
        fusing = self.backend in ("ember", "inductor")
        if entry.joint is not None:
            general = _generalize_joint(previous, entry, fusing)
            if general is None:
                return
        else:
            result = dynamic.generalize(previous.graph, entry.graph, previous.shapes,
                                        entry.shapes)
            if result is None:
                return
            graph, guard = result
            general = _Entry(graph)
            general.guard = guard
            lowered = graph
            if not _records_autograd(graph, tensors):
                if fusing:
                    lowered = _fuse(graph, [_meta(t) for t in tensors])
                lowered.direct = True
            general.lowered = lowered
        general.state, general.effects = entry.state, entry.effects
        self.dynamic_entries.setdefault(family, []).append(general)

    # -- guards ---------------------------------------------------------------------------------
    def _guards(self, args, kwargs):
        tensors = leaves_of_type([args, kwargs], Tensor)
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
    def entries(self):
        """Every captured case (each argument key's chain of state variants)."""
        out = []
        for head in self.cache.values():
            while head is not None:
                out.append(head)
                head = head.next
        return out

    def _store(self, key, entry, replacing=None):
        """Makes ``entry`` the first case for ``key``; older cases stay behind it."""
        older = [e for e in _chain(self.cache.get(key)) if e is not replacing]
        for a, b in zip([entry] + older, older + [None]):
            a.next = b
        self.cache[key] = entry

    def __call__(self, *args, **kwargs):
        if getattr(_capture_local, "capture", None) is not None:
            return self.fn(*args, **kwargs)      # inside another capture: inlined there
        key, tensors = self._guards(args, kwargs)
        head = self.cache.get(key)
        entry = head
        while entry is not None and entry.state is not None and not entry.state.check():
            entry = entry.next
        if entry is None and self.dynamic is not False:
            family = self._family(key)
            shapes = [t._shape for t in tensors]
            for general in self.dynamic_entries.get(family, ()):
                if general.guard.holds(shapes) and (general.state is None or
                                                    general.state.check()):
                    general.calls += 1
                    return _replay(general, tensors)
            previous = self._same_family(family, key)
            if previous is not None and head is None and \
                    len(self.entries()) < self.recompile_limit:
                self.recompiles += 1
                if guard_log.recompiles.isEnabledFor(20):
                    guard_log.recompiles.info(
                        "%s: recompiling (case %d of at most %d, dynamic shapes): %s",
                        guard_log.name_of(self.fn), len(self.cache) + 1, self.recompile_limit,
                        guard_log.nearest_difference(self.cache, key))
                out = self._capture(key, tensors, args, kwargs)
                self._generalize(family, previous, self.cache.get(key), tensors)
                return out
        if entry is None:
            if len(self.entries()) >= self.recompile_limit:
                what = (f"ember.compile: {getattr(self.fn, '__name__', self.fn)} hit the "
                        f"recompile limit ({self.recompile_limit})")
                if self.fullgraph:
                    raise RuntimeError(f"{what} with fullgraph=True")
                if not self._warned_limit:
                    self._warned_limit = True
                    guard_log.recompiles.warning("%s: hit the recompile limit (%d): %s; runs "
                                                 "eagerly", guard_log.name_of(self.fn),
                                                 self.recompile_limit,
                                                 guard_log.nearest_difference(self.cache, key))
                    warnings.warn(f"{what}; new argument shapes/dtypes run eagerly from now on",
                                  UserWarning, stacklevel=user_stacklevel())
                return self.fn(*args, **kwargs)
            if self.cache:
                self.recompiles += 1
                if guard_log.recompiles.isEnabledFor(20):
                    guard_log.recompiles.info("%s: recompiling (case %d of at most %d): %s",
                                              guard_log.name_of(self.fn), len(self.cache) + 1,
                                              self.recompile_limit,
                                              guard_log.nearest_difference(self.cache, key))
            if guard_log.guards.isEnabledFor(10):
                guard_log.guards.debug("%s: guards of case %d:\n  %s", guard_log.name_of(self.fn),
                                       len(self.cache) + 1,
                                       "\n  ".join(guard_log.describe(key)))
            if self.mode == "reduce-overhead":
                # warm-up: the first call runs eagerly (optimizers create their state)
                entry = _Entry(None)
                entry.warming = True
                self._store(key, entry)
                return self.fn(*args, **kwargs)
            return self._capture(key, tensors, args, kwargs)
        entry.calls += 1
        if entry.warming:
            return self._capture(key, tensors, args, kwargs, previous=entry)
        if entry.graph is None:          # a graph break: pieces around it, or eagerly
            if entry.resumed is not None:
                return entry.resumed(args, kwargs)
            return self.fn(*args, **kwargs)
        return _replay(entry, tensors)

    def _capture(self, key, tensors, args, kwargs, previous=None):
        joint = None
        steps = self.mode == "reduce-overhead"
        side_effects = None
        with Capture(tensors, self.fullgraph, allow_backward=steps) as cap, \
                step.StepRecorder(cap) if steps else _nothing() as recorder:
            cap.target_code = getattr(getattr(self.fn, "__func__", self.fn), "__code__", None)
            tracer = tracing.StateTracer(self.fn, args, kwargs, on_impure=cap.value_read)
            with tracer:
                out = self.fn(*args, **kwargs)
            if not cap.breaks:
                side_effects = _side_effects(cap, tracer, out)
            if not cap.breaks:
                cap.graph.output = _encode_output(cap, out)
                if side_effects is not None:
                    cap.graph.output = (cap.graph.output, side_effects.values)
            is_step = recorder is not None and recorder.saw_backward
            if not cap.breaks and not is_step and not callable(self.backend) and \
                    self.backend != "eager" and _records_autograd(cap.graph, tensors):
                joint = aot.capture_joint(
                    cap, out if side_effects is None else (out, side_effects.raw), tensors)
        state = guards.StateGuard(tracer.reads.values(), skip=set(tracer.mutated))
        replacing = previous

        def store(entry):
            entry.state, entry.effects = state, side_effects
            self._store(key, entry, replacing)
            return out
        if cap.breaks:
            for reason, where in cap.breaks:
                guard_log.graph_breaks.info("%s: graph break: %s, at %s",
                                            guard_log.name_of(self.fn), reason, where)
            entry = _Entry(None, cap.breaks)
            entry.resumed = resume.plan(self.fn, cap.break_lines, self._compile_piece)
            if entry.resumed is not None:
                state = None             # each piece guards what it reads
            return store(entry)
        graph = cap.graph
        guard_log.log.info("%s: captured %d ops (case %d)", guard_log.name_of(self.fn),
                           len(graph.nodes), len(self.cache) + 1)
        if is_step and cap.opaque:
            return store(_Entry(None, [(f"the training step's backward can't be replayed: "
                                        f"{cap.opaque}", "<step>")]))
        if is_step:
            return self._step_captured(key, graph, tensors, out, previous, store)
        if callable(self.backend):       # torch's contract: backend(graph, example_inputs)
            return store(_Entry(graph, runner=self.backend(graph, list(tensors))))
        fusing = self.backend in ("ember", "inductor")
        if isinstance(joint, aot.JointGraph):
            if fusing:
                joint.forward_run = _fuse(joint.forward, joint.forward.input_meta)
                joint.backward_run = _fuse(joint.backward, joint.backward.input_meta)
            # the forward runs inside CompiledAutograd, the backward under the engine: neither
            # records autograd per op
            joint.forward_run.direct = joint.backward_run.direct = True
            entry = _Entry(graph)
            entry.joint = joint
            entry.shapes = [t._shape for t in tensors]
            return store(entry)
        lowered = graph
        if not _records_autograd(graph, tensors):
            if fusing:
                lowered = _fuse(graph, [_meta(t) for t in tensors])
            lowered.direct = True
        entry = _Entry(graph, lowered=lowered)
        entry.eager_autograd = joint     # why the backward isn't compiled (or None)
        entry.shapes = [t._shape for t in tensors]
        return store(entry)

    def _compile_piece(self, fn):
        """A piece of this function around a graph break (``resume.py``), compiled alike."""
        return CompiledFunction(fn, dynamic=self.dynamic, backend=self.backend, mode=self.mode,
                                options=self.options)

    def _step_captured(self, key, graph, tensors, out, previous, store):
        """A captured training step: compiled once two captures agree (step.py)."""
        first = previous.pending if previous is not None else None
        if first is None:
            entry = _Entry(None)
            entry.warming = True
            entry.pending = graph
            return store(entry)
        why = step.difference(first, graph)
        if why is not None:
            return store(_Entry(None, [(f"the training step is not the same program "
                                        f"each time: {why}", "<step>")]))
        step.mark_owned(graph)
        lowered = graph
        if self.backend in ("ember", "inductor"):
            metas = [_meta(t) for t in tensors]
            lowered = fusion.fuse_foreach(_fuse(graph, metas), metas, _lower_foreach)
        lowered.direct = True            # replayed under no_grad: no autograd layer needed
        entry = _Entry(graph, lowered=lowered)
        entry.step = True
        return store(entry)


def _generalize_joint(previous, entry, fusing):
    """A forward+backward pair valid for every size that changed between two captures (each
    graph generalized on its own inputs' shapes; the forward's guard decides), or None."""
    a, b = previous.joint, entry.joint
    if a.sources != b.sources or a.diff_outputs != b.diff_outputs or a.n_saved != b.n_saved:
        return None
    forward = dynamic.generalize(a.forward, b.forward, previous.shapes, entry.shapes)
    if forward is None:
        return None
    backward = dynamic.generalize(a.backward, b.backward,
                                  [m[0] for m in a.backward.input_meta],
                                  [m[0] for m in b.backward.input_meta])
    if backward is None:
        return None
    fwd, guard = forward
    bwd = backward[0]
    fwd.input_meta, bwd.input_meta = b.forward.input_meta, b.backward.input_meta
    joint = aot.JointGraph(fwd, bwd, b.sources, b.diff_outputs, b.n_saved)
    if fusing:
        joint.forward_run = _fuse(fwd, fwd.input_meta)
        joint.backward_run = _fuse(bwd, bwd.input_meta)
    joint.forward_run.direct = joint.backward_run.direct = True
    general = _Entry(fwd)
    general.joint = joint
    general.guard = guard
    return general


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
    return _runner(device, kernel, "compile_foreach")


def _fuse(graph, input_meta):
    """``graph`` lowered for its backends: pointwise chains fused, normalisation ops on the
    backend's runners where it has them."""
    return fusion.lower_ops(fusion.fuse(graph, input_meta, _lower), _lower_norm)


def _lower_norm(device, name, dtype):
    key = (device.type, "norm", name, dtype)
    if key not in _runners:
        _runners[key] = registry.get(device.type).compile_norm(name, dtype)
    return _runners[key]


def _lower(device, kernel):
    """The device backend's runner for a fused kernel (None: the backend has no lowering)."""
    return _runner(device, kernel, "compile_pointwise")


def _runner(device, kernel, compile_method):
    """``Backend.<compile_method>(kernel)`` for ``device``'s backend, made once per kernel."""
    key = (device.type, kernel.key)
    if key not in _runners:
        _runners[key] = getattr(registry.get(device.type), compile_method)(kernel)
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
        fn = graph._python = codegen.python_function(graph,
                                                     direct=getattr(graph, "direct", False))
        fn.n_nodes = len(graph.nodes)
    return fn(inputs)


def _replay(entry, inputs):
    if entry.runner is not None:
        out = entry.runner(*inputs)
    elif entry.joint is not None:
        out = aot.run(entry.joint, inputs, entry.graph.constants)
    elif entry.step:
        with _grad_mode.no_grad():
            out = run_graph(entry.lowered, inputs)
    else:
        out = run_graph(entry.lowered, inputs)
    if entry.effects is not None:
        out, values = out
        entry.effects.apply(effects.unwrap(values))
    return out


def _chain(entry):
    while entry is not None:
        yield entry
        entry = entry.next


def _side_effects(cap, tracer, out):
    """The call's side effects as ``effects.Effects`` (None without any); a value a replay
    can't rebuild, or an output that is a new object of an unknown kind, is a graph break."""
    why = _unreplayable_output(out, tracer.external)
    if why is not None:
        cap.value_read(why, "effect")
        return None
    try:
        return effects.collect(tracer, cap.ref)
    except effects.Unreplayable as e:
        cap.value_read(str(e), "effect")
        return None


def _unreplayable_output(out, external):
    if isinstance(out, (Tensor, int, float, bool, str, bytes, complex, type(None))) or \
            id(out) in external:
        return None
    if isinstance(out, (list, tuple)):
        for o in out:
            why = _unreplayable_output(o, external)
            if why is not None:
                return why
        return None
    if isinstance(out, dict):
        return _unreplayable_output(list(out.values()), external)
    if isinstance(out, (dtype_cls, device_cls, slice, type)) or callable(out):
        return None
    return (f"the function returns a new {type(out).__name__} object; a replay can only "
            f"rebuild tensors, numbers, strings, lists, tuples and dicts of them")


def _call(node, load):
    args = load(node.args)
    kwargs = load(node.kwargs)
    if not leaves_of_type(args, Tensor):  # a factory: dispatched on its device argument
        for a in args:
            if isinstance(a, device_cls):
                return node.op.on(a, *args, **kwargs)
    return node.op(*args, **kwargs)


def is_compiling():
    """True while ``ember.compile`` captures a function on this thread (torch.compiler's
    ``is_compiling``): code may pick a graph-friendly form, as optimizers keep step counts as
    tensors then."""
    return getattr(_capture_local, "capture", None) is not None


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
                      UserWarning, stacklevel=user_stacklevel())
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
                          f"is ignored", UserWarning, stacklevel=user_stacklevel())
    if disable:
        return model
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


from .explain import explain  # noqa: E402 - reads CompiledFunction, _CompiledModule
