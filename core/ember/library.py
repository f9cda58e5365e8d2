"""``ember.library``: define new ops and register kernels from outside the core.

The ``torch.library`` idea, two ways in:

* ``custom_op("mylib::sin", fn)`` — a decorator: ``fn`` (written in ember ops, or on host data) is
  the implementation for every device; ``.register_kernel("opencl")`` adds a device-specific
  kernel, ``.register_fake`` the meta function (output shape/dtype), ``.register_autograd`` the
  derivative.
* ``Library("mylib", "DEF")`` — ``lib.define(schema)`` then ``lib.impl(name, fn, "cpu")``;
  ``Library("aten", "IMPL")``-style overrides use the namespace ``"ember"`` for core ops.

Defined ops are reachable as ``ember.ops.<namespace>.<name>``. Kernels for a backend that is not
loaded yet are kept and installed when it registers.
"""
from __future__ import annotations

from .dispatch import dispatcher
from .dispatch.facets import CustomDerivative
from .runtime.registry import registry
from .runtime import events as _events  # noqa: I001 - kept apart from the dispatch imports

_pending: dict = {}      # device type -> [(op name, fn)]
_namespaces: dict = {}   # namespace -> {name: Op}


class _Namespace:
    def __init__(self, ns):
        self._ns = ns

    def __getattr__(self, name):
        ops = _namespaces.get(self._ns, {})
        if name in ops:
            return ops[name]
        raise AttributeError(f"no op '{self._ns}::{name}' is defined")


_fixed: dict = {}   # namespace -> an object ember provides for it (ember.ops.profiler)


def namespace(ns: str):
    if ns in _fixed:
        return _fixed[ns]
    if ns not in _namespaces:
        raise AttributeError(f"no ops are defined in namespace '{ns}'")
    return _Namespace(ns)


def provide_namespace(ns: str, obj) -> None:
    """``ember.ops.<ns>`` is ``obj``: a namespace of torch's that ember answers with Python
    functions rather than registered ops (``torch.ops.profiler``)."""
    _fixed[ns] = obj


def _qualified(name: str, ns: str | None = None) -> tuple:
    if "::" in name:
        ns, short = name.split("::", 1)
    elif ns is None:
        raise ValueError(f"op name {name!r} needs a namespace: 'mylib::{name}'")
    else:
        short = name
    if not ns.isidentifier() or not short.split(".")[0].isidentifier():
        raise ValueError(f"bad op name {ns}::{short}")
    return ns, short


def _register_kernel(op_name: str, device_type: str, fn) -> None:
    backend = registry.loaded(device_type)
    if backend is not None:
        backend.kernels.register(op_name, fn)
    else:
        if not registry.is_known(device_type):
            raise RuntimeError(f"register_kernel: unknown device type '{device_type}'; known: "
                               f"{', '.join(registry.names())}")
        _pending.setdefault(device_type, []).append((op_name, fn))


def install_pending(backend) -> None:
    """When a backend registers (``events.BACKEND_ADDED``): the kernels kept for it."""
    for op_name, fn in _pending.pop(backend.name, []):
        backend.kernels.register(op_name, fn)


def _plugin_registered(plugin_name, backend_names, call_register_ops) -> None:
    """``events.PLUGIN_REGISTERED``: the plugin's ``ember_register_ops`` gets a library that may
    write only the kernel tables of the backends it added."""
    call_register_ops(Library(plugin_name, "FRAGMENT", allowed_devices=backend_names))


_events.subscribe(_events.BACKEND_ADDED, install_pending)
_events.subscribe(_events.PLUGIN_REGISTERED, _plugin_registered)


class Library:
    """``Library(ns, "DEF")`` defines ops in ``ns``; ``"IMPL"`` only registers kernels.

    ``allowed_devices`` limits which backends' kernel tables ``impl`` may write (a plugin's
    library may only touch its own devices).
    """

    def __init__(self, ns: str, kind: str = "DEF", allowed_devices=None):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Library kind must be DEF, IMPL or FRAGMENT, got {kind!r}")
        self.ns = ns
        self.kind = kind
        self.allowed_devices = None if allowed_devices is None else set(allowed_devices)

    def define(self, schema: str, meta=None, composite=None) -> dispatcher.Op:
        if self.kind == "IMPL":
            raise RuntimeError("define() needs a Library of kind DEF or FRAGMENT")
        name = schema.split("(", 1)[0].strip()
        ns, short = _qualified(name, self.ns)
        op = dispatcher.define(f"{ns}::{short}" + schema[len(name):], meta=meta,
                               composite=composite)
        _namespaces.setdefault(ns, {})[short] = op
        return op

    def impl(self, name: str, fn, device_type: str):
        ns, short = _qualified(name, self.ns)
        qualified = short if ns == "ember" else f"{ns}::{short}"
        dispatcher.get_op(qualified)  # raises for an unknown op
        device_type = device_type.lower()
        if self.allowed_devices is not None and device_type not in self.allowed_devices:
            raise RuntimeError(f"this library may only register kernels for "
                               f"{sorted(self.allowed_devices)}, not '{device_type}'")
        _register_kernel(qualified, device_type, fn)
        return fn


class _VmapInfo:
    """What a registered vmap rule learns about the vmap it runs under."""

    __slots__ = ("batch_size", "randomness")

    def __init__(self, batch_size, randomness):
        self.batch_size = batch_size
        self.randomness = randomness


class CustomOp:
    """What ``custom_op`` returns: call it like a function; register more behaviour on it."""

    def __init__(self, op: dispatcher.Op, fn):
        self._op = op
        self.__name__ = op.name
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def register_kernel(self, device_type: str, fn=None):
        def add(f):
            _register_kernel(self._op.name, device_type, f)
            return f
        return add if fn is None else add(fn)

    def register_fake(self, fn):
        self._op.meta = fn
        return fn

    def register_autograd(self, backward, *, setup_context=None):
        self._op.derivative = CustomDerivative(backward, setup_context)

    def register_vmap(self, func=None):
        """The op's rule under ``ember.func.vmap`` (``torch.library.register_vmap``):
        ``func(info, in_dims, *args) -> (output, out_dims)``, where ``info.batch_size`` and
        ``info.randomness`` describe the vmap and ``in_dims`` has the batch dim of each argument
        (None if not batched). Without one the op runs once per example (the fallback)."""
        def add(f):
            def rule(args, bdims, layer):
                return f(_VmapInfo(layer.batch_size, layer.randomness), tuple(bdims), *args)
            self._op.def_batch_rule(rule)
            return f
        return add if func is None else add(func)

    @property
    def op(self):
        return self._op


def custom_op(name: str, fn=None, *, mutates_args=(), device_types=None, schema=None):
    """Define an op from a Python function (``torch.library.custom_op``)."""
    def wrap(f):
        ns, short = _qualified(name)
        sig = schema or f"({', '.join(f.__code__.co_varnames[:f.__code__.co_argcount])})"
        mutates = ()
        if mutates_args:
            args = f.__code__.co_varnames[:f.__code__.co_argcount]
            mutates = tuple(args.index(a) for a in mutates_args)
        op = dispatcher.define(f"{ns}::{short}{sig}",
                               composite=None if device_types is not None else f,
                               mutates=mutates)
        _namespaces.setdefault(ns, {})[short] = op
        custom = CustomOp(op, f)
        if device_types is not None:
            for dt in ([device_types] if isinstance(device_types, str) else device_types):
                custom.register_kernel(dt, f)
        return custom
    return wrap if fn is None else wrap(fn)
