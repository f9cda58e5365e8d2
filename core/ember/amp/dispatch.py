"""The autocast dispatch layer: the ``AUTOCAST`` key's handler, and the same rules for the
``nn.functional`` composites that are not registry ops.

The handler of an op without a rule (``policy.py``) only steps below the key. An op with a rule
looks at its tensor arguments' device type: if that type autocasts on this thread, eligible
floating arguments (on that device type, not float64; in ``Tensor[]`` lists too; never the
target of an in-place op) are cast, and so is a ``dtype`` argument (ember's ops take the
dtype they compute in), then the op runs below the key. Casts go through ``_to_copy`` with
autograd on, so gradients flow back in the original dtypes. A float32 leaf that requires grad
(a weight) cast to the autocast dtype is cached until the outermost autocast region exits.

Composites that PyTorch lists but ember builds from several ops (``linear`` on N-d input,
``conv*``, the losses, ``layer_norm``…) get their rule at the function: ``install()`` wraps
those functions in ``nn.functional`` and the modules that define them, and the wrapped body runs
below the key, as PyTorch's autocast kernel redispatches its op.
"""
from __future__ import annotations

import functools
import sys

from .. import _dtype
from .._device import device as _device_cls
from .._tensor import Tensor
from ..dispatch import keys as K
from ..dispatch.dispatcher import register_functionality
from ..ops.conversion import to_copy_op
from . import policy
from . import state as S
from ..nn import functional as F, modules

_AC = K.AUTOCAST
_keys = K.state
_FLOATING = _dtype.FLOATING
_f32, _f64, _f16, _bf16 = _dtype.float32, _dtype.float64, _dtype.float16, _dtype.bfloat16


def _below(fn, args, kwargs):
    prev = _keys.masks
    _keys.masks = (prev[0], prev[1] & ~_AC)
    try:
        return fn(*args, **kwargs)
    finally:
        _keys.masks = prev


def _below_factory(op, args, kwargs):
    """An op called with no tensor (a factory, through ``op.on(device, ...)``): redispatch on
    the device its arguments name."""
    dev = next((a for a in args if a.__class__ is _device_cls), None)
    if dev is None:
        return _below(op, args, kwargs)
    return _below(op.on, (dev,) + tuple(args), kwargs)


def _eligible(x) -> bool:
    """A tensor autocast may cast: floating, not float64, on a device type that autocasts."""
    return (isinstance(x, Tensor) and x.dtype.category == _FLOATING and x.dtype is not _f64
            and S.state.enabled.get(x.device.type, False))


def _cast(x, to):
    if x.dtype is to:
        return x
    cacheable = (S.state.cache_enabled and to is not _f32 and x.dtype is _f32 and
                 x.requires_grad and x.is_leaf and getattr(x, "_view_base", None) is None)
    if cacheable:
        hit = S.state.cache.get(id(x))
        if hit is not None and hit[0] is x and hit[1].dtype is to:
            return hit[1]
    out = to_copy_op(x, to)
    if cacheable:
        S.state.cache[id(x)] = (x, out)
    return out


def _target(rule, device_type, tensors):
    """The dtype ``rule`` casts to, or None when nothing is to be cast."""
    if rule == policy.LOWER:
        return S.get_dtype(device_type)
    if rule == policy.FP32:
        return _f32
    if rule == policy.PROMOTE:
        widest = None
        for t in tensors:
            if isinstance(t, Tensor) and t.dtype.category == _FLOATING and \
                    S.state.enabled.get(t.device.type, False):
                widest = t.dtype if widest is None else _dtype.promote_types(widest, t.dtype)
        return widest
    raise RuntimeError(policy.BANNED_MESSAGE)


def _convert(rule, to, x):
    if isinstance(x, Tensor):
        if rule == policy.PROMOTE:
            ok = x.dtype.category == _FLOATING and S.state.enabled.get(x.device.type, False)
        elif rule == policy.FP32:
            ok = x.dtype in (_f16, _bf16) and S.state.enabled.get(x.device.type, False)
        else:
            ok = _eligible(x)
        return _cast(x, to) if ok else x
    if isinstance(x, (list, tuple)) and x and any(isinstance(e, Tensor) for e in x):
        return type(x)(_convert(rule, to, e) for e in x)
    return x


def _convert_dtype(rule, to, d):
    if not isinstance(d, _dtype.dtype) or d.category != _FLOATING:
        return d
    if rule == policy.FP32:
        return _f32 if d in (_f16, _bf16) else d
    return d if (d is _f64 and rule == policy.LOWER) else to


