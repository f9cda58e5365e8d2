"""The dispatcher: an ``Op`` resolves (op, key set) to a handler once, then calls it.

Resolution order for a key set (lowest bit first): functionality handlers (Python mode, tracer,
vmap, autograd), then the device. For one device: the backend's kernel, else the op's composite
implementation (written in ember ops, so it runs anywhere), else the CPU fallback if the backend
opts in, else ``NotImplementedError``. Several devices in one key set go to the mixed-device
handler, which accepts 0-d CPU tensors as scalars and raises PyTorch's error otherwise.
"""
from __future__ import annotations

import logging
import sys
import warnings

from .. import _dtype, _fastpath
from .._tensor import Tensor
from ..runtime.devices import device
from ..runtime.fallback_warning import CPUFallbackWarning
from ..runtime.registry import registry
from . import keys as K
from .facets import Derivative
from .schema import Schema
from .._warn import user_stacklevel

log = logging.getLogger("ember.dispatch")
fallback_log = logging.getLogger("ember.fallback")

_ops: dict = {}
_state = K.state
_functionality_handlers: dict = {}
_warned_fallback: set = set()
_PLAIN = (int, float, bool, complex, str, type(None), _dtype.dtype)


class Op(_fastpath.C.OpBase if _fastpath.C is not None else object):
    """One operator and its facets (see ``ember.dispatch.facets``), keyed by this object.

    ``schema`` reads like PyTorch's: ``"add(Tensor self, Tensor other, Scalar alpha, dtype
    compute) -> Tensor"``. Kernels take the op's arguments positionally as written there; Tensors
    (and lists of Tensors) must be positional so the dispatcher can see them.
    """

    __slots__ = ("name", "schema", "meta", "composite", "_derivative", "jvp", "batch_rule",
                 "decomposition", "pointwise", "onnx", "applies", "functional", "mutates",
                 "_cache", "doc", "defined_at", "_tensor_pos", "_list_pos", "__weakref__")

    def __init__(self, schema, meta=None, composite=None, mutates=None, doc=None,
                 derivative=None, functional=None):
        self.schema = schema if isinstance(schema, Schema) else Schema(schema)
        self.name = self.schema.name
        self.meta = meta
        self.composite = composite
        self._derivative = derivative
        self.jvp = None
        self.batch_rule = None
        self.decomposition = None
        self.pointwise = None
        self.onnx = None
        self.applies = None
        self.functional = functional
        if mutates is None:
            mutates = self.schema.mutated_positions
            if not mutates and not self.schema.typed and _looks_inplace(self.name):
                mutates = (0,)
        self.mutates = tuple(mutates)
        self.doc = doc
        self.defined_at = None
        self._cache = {}
        if self.schema.typed:
            pos = self.schema.tensor_positions
            self._tensor_pos = _FIRST_TWO if pos == _FIRST_TWO else pos
            self._list_pos = self.schema.list_positions
        else:  # untyped (a custom op from a Python signature): scan every argument
            self._tensor_pos = self._list_pos = None

    # -- facets -----------------------------------------------------------------------------
    @property
    def derivative(self):
        return self._derivative

    @derivative.setter
    def derivative(self, value):
        self._derivative = value
        self._cache.clear()

    def def_backward(self, fn=None, **options):
        """Attach the backward formula (``Derivative(fn, **options)``); usable as a decorator."""
        def attach(f):
            self.derivative = Derivative(f, **options)
            return f
        return attach if fn is None else attach(fn)

    def def_jvp(self, fn):
        self.jvp = fn
        self._cache.clear()
        return fn

    def def_batch_rule(self, fn):
        self.batch_rule = fn
        self._cache.clear()
        return fn

    def def_decomposition(self, fn):
        self.decomposition = fn
        return fn

    def def_pointwise(self, rule):
        """Attach the op's expression for one element (what fusion renders); a decorator too."""
        self.pointwise = rule
        return rule

    def def_onnx(self, rule):
        """Attach the op's ONNX translation; a decorator too."""
        self.onnx = rule
        return rule

    def _call_python(self, *args, **kwargs):
        """``op(*args)``: the handler for the call's key set, called. The Python reference of
        ``csrc/dispatch.c``, which runs it for calls with keywords and untyped ops."""
        if kwargs:  # rare: ops are called positionally by ember's own API
            args, kwargs = self.schema.positional(args, kwargs)
        ks = 0
        positions = self._tensor_pos
        if positions is not None:
            # the schema says where tensors may be: look only there (the hot path)
            n = len(args)
            if positions is _FIRST_TWO and n > 1:
                a, b = args[0], args[1]
                if a.__class__ is Tensor or isinstance(a, Tensor):
                    ks = a._ks
                if b.__class__ is Tensor or isinstance(b, Tensor):
                    ks |= b._ks
            else:
                for i in positions:
                    if i < n:
                        a = args[i]
                        if a.__class__ is Tensor or isinstance(a, Tensor):
                            ks |= a._ks
            if self._list_pos:
                for i in self._list_pos:
                    if i < n:
                        for x in args[i]:
                            if isinstance(x, Tensor):
                                ks |= x._ks
            include, keep = _state.masks
            ks = (ks | include) & keep
            handler = self._cache.get(ks)
            if handler is None:
                handler = self._resolve(ks)
            return handler(*args, **kwargs) if kwargs else handler(*args)
        for a in args:
            c = a.__class__
            if c is Tensor:
                ks |= a._ks
            elif c in _PLAIN:
                continue
            elif c is list or c is tuple:
                for x in a:
                    if isinstance(x, Tensor):
                        ks |= x._ks
            elif isinstance(a, Tensor):
                ks |= a._ks
        include, keep = _state.masks
        ks = (ks | include) & keep
        handler = self._cache.get(ks)
        if handler is None:
            handler = self._resolve(ks)
        return handler(*args, **kwargs)

    def on(self, device, *args, **kwargs):
        """Call an op that has no tensor input (factories) on ``device``."""
        include, keep = _state.masks
        ks = ((device._key or K.device_key(device)) | include) & keep
        handler = self._cache.get(ks)
        if handler is None:
            handler = self._resolve(ks)
        return handler(*args, **kwargs)

    def _resolve(self, ks: int):
        functional = ks & K.FUNCTIONALITY_MASK
        if functional:
            bit = functional & -functional
            make = _functionality_handlers.get(bit)
            if make is None:
                raise RuntimeError(f"{self.name}: no handler registered for dispatch key "
                                   f"{K.NAMES.get(bit, bit)}")
            handler = make(self, bit)
        else:
            devices = K.devices_in(ks)
            if not devices:
                handler = self._no_tensor_handler
            elif len(devices) == 1:
                handler = _backend_handler(self, devices[0])
            else:
                handler = self._mixed_device_handler
        self._cache[ks] = handler
        if log.isEnabledFor(logging.DEBUG):   # a cache miss: once per (op, key set)
            log.debug("%s: keys %s -> %s", self.name, K.describe(ks),
                      getattr(handler, "__qualname__", None) or type(handler).__name__)
        return handler

    def _no_tensor_handler(self, *args, **kwargs):
        raise RuntimeError(f"{self.name}: called without any tensor argument; can't tell which "
                           f"device should run it")

    def _mixed_device_handler(self, *args, **kwargs):
        tensors = [t for t in tensors_in(args)]
        seen = []
        for t in tensors:
            if t.device not in seen:
                seen.append(t.device)
        main = [d for d in seen if d.type != "cpu"]
        cpu_scalars_ok = len(main) == 1 and all(
            t.device is main[0] or t.ndim == 0 for t in tensors)
        if not cpu_scalars_ok:
            first = seen[0]
            second = next(d for d in seen if d is not first)
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                               f"two devices, {first} and {second}! (in op '{self.name}')")
        target = main[0]
        moved = tuple(_move_scalars(a, target) for a in args)
        return self(*moved, **kwargs)

    def __repr__(self):
        return f"<ember op {self.schema}>"


