"""``ember.ops.profiler`` (``torch.ops.profiler``): a ``record_function`` range opened and closed
by two calls, as a graph records it (pytorch/examples' fx ``profiling_tracer.py`` emits these
where the traced code had ``with record_function(name)``).

* ``_record_function_enter(name, args=None)`` returns a handle tensor (torch's is an opaque
  uint8 tensor), ``_record_function_enter_new(name, args=None)`` a ``_RecordFunction``;
* ``_record_function_exit(handle)`` closes either (torch's ``default`` and ``_RecordFunction``
  overloads, also reachable by those names).

A range opened while no profiler records is free, as ``record_function``'s is.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..ops import factories as _factories
from . import _record


class _RecordFunction:
    """The handle ``_record_function_enter_new`` returns (torch's ScriptObject
    ``torch.classes.profiler._RecordFunction``)."""

    __slots__ = ("_range",)

    def __init__(self, name):
        self._range = _record.UserRange(name)
        self._range.enter()

    def _close(self):
        if self._range is not None:
            self._range.exit()
            self._range = None


# handle tensors of _record_function_enter -> their open range (torch keeps the RecordFunction
# inside the tensor's bytes; an id keyed entry, dropped at exit, does the same here)
_open: dict = {}


def _check_name(op, name, args):
    if not isinstance(name, str):
        raise TypeError(f"profiler::{op}() Expected a value of type 'str' for argument 'name' "
                        f"but instead found type '{type(name).__name__}'.")
    if args is not None and not isinstance(args, str):
        raise TypeError(f"profiler::{op}() Expected a value of type 'Optional[str]' for "
                        f"argument 'args' but instead found type '{type(args).__name__}'.")


def _enter(name, args=None):
    _check_name("_record_function_enter", name, args)
    handle = _factories.tensor(np.zeros(8, np.uint8))
    _open[id(handle)] = (handle, _RecordFunction(name))
    return handle


def _enter_new(name, args=None):
    _check_name("_record_function_enter_new", name, args)
    return _RecordFunction(name)


def _exit(handle):
    if isinstance(handle, _RecordFunction):
        handle._close()
        return None
    entry = _open.pop(id(handle), None)
    if entry is None or entry[0] is not handle:
        raise RuntimeError("profiler::_record_function_exit: the handle is not one "
                           "_record_function_enter returned (or it was closed already)")
    entry[1]._close()
    return None


def _exit_record_function(record):
    if not isinstance(record, _RecordFunction):
        raise TypeError(f"profiler::_record_function_exit._RecordFunction() expected a "
                        f"_RecordFunction, got {type(record).__name__}")
    record._close()


class _Op:
    """A ``torch.ops.profiler`` op: callable, with its overloads as attributes."""

    def __init__(self, name, fn, **overloads):
        self.__name__ = self.__qualname__ = name
        self.__module__ = "ember.ops.profiler"
        self._fn = fn
        self.default = fn
        for key, value in overloads.items():
            setattr(self, key, value)

    def __call__(self, *args, **kwargs):
        # torch's __torch_function__ protocol: an fx Proxy argument records the call as a
        # call_function node (the tracer's exit of a record_function range)
        for a in (*args, *kwargs.values()):
            protocol = getattr(type(a), "__torch_function__", None)
            if protocol is not None and not isinstance(a, Tensor):
                result = protocol(self, (type(a),), args, kwargs)
                if result is not NotImplemented:
                    return result
        return self._fn(*args, **kwargs)

    def overloads(self):
        return ["default"] + [k for k in vars(self) if k.startswith("_R")]

    def __repr__(self):
        return f"<OpOverloadPacket(op='profiler.{self.__name__}')>"


class _ProfilerNamespace:
    """``ember.ops.profiler``."""

    _record_function_enter = _Op("_record_function_enter", _enter)
    _record_function_enter_new = _Op("_record_function_enter_new", _enter_new)
    _record_function_exit = _Op("_record_function_exit", _exit,
                                _RecordFunction=_exit_record_function)

    def __repr__(self):
        return "<module 'ember.ops.profiler'>"


namespace = _ProfilerNamespace()
