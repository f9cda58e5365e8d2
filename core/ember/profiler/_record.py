"""Recording: every dispatched op, ``record_function`` ranges and autograd nodes of a session.

The profiler is the handler of the dispatcher's ``PYTHON`` functionality key. Starting a
session puts the key in the starting thread's include mask (``ember.jit.fork`` carries the mask
into forked tasks); ops then reach ``_handler``, which times the op around the handler below
the key and notes what was asked for (input shapes and dtypes, memory, Python stack, flops).
When no session runs the key is in no key set, so dispatch pays nothing for the profiler.

Nesting: the handler calls the handler *below* the key for the op's key set without leaving
the key, so the ops a composite (or a kernel) dispatches are recorded as children, and self
time is total time minus the children's. The one redispatch that must not be recorded twice
is the autograd layer running the same op below itself: the handler notes ``(op, args)`` and
the next entry with exactly that op and those argument objects passes straight through.

Autograd nodes are recorded through ``engine.node_observer`` (set while a session runs): each
node's backward is a range ``autograd::engine::evaluate_function: <Node>`` on the thread that
runs the backward, holding the formula's ops. Device kernels are timed by backends that offer
``start_kernel_timing(owner)`` / ``stop_kernel_timing()`` (OpenCL: profiling queue events).
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time

from .._device import device as _device_cls
from .._tensor import Tensor
from ..dispatch import dispatcher as _dispatcher
from ..dispatch import keys as K
from ..autograd import engine
from ..runtime.registry import registry

PYTHON = K.PYTHON
_tls = threading.local()
_session = None            # the running session (one at a time)
_session_lock = threading.Lock()
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the dispatch machinery's frames say nothing about where an op was called from
_SKIP_FILES = (os.path.join(_EMBER_DIR, "dispatch"), os.path.join(_EMBER_DIR, "profiler"),
               os.path.join(_EMBER_DIR, "autograd", "record.py"))


class Record:
    """One timed range: an op, a ``record_function`` range, an autograd node or a kernel."""

    __slots__ = ("id", "name", "kind", "tid", "start", "end", "parent", "child_time",
                 "shapes", "dtypes", "device", "stack", "flops", "mem", "child_mem", "dev_mem",
                 "child_dev_mem", "device_time", "child_device_time", "args", "stream",
                 "open_on")

    def __init__(self, rid, name, kind, tid, parent):
        self.id = rid
        self.name = name
        self.kind = kind            # "op", "user_annotation", "autograd", "kernel"
        self.tid = tid
        self.parent = parent
        self.start = self.end = 0
        self.child_time = 0
        self.shapes = self.dtypes = self.stack = self.device = self.args = self.stream = None
        self.flops = 0
        self.mem = self.child_mem = self.dev_mem = self.child_dev_mem = 0
        self.device_time = self.child_device_time = 0
        self.open_on = None         # the stack of open records of the thread that opened it


class Session:
    """What one profiling window records, from every thread that runs with the key on."""

    def __init__(self, *, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, device_types=()):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.device_types = tuple(device_types)
        self.records = []           # list.append is atomic: threads append without a lock
        self.thread_names = {}
        self.kernel_records = []
        self._ids = iter(range(1, 1 << 62))
        self._timed_backends = []
        self.perf0 = self.wall0 = 0
        self.stopped = False

    # -- life cycle -----------------------------------------------------------------------------
    def start(self):
        global _session
        with _session_lock:
            if _session is not None:
                raise RuntimeError("ember.profiler: a profiler is already running; stop it "
                                   "before starting another")
            if _dispatcher._functionality_handlers.get(PYTHON) is not _make_handler:
                # once: registering clears every op's resolution cache
                _dispatcher.register_functionality(PYTHON, _make_handler)
            engine.node_observer = _observe_node
            self.perf0 = time.perf_counter_ns()
            self.wall0 = time.time_ns()
            _session = self
        self._start_device_timing()
        st = K.state
        st.masks = (st.masks[0] | PYTHON, st.masks[1])

    def stop(self):
        global _session
        st = K.state
        st.masks = (st.masks[0] & ~PYTHON, st.masks[1])
        kernels = self._stop_device_timing()
        with _session_lock:
            if _session is self:
                _session = None
                engine.node_observer = None
        self.stopped = True
        self._attach_kernels(kernels)

    # -- device kernels ---------------------------------------------------------------------------
    def _start_device_timing(self):
        if not self.device_types:
            return
        for name in registry.names():
            if name == "cpu" or name not in self.device_types:
                continue
            backend = registry.peek(name)
            start = getattr(backend, "start_kernel_timing", None)
            if start is None or not backend.is_available():
                continue
            start(_current_record)
            self._timed_backends.append(backend)

    def _stop_device_timing(self):
        out = []
        for backend in self._timed_backends:
            out.extend(backend.stop_kernel_timing())
        self._timed_backends = []
        return out

    def _attach_kernels(self, kernels):
        """Kernel ranges become records on their device's rows, their time added to the op
        that launched them (self) and to its ancestors (total)."""
        for k in kernels:
            owner = k.get("owner")
            rec = Record(next(self._ids), k.get("name") or (owner.name if owner else "kernel"),
                         "kernel", k.get("stream", "stream 0"), owner)
            rec.start, rec.end = k["start_ns"], k["end_ns"]
            rec.device = k.get("device")
            rec.stream = k.get("stream", "stream 0")
            self.kernel_records.append(rec)
            dur = rec.end - rec.start
            if owner is not None:
                owner.device_time += dur
                p = owner.parent
                while p is not None:
                    p.child_device_time += dur
                    p = p.parent

    def next_id(self):
        return next(self._ids)


def current_session():
    return _session


def _thread_stack():
    stack = getattr(_tls, "stack", None)
    if stack is None:
        stack = _tls.stack = []
        _tls.tid = threading.get_native_id()
        sess = _session
        if sess is not None:
            sess.thread_names[_tls.tid] = threading.current_thread().name
    return stack


def _current_record():
    """The innermost open record of this thread (a kernel's owner), or None."""
    stack = getattr(_tls, "stack", None)
    return stack[-1] if stack else None


def _profiling_here(sess) -> bool:
    return sess is not None and K.state.masks[0] & PYTHON


# -- opening and closing ranges -----------------------------------------------------------------
def open_range(sess, name, kind):
    stack = _thread_stack()
    tid = _tls.tid
    if tid not in sess.thread_names:
        sess.thread_names[tid] = threading.current_thread().name
    rec = Record(sess.next_id(), name, kind, tid, stack[-1] if stack else None)
    if sess.with_stack:
        rec.stack = _python_stack()
    rec.open_on = stack
    stack.append(rec)
    rec.start = time.perf_counter_ns()
    return rec


def close_range(sess, rec):
    rec.end = time.perf_counter_ns()
    # the opening thread's stack: a record_function may be exited on another thread (a range
    # around work handed to a pool), as PyTorch allows
    stack = rec.open_on or []
    rec.open_on = None
    if stack and stack[-1] is rec:
        stack.pop()
    elif rec in stack:   # a range closed out of order: close what it encloses too
        del stack[stack.index(rec):]
    parent = rec.parent
    if parent is not None:
        parent.child_time += rec.end - rec.start
        parent.child_mem += rec.mem
        parent.child_dev_mem += rec.dev_mem
    sess.records.append(rec)


def _python_stack(limit=64):
    """``file(line): function`` frames of the Python caller, innermost first, without the
    dispatcher's and the profiler's own frames; ember's files relative to the package."""
    out = []
    f = sys._getframe(2)
    parent_dir = os.path.dirname(_EMBER_DIR)
    while f is not None and len(out) < limit:
        fn = f.f_code.co_filename
        if not fn.startswith(_SKIP_FILES):
            shown = os.path.relpath(fn, parent_dir) if fn.startswith(_EMBER_DIR) else fn
            out.append(f"{shown}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


# -- the dispatch handler -----------------------------------------------------------------------
def _below(op, args):
    include, keep = K.state.masks
    ks = ((_dispatcher.key_set(op, args) | include) & keep) & ~PYTHON
    handler = op._cache.get(ks)
    return handler if handler is not None else op._resolve(ks)


def _same_call(pending, op, args):
    if pending[0] is not op:
        return False
    prev = pending[1]
    return len(prev) == len(args) and all(a is b for a, b in zip(prev, args))


def _make_handler(op, bit):
    name = op.name

    def handler(*args, **kwargs):
        sess = _session
        pending = getattr(_tls, "pending", None)
        if sess is None or (pending is not None and _same_call(pending, op, args)):
            _tls.pending = None
            return _below(op, args)(*args, **kwargs)
        _tls.pending = None
        below = _below(op, args)
        rec = open_range(sess, name, "op")
        if sess.record_shapes:
            rec.shapes, rec.dtypes = _shapes(args)
        mem_before = _memory_before(rec, args) if sess.profile_memory else None
        out = None
        _tls.pending = (op, args)
        try:
            out = below(*args, **kwargs)
        finally:
            _tls.pending = None
            if mem_before is not None:
                _memory_after(rec, args, mem_before, out)
            close_range(sess, rec)
        if rec.device is None:
            rec.device = _device_of(args, out)
        if sess.with_flops:
            rec.flops = _flops(name, args, out)
        return out

    handler.__name__ = f"profile_{name}"
    return handler


def _shapes(args):
    shapes, dtypes = [], []
    for a in args:
        if isinstance(a, Tensor):
            shapes.append(list(a._shape))
            dtypes.append(a.dtype.name)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
            shapes.append([list(x._shape) for x in a])
            dtypes.append("TensorList")
        else:
            shapes.append([])
            dtypes.append("Scalar" if isinstance(a, (int, float, bool, complex)) else
                          "" if a is None else type(a).__name__)
    return shapes, dtypes


def _device_of(args, out):
    for a in args:
        if isinstance(a, Tensor):
            return a.device
        if a.__class__ is _device_cls:
            return a
    first = out[0] if isinstance(out, (tuple, list)) and out else out
    return first.device if isinstance(first, Tensor) else None


# -- memory -------------------------------------------------------------------------------------
def _allocator(dev):
    if dev is None or dev.type == "cpu":
        return None
    try:
        return registry.get(dev.type).allocator(dev.index or 0)
    except Exception:  # a backend without an allocator keeps no statistics
        return None


def _memory_before(rec, args):
    """Device allocators' allocated bytes before the op (CPU memory is counted from the
    outputs: numpy's allocator has no statistics)."""
    dev = _device_of(args, None)
    rec.device = dev
    alloc = _allocator(dev)
    return (alloc, alloc.memory_allocated()) if alloc is not None else (None, 0)


def _memory_after(rec, args, before, out):
    alloc, bytes_before = before
    if alloc is not None:
        rec.dev_mem = alloc.memory_allocated() - bytes_before
        return
    inputs = {id(a._storage) for a in _dispatcher.tensors_in(args)}
    seen = set()
    total = 0
    for o in _dispatcher.tensors_in(out if isinstance(out, (tuple, list)) else (out,)):
        st = o._storage
        if id(st) not in inputs and id(st) not in seen and o.device.type == "cpu":
            seen.add(id(st))
            total += st.nbytes
    rec.mem = total



# -- flops --------------------------------------------------------------------------------------
def _numel(shape):
    return math.prod(shape)


def _matmul_flops(a, b, out):
    k = a._shape[-1] if a.ndim else 1
    return 2 * _numel(out._shape) * k


def _flops(name, args, out):
    """Multiply-add counts (2 flops each) of the product ops; 0 for the rest."""
    try:
        if name in ("matmul", "addmm", "baddbmm", "addmv"):
            a, b = (args[0], args[1]) if name == "matmul" else (args[1], args[2])
            return _matmul_flops(a, b, out if name == "matmul" else args[0])
        if name in ("lstm_step", "gru_step", "rnn_step"):
            hx = args[1]
            w_hh = args[3] if name == "lstm_step" else args[2]
            f = 2 * hx._shape[0] * _numel(w_hh._shape)
            if name == "lstm_step" and args[5] is not None:
                f += 2 * hx._shape[0] * _numel(args[5]._shape)
            return f
        if name == "lstm_layer":    # steps lstm_steps: every row of gates_x is one step's
            w_hr = args[5]
            per_row = _numel(args[3]._shape) + (0 if w_hr is None else _numel(w_hr._shape))
            return 2 * args[0]._shape[0] * per_row
        if name == "lstm_layer_backward":
            return 2 * args[5]._shape[0] * _numel(args[6]._shape)
        if name in ("lstm_step_backward", "gru_step_backward", "rnn_step_backward"):
            w_hh = {"lstm_step_backward": args[4], "gru_step_backward": args[3]}.get(name, args[2])
            return 2 * args[0]._shape[0] * _numel(w_hh._shape)
    except (AttributeError, IndexError, TypeError):
        return 0
    return 0


# -- record_function and autograd nodes ---------------------------------------------------------
class UserRange:
    """The range a ``record_function`` opens on this thread while a session records it."""

    __slots__ = ("name", "_rec", "_sess")

    def __init__(self, name):
        self.name = name
        self._rec = self._sess = None

    def enter(self):
        sess = _session
        if _profiling_here(sess):
            self._sess = sess
            self._rec = open_range(sess, self.name, "user_annotation")

    def exit(self):
        if self._rec is not None:
            close_range(self._sess, self._rec)
            self._rec = self._sess = None


class _NodeRange:
    __slots__ = ("node", "recs", "sess")

    def __init__(self, node):
        self.node = node
        self.recs = ()

    def __enter__(self):
        sess = _session
        if _profiling_here(sess):
            self.sess = sess
            name = self.node.name()
            self.recs = (open_range(sess, f"autograd::engine::evaluate_function: {name}",
                                    "autograd"),
                         open_range(sess, name, "autograd"))

    def __exit__(self, *exc):
        for rec in reversed(self.recs):
            close_range(self.sess, rec)


def _observe_node(node):
    return _NodeRange(node)