def _first_device_type(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            return a.device.type
        if isinstance(a, (list, tuple)):
            for e in a:
                if isinstance(e, Tensor):
                    return e.device.type
    for a in kwargs.values():
        if isinstance(a, Tensor):
            return a.device.type
    return None


def make_handler(op, bit):
    cpu_rule, accel_rule = policy.rules_for(op.name)
    if cpu_rule is None and accel_rule is None:
        def passthrough(*args, **kwargs):
            if op._tensor_pos is not None and not op._tensor_pos and not op._list_pos:
                return _below_factory(op, args, kwargs)
            return _below(op, args, kwargs)
        passthrough.__name__ = f"autocast_{op.name}"
        return passthrough
    args_meta = op.schema.arguments
    dtype_pos = tuple(i for i, a in enumerate(args_meta) if a.type.rstrip("?") == "dtype")
    cast_pos = tuple(i for i, a in enumerate(args_meta)
                     if (a.is_tensor or a.is_tensor_list) and i not in op.mutates)

    def handler(*args, **kwargs):
        device_type = _first_device_type(args, kwargs)
        if device_type is None:
            return _below_factory(op, args, kwargs)
        rule = None
        if device_type is not None and S.state.enabled.get(device_type, False):
            rule = cpu_rule if device_type == "cpu" else accel_rule
        if rule is None:
            return _below(op, args, kwargs)
        to = _target(rule, device_type, [args[i] for i in cast_pos if i < len(args)])
        if to is None:
            return _below(op, args, kwargs)
        new = list(args)
        with _Below():
            for i in cast_pos:
                if i < len(new):
                    new[i] = _convert(rule, to, new[i])
        for i in dtype_pos:
            if i < len(new):
                new[i] = _convert_dtype(rule, to, new[i])
        return _below(op, new, kwargs)

    handler.__name__ = f"autocast_{op.name}"
    return handler


class _Below:
    """Context: ops run below the autocast key (the casts themselves)."""

    __slots__ = ("_prev",)

    def __enter__(self):
        self._prev = prev = _keys.masks
        _keys.masks = (prev[0], prev[1] & ~_AC)

    def __exit__(self, *exc):
        _keys.masks = self._prev


# -- composite functionals ----------------------------------------------------------------------
def autocast_function(name, fn):
    """``fn`` with autocast's rule for ``name`` applied to its tensor arguments; costs one
    thread-state read when autocast is off."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not (_keys.masks[0] & _AC) or not (_keys.masks[1] & _AC):
            return fn(*args, **kwargs)
        device_type = _first_device_type(args, kwargs)
        rule = policy.rule(name, device_type) if device_type is not None and \
            S.state.enabled.get(device_type, False) else None
        if rule is None:
            return fn(*args, **kwargs)
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
        to = _target(rule, device_type, tensors)
        if to is None:
            return fn(*args, **kwargs)
        with _Below():
            args = tuple(_convert(rule, to, a) for a in args)
            kwargs = {k: _convert(rule, to, v) for k, v in kwargs.items()}
        return _below(fn, args, kwargs)

    wrapper.__autocast_rule_name__ = name
    return wrapper


def install() -> None:
    """Register the handler and wrap the listed composite functionals (once)."""
    register_functionality(_AC, make_handler)
    names = set(policy.CPU) | set(policy.ACCELERATOR)
    for name in sorted(names):
        fn = getattr(F, name, None)
        if fn is None or getattr(fn, "__autocast_rule_name__", None) or not callable(fn):
            continue
        wrapped = autocast_function(name, fn)
        # ember.conv2d & co are the same functions as F's (torch's native forms): wrapped too
        root = sys.modules[__name__.split(".")[0]]
        for module in {F, root, sys.modules.get(getattr(fn, "__module__", ""), F)}:
            if getattr(module, name, None) is fn:
                setattr(module, name, wrapped)
        _rebind_layer_classes(fn, wrapped)


def _rebind_layer_classes(fn, wrapped):
    """Layer classes that hold the functional as a class attribute (``Conv2d._fn``) get the
    wrapped one."""
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith(modules.__name__ + ".") or mod is None:
            continue
        for cls in list(vars(mod).values()):
            if not isinstance(cls, type):
                continue
            for attr, value in list(vars(cls).items()):
                if isinstance(value, staticmethod) and value.__func__ is fn:
                    setattr(cls, attr, staticmethod(wrapped))