if _fastpath.C is None:
    Op.__call__ = Op._call_python
else:
    _fastpath.C.install_dispatch(Op, Tensor, Op._call_python)

_FIRST_TWO = (0, 1)  # the commonest layout (binary ops): an identity check selects its path


def tensors_in(args):
    """The tensors among ``args`` and inside its lists and tuples, in order."""
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor):
                    yield x


def _move_scalars(a, target):
    if isinstance(a, Tensor):
        return a if a.device is target else a.to(target)
    if isinstance(a, (list, tuple)):
        return type(a)(_move_scalars(x, target) for x in a)
    return a


def _backend_handler(op: Op, dev):
    backend = registry.get(dev.type)
    kernel = backend.kernels.get(op.name)
    if kernel is None and op.composite is not None:
        return op.composite  # composites are written in ember ops: each op inside dispatches
    if kernel is None:
        if backend.cpu_fallback and dev.type != "cpu":
            return _cpu_fallback(op, backend)
        raise NotImplementedError(
            f"op '{op.name}' has no kernel for backend '{backend.name}' and {backend.name} has no "
            f"CPU fallback")
    # plug-ins' kernels (and built-ins' in EMBER_CHECK_KERNELS mode) get their outputs checked
    kernel = _checks.checked_kernel(op, backend, dev, kernel)
    dtypes = backend.kernel_dtypes(op.name)
    if dtypes != _ALL_DTYPES:
        # dtypes the backend has but this kernel lacks go to the CPU (when it opts in)
        fallback = _cpu_fallback(op, backend) if (
            dtypes != backend.dtypes and backend.cpu_fallback and dev.type != "cpu" and
            _cpu_has(op)) else None
        return _dtype_checked(op, backend, dev, kernel, dtypes, fallback)
    return kernel


