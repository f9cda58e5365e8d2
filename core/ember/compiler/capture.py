"""Capture: the dispatcher's TRACER functionality key records every top-level op call.

While a capture runs, the thread's include mask carries ``TRACER``; the handler records the
call, then runs it below itself with ``TRACER`` out of the thread's masks, so the ops a
composite or a derivative runs inside are not recorded (the graph holds what the function
called). The capture run is a real eager run: its results are the call's results.

Reading a value on the host (``item()``, ``bool()``, ``tolist()``, ``numpy()``) makes the
program depend on data: the capture notes a *graph break* with its reason and the user's line,
and the function keeps running eagerly, so results stay correct. The compiled function then
runs that case eagerly (see ``compiler/__init__.py``)."""
from __future__ import annotations

import sys
import threading
import traceback

from .. import _tensor
from .._tensor import Tensor
from ..dispatch import dispatcher as _dispatcher
from ..dispatch import keys as K
from .graph import Graph, Node, Ref
from ..autograd import engine
from ..runtime.registry import registry

TRACER = K.TRACER
_local = threading.local()


class GraphBreak(RuntimeError):
    """A capture with ``fullgraph=True`` met data-dependent Python (the message says where)."""


def _user_line():
    """``file:line`` of the innermost frame outside ember (where the user's code read it)."""
    for frame in reversed(traceback.extract_stack()[:-3]):
        if "/ember/" not in frame.filename.replace("\\", "/") or "/tests/" in frame.filename:
            return f"{frame.filename}:{frame.lineno} ({frame.line})"
    return "<unknown>"


class Capture:
    def __init__(self, inputs, fullgraph=False, allow_backward=False):
        self.graph = Graph(n_inputs=len(inputs))
        self.thread = threading.get_ident()
        self.refs = {}
        self.same_memory = {}     # (storage, layout, dtype) -> Ref: aliases map to their value
        self.alive = []           # keeps every seen tensor alive, so ids stay unique
        self.breaks = []
        #: per break, the line of ``target_code`` (the compiled function's own code) running
        #: when it happened: where resuming splits the function (None: not inside it)
        self.break_lines = []
        self.target_code = None
        self.fullgraph = fullgraph
        self.allow_backward = allow_backward   # a whole training step is being captured
        #: "forward", or "backward" while ``aot.capture_joint`` differentiates the forward
        self.phase = "forward"
        #: why the captured backward can't be replayed (it read a value made inside an op)
        self.opaque = None
        for i, t in enumerate(inputs):
            self._bind(t, Ref("input", i))

    def _bind(self, t, ref):
        self.refs[id(t)] = ref
        self.alive.append(t)
        self.same_memory.setdefault(_memory_key(t), ref)

    def ref(self, t):
        r = self.refs.get(id(t))
        if r is None:
            # autograd keeps an op's output as a new tensor object over the same memory
            r = self.same_memory.get(_memory_key(t))
            if r is not None:
                self.refs[id(t)] = r
                self.alive.append(t)
                return r
        if r is None:            # a tensor the function closed over: a parameter, a buffer
            if self.opaque is None and (self.phase == "backward" or (
                    self.allow_backward and _engine_running())):
                # a derivative read a tensor no recorded op made: an intermediate inside an
                # op's implementation (a composite's, a random mask). Replaying would read the
                # capture run's stale value, so this backward can't be compiled.
                self.opaque = (f"the backward reads a {list(t.shape)} {t.dtype} tensor made "
                               f"inside an op's implementation, not by a captured op")
            r = Ref("const", len(self.graph.constants))
            self.graph.constants.append(t)
            self._bind(t, r)
        return r

    def encode(self, value):
        if isinstance(value, Tensor):
            return self.ref(value)
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            return type(value)(self.encode(v) for v in value)
        return value

    def record(self, op, args, kwargs, out):
        index = len(self.graph.nodes)
        keys = 0
        for t in _dispatcher.tensors_in(args):
            keys |= t._ks
        node = Node(op, tuple(self.encode(a) for a in args),
                    {k: self.encode(v) for k, v in kwargs.items()}, _meta(out), keys,
                    _layout(out), _view_of(op, args, out))
        self.graph.nodes.append(node)
        if isinstance(out, Tensor):
            self._bind(out, Ref("node", index))
        elif isinstance(out, (list, tuple)):
            for k, o in enumerate(out):
                if isinstance(o, Tensor):
                    self._bind(o, Ref("node", index, k))

    def value_read(self, reason, kind="value"):
        if threading.get_ident() != self.thread:
            return               # another thread's read: not this capture's business
        if kind == "backward" and (self.phase == "backward" or self.allow_backward):
            return               # the backward compile's own autograd.grad call
        where = _user_line()
        self.breaks.append((reason, where))
        self.break_lines.append(_line_in(self.target_code))
        if self.fullgraph:
            raise GraphBreak(f"ember.compile(fullgraph=True): graph break at {where}: {reason}")

    def paused(self):
        """A context in which ops run without being recorded (the capture's own tensors)."""
        return _Paused()

    # -- running --------------------------------------------------------------------------------
    def __enter__(self):
        if getattr(_local, "capture", None) is not None:
            raise RuntimeError("ember.compile: a capture is already running on this thread")
        _install()
        _local.capture = self
        st = K.state
        self._masks = st.masks
        # no functionality forced on around the capture (autocast, a Python mode, inference
        # mode): a replay may then call kernels directly (codegen.py)
        self.graph.plain = not (st.masks[0] & K.FUNCTIONALITY_MASK)
        st.masks = (st.masks[0] | TRACER, st.masks[1] | TRACER)
        _tensor._capture_hooks.append(self.value_read)
        return self

    def __exit__(self, *exc):
        K.state.masks = self._masks
        _tensor._capture_hooks.remove(self.value_read)
        _local.capture = None
        return False


