"""What the ``ember.backends.*`` modules are made of: modules whose attributes are switches.

PyTorch's ``torch.backends.cudnn.benchmark = True`` assigns to a module attribute that is really
a property (type-checked, documented). ``FlagModule`` gives a module that behaviour: each
``Flag`` is a class attribute with a default and a docstring saying what it changes in ember —
or that it changes nothing, and why.
"""
from __future__ import annotations

import contextlib
import sys
import types


class Flag:
    """A boolean (or typed) switch of a backends module."""

    def __init__(self, default, doc, *, kind=bool, setter_name=None):
        self.default = default
        self.kind = kind
        self.setter_name = setter_name
        self.__doc__ = doc

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, mod, owner=None):
        if mod is None:
            return self
        return mod.__dict__.get("_flag_" + self.name, self.default)

    def __set__(self, mod, value):
        if self.kind is bool and not isinstance(value, bool):
            where = self.setter_name or f"{mod.__name__}.{self.name}"
            raise RuntimeError(f"{where} expects a bool, but got {type(value).__name__}")
        if self.kind is not bool and not isinstance(value, self.kind):
            raise TypeError(f"{mod.__name__}.{self.name} expects {self.kind.__name__}, but got "
                            f"{type(value).__name__}")
        mod.__dict__["_flag_" + self.name] = value


class FlagModule(types.ModuleType):
    """A module whose ``Flag`` attributes are type-checked and documented."""

    def _set_flags(self, **values):
        """Set flags (None leaves one as it is); returns the previous values."""
        prev = {}
        for name, value in values.items():
            if value is not None:
                prev[name] = getattr(self, name)
                setattr(self, name, value)
        return prev

    @contextlib.contextmanager
    def _flags_context(self, **values):
        prev = self._set_flags(**values)
        try:
            yield
        finally:
            self._set_flags(**prev)


def become(module_name: str, cls) -> None:
    """Give the (already imported) module ``module_name`` the flag class ``cls``."""
    sys.modules[module_name].__class__ = cls
