"""``ember.utils``: helpers with the names of ``torch.utils`` (``checkpoint``, ``data``, ``hooks``,
``deterministic``, ``collect_env``), ``swap_tensors``, and ember's ``progress`` display for
long work.

Submodules load on first access, so low layers (autograd) can import ``ember.utils.hooks``
without pulling in modules that depend on them."""
import importlib

_SUBMODULES = ("checkpoint", "collect_env", "data", "deterministic", "hooks", "progress")


def __getattr__(name):
    if name == "swap_tensors":
        return importlib.import_module(f"{__name__}.swap").swap_tensors
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'ember.utils' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES) + ["swap_tensors"])
