"""The base of the modules that are one functional and its options (activations, fold, pixel
shuffle...): the options are the module's attributes, ``forward`` passes them to the functional
in order and the repr lists them the way PyTorch prints these modules."""
from __future__ import annotations

from .module import Module


class _FunctionalModule(Module):
    """Subclasses keep PyTorch's ``__init__`` signature and pass its arguments on by name;
    ``_fn`` is the functional and ``_options`` its arguments after ``input``, in order."""
    _fn = None
    _options = ()

    def __init__(self, **options):
        super().__init__()
        for name in self._options:
            setattr(self, name, options[name])

    def forward(self, input):
        return type(self)._fn(input, *(getattr(self, name) for name in self._options))

    def extra_repr(self):
        shown = [f"{name}={getattr(self, name)}" for name in self._options if name != "inplace"]
        if getattr(self, "inplace", False):   # PyTorch prints inplace only when it is set
            shown.append("inplace=True")
        return ", ".join(shown)