_ALL_DTYPES = frozenset(_dtype.all_dtypes)


def _arg_dtypes(args, kwargs):
    for a in tensors_in(args):
        yield a.dtype
    for x in args:
        if isinstance(x, _dtype.dtype):
            yield x
    for x in kwargs.values():
        if isinstance(x, _dtype.dtype):
            yield x


def check_dtypes(op_name, backend, dev, args, kwargs):
    for d in _arg_dtypes(args, kwargs):
        if d not in backend.dtypes:
            supported = ", ".join(x.name for x in _dtype.all_dtypes if x in backend.dtypes)
            raise TypeError(f"{op_name}: dtype {d} is not supported on device '{dev}' "
                            f"(backend '{backend.name}' supports {supported})")


def _dtype_checked(op, backend, dev, kernel, dtypes, fallback):
    """``kernel`` behind a check of the call's dtypes: one the kernel lacks goes to the CPU
    fallback (when the backend has the dtype and opts in) or raises naming the op and device;
    a storage-only dtype (``backend.storage_dtypes``, e.g. bfloat16 on OpenCL) is computed in
    its compute dtype (``_compute_wide``)."""
    storage = backend.storage_dtypes
    if op.name in backend.storage_native_ops:
        storage = {}
    # the common case, tested in one pass: positional tensors and dtypes the kernel takes as
    # they are (lists, keywords and anything else take the full check below)
    direct = frozenset(d for d in dtypes if d not in storage)
    dtype_cls = _dtype.dtype

    def checked(*args, **kwargs):
        if not kwargs:
            for a in args:
                c = a.__class__
                if c is Tensor:
                    if a.dtype not in direct:
                        break
                elif c is dtype_cls:
                    if a not in direct:
                        break
                elif c is list or c is tuple or isinstance(a, Tensor):
                    break
            else:
                return kernel(*args)
        wide = False
        for d in _arg_dtypes(args, kwargs):
            if d not in dtypes:
                if fallback is not None and all(x in backend.dtypes
                                                for x in _arg_dtypes(args, kwargs)):
                    return fallback(*args, **kwargs)
                check_dtypes(op.name, backend, dev, args, kwargs)
                raise TypeError(f"{op.name}: backend '{backend.name}' has no kernel for dtype "
                                f"{d} on device '{dev}'")
            if d in storage:
                wide = True
        if wide:
            return _compute_wide(op, backend, kernel, storage, args, kwargs)
        return kernel(*args, **kwargs)
    return checked


