"""``ember.utils.deterministic``: ``fill_uninitialized_memory`` (PyTorch's name and default).

While ``ember.use_deterministic_algorithms(True)`` is on and this is True, memory that ops leave
uninitialized (``empty``, ``empty_like``, ``new_empty``, ``empty_strided``, the legacy
``Tensor(n)``) is filled with NaN (floating and complex dtypes) or the dtype's largest value
(integers and bool), so results never depend on what was left in memory.
"""
from __future__ import annotations

import sys
import types

from ..runtime import determinism as _determinism


class _DeterministicModule(types.ModuleType):
    @property
    def fill_uninitialized_memory(self) -> bool:
        """Fill uninitialized memory in deterministic mode (default True)."""
        return _determinism.get_fill_uninitialized_memory()

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, value: bool) -> None:
        _determinism.set_fill_uninitialized_memory(value)


sys.modules[__name__].__class__ = _DeterministicModule