def _line_in(code):
    """The line the innermost frame running ``code`` is at (None when none is)."""
    if code is None:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _engine_running():
    """Whether autograd's engine is running a backward on this thread (a training step's)."""
    return getattr(engine._local, "run", None) is not None


def _memory_key(t):
    return (id(t._storage), t._shape, t._stride, t._offset, t.dtype)


class _Paused:
    def __enter__(self):
        st = K.state
        self._masks = st.masks
        st.masks = (st.masks[0] & ~TRACER, st.masks[1] & ~TRACER)

    def __exit__(self, *exc):
        K.state.masks = self._masks
        return False


def _view_of(op, args, out):
    """The position of the argument ``out`` is a view of (same storage, dtype and device), for
    a non-mutating op; None otherwise."""
    if not isinstance(out, Tensor) or op.mutates:
        return None
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            if a._storage is out._storage and a.dtype == out.dtype and a.device == out.device:
                return i
            return None
    return None


def _layout(out):
    """(strides, storage offset) of each output, for exporters that must tell a reshape from a
    general ``as_strided``."""
    if isinstance(out, Tensor):
        return (out._stride, out._offset)
    if isinstance(out, (list, tuple)):
        return [(o._stride, o._offset) if isinstance(o, Tensor) else None for o in out]
    return None


def _meta(out):
    if isinstance(out, Tensor):
        return (tuple(out.shape), out.dtype, out.device)
    if isinstance(out, (list, tuple)):
        return [(tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else None
                for o in out]
    return None


def _inlined(op, args):
    """Whether ``op`` is recorded as the ops its composite runs: a pure decomposition (no
    derivative of its own) with no kernel on the arguments' devices. Its inner ops then carry
    every value the backward reads (attention's log-sum-exp), so the backward can be
    compiled; factories stay one node."""
    if op.composite is None or op.derivative is not None:
        return False
    devices = {t.device.type for t in _dispatcher.tensors_in(args)}
    if not devices:
        return False
    return all(registry.get(d).kernels.get(op.name) is None for d in devices)


def _make_handler(op, bit):
    def handler(*args, **kwargs):
        if _inlined(op, args):
            return op.composite(*args, **kwargs)      # TRACER stays on: inner ops recorded
        out = _dispatcher.call_below(op, TRACER, args, kwargs)
        capture = getattr(_local, "capture", None)
        if capture is not None:
            if any(t._ks & K.BATCHED for t in _dispatcher.tensors_in(args)):
                capture.value_read("an ember.func transform (vmap/jvp) runs inside the "
                                   "function; its wrapped tensors are not graph values")
            capture.record(op, args, kwargs, out)
        return out
    return handler


_installed = [False]


def _install():
    if not _installed[0]:
        _dispatcher.register_functionality(TRACER, _make_handler)
        _installed[0] = True