def _compute_wide(op, backend, kernel, storage, args, kwargs):
    """Run ``kernel`` on storage-only dtypes (``backend.storage_dtypes``): operands converted to
    the compute dtype, in-place targets written back, results converted to the dtype the op's
    meta function gives them."""
    to_copy = backend.kernels.get("_to_copy")

    def up(a):
        if isinstance(a, Tensor):
            return to_copy(a, storage[a.dtype]) if a.dtype in storage else a
        if isinstance(a, _dtype.dtype):
            return storage.get(a, a)
        if isinstance(a, (list, tuple)):
            return type(a)(up(x) for x in a)
        return a

    wide = tuple(up(a) for a in args)
    out = kernel(*wide, **{k: up(v) for k, v in kwargs.items()})
    if op.mutates:
        copy = backend.kernels.get("copy_")
        for i in op.mutates:
            if wide[i] is not args[i]:
                copy(args[i], wide[i])
        first = op.mutates[0]
        return args[first] if out is wide[first] else out
    specs = _catalog.output_specs(op, *args, **kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    fixed = [to_copy(o, spec.dtype) if isinstance(o, Tensor) and o.dtype is not spec.dtype
             else o for o, spec in zip(outs, specs)]
    if not isinstance(out, (tuple, list)):
        return fixed[0]
    return type(out)(fixed) if type(out) in (tuple, list) else type(out)(*fixed)


def _cpu_has(op: Op) -> bool:
    return registry.get("cpu").kernels.get(op.name) is not None


def _cpu_fallback(op: Op, backend):
    cpu = device("cpu")
    cpu_kernel = registry.get("cpu").kernels.get(op.name)
    if cpu_kernel is None:
        raise NotImplementedError(f"op '{op.name}' has no kernel for backend '{backend.name}' "
                                  f"and none on the CPU either")


    def fallback(*args, **kwargs):
        key = (backend.name, op.name)
        if key not in _warned_fallback:
            _warned_fallback.add(key)
            fallback_log.info("op '%s' runs on the CPU fallback for backend '%s'", op.name,
                              backend.name)
            warnings.warn(f"ember: op '{op.name}' has no kernel for backend '{backend.name}'; it "
                          f"runs on the CPU (inputs and outputs are copied). This warning is "
                          f"shown once per op.", CPUFallbackWarning, stacklevel=user_stacklevel())
        first = next(tensors_in(args), None)
        # factories (rand, randperm) name their device in an argument: it becomes the CPU too
        target = first.device if first is not None else next(
            a for a in args if a.__class__ is device and a.type != "cpu")
        cpu_args = tuple(cpu if a.__class__ is device else _to_device(a, cpu) for a in args)
        out = cpu_kernel(*cpu_args, **kwargs)
        for i in op.mutates:
            if args[i] is not None:  # an optional buffer left out (batch norm's running stats)
                backend.copy_(args[i], cpu_args[i])
        if op.mutates and out is cpu_args[op.mutates[0]]:
            return args[op.mutates[0]]
        return _to_device(out, target)

    return fallback


def _to_device(a, dev):
    if isinstance(a, Tensor):
        return a.to(dev)
    if isinstance(a, (list, tuple)):
        return type(a)(_to_device(x, dev) for x in a)
    return a


# -- registry of ops ----------------------------------------------------------------------------
def define(schema: str, meta=None, composite=None, mutates=None, doc=None, derivative=None,
           functional=None, _depth=1) -> Op:
    """Create and register the op ``schema`` names, with the facets given (more may be attached
    later with ``op.def_backward`` & co)."""
    op = Op(schema, meta=meta, composite=composite, mutates=mutates, doc=doc,
            derivative=derivative, functional=functional)
    if op.name in _ops:
        raise RuntimeError(f"op '{op.name}' is already defined: {_ops[op.name].schema}")
    caller = sys._getframe(_depth)
    op.defined_at = (caller.f_code.co_filename, caller.f_lineno)
    _ops[op.name] = op
    return op


def _looks_inplace(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")


def get_op(name: str) -> Op:
    try:
        return _ops[name]
    except KeyError:
        raise KeyError(f"no op named '{name}'") from None


def find_op(name: str):
    """The op called ``name``, or None."""
    return _ops.get(name)


def all_ops() -> dict:
    return dict(_ops)


def invalidate(name: str | None = None) -> None:
    """Forget cached resolutions (after a kernel table or handler changed)."""
    targets = _ops.values() if name is None else [_ops[name]] if name in _ops else []
    for op in targets:
        op._cache.clear()


def key_set(op, args) -> int:
    """The key bits of ``args`` as ``Op.__call__`` sees them (the schema's tensor slots; a
    factory's device argument), before the thread's masks: for layers that redispatch below
    themselves (profiler, compile capture)."""
    ks = 0
    schema = op.schema
    n = len(args)
    if schema.typed:
        for i in schema.tensor_positions:
            if i < n and isinstance(args[i], Tensor):
                ks |= args[i]._ks
        for i in schema.list_positions:
            if i < n:
                for x in args[i]:
                    if isinstance(x, Tensor):
                        ks |= x._ks
    else:
        for a in args:
            if isinstance(a, Tensor):
                ks |= a._ks
            elif isinstance(a, (list, tuple)):
                for x in a:
                    if isinstance(x, Tensor):
                        ks |= x._ks
    if not ks & ~K.FUNCTIONALITY_MASK:  # a factory called with op.on(device, ...)
        for a in args:
            if a.__class__ is device:
                ks |= a._key or K.device_key(a)
                break
    return ks


def call_below(op, bit, args, kwargs):
    """Run ``op`` as dispatch would with functionality ``bit`` masked out of this thread: what
    a functionality handler (compile's capture, inference marking) calls to let the layers
    below it, and the kernel, do the work."""
    st = _state
    prev = st.masks
    st.masks = (prev[0] & ~bit, prev[1] & ~bit)
    try:
        include, keep = st.masks
        ks = (key_set(op, args) | include) & keep
        below = op._cache.get(ks) or op._resolve(ks)
        return below(*args, **kwargs)
    finally:
        st.masks = prev


def register_functionality(bit: int, make_handler) -> None:
    """``make_handler(op, bit) -> callable(*args, **kwargs)`` handles ``bit`` for every op."""
    _functionality_handlers[bit] = make_handler
    invalidate()


# -- the runtime below announces changes; this layer subscribes ---------------------------------
from ..runtime import catalog as _catalog  # noqa: E402 - after the registry of ops exists
from ..runtime import checks as _checks  # noqa: E402
from ..runtime import events as _events  # noqa: E402

_catalog.install(get_op, all_ops)
_events.subscribe(_events.KERNEL_CHANGED, lambda backend_name, op_name: invalidate(op_name))
_events.subscribe(_events.BACKEND_ADDED, lambda backend: invalidate())
_events.subscribe(_events.BACKEND_REMOVED, lambda name: invalidate())
