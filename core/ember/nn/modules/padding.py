"""Padding modules: constant/zero, reflection, replication and circular padding of the last
1, 2 or 3 dims, each over ``F.pad`` (PyTorch's classes and argument forms)."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [f"{kind}Pad{d}d" for kind in ("Constant", "Zero", "Reflection", "Replication",
                                        "Circular") for d in (1, 2, 3)]


def _ntuple(padding, n, name):
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(int(p) for p in padding)
    if len(padding) != 2 * n:
        raise ValueError(f"{name}: expected padding of length {2 * n}, got {len(padding)}")
    return padding


class _PadNd(Module):
    _mode = "constant"
    _dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._dims, type(self).__name__)

    def _check_input_dim(self, input):
        allowed = (self._dims + 1, self._dims + 2)
        if input.ndim not in allowed:
            raise ValueError(f"expected {allowed[0]}D or {allowed[1]}D input (got {input.ndim}D "
                             f"input)")

    def forward(self, input):
        if self._mode == "circular":
            self._check_input_dim(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


def _make(kind, base, mode, dims):
    return type(f"{kind}Pad{dims}d", (base,), {"_mode": mode, "_dims": dims,
                                               "__module__": __name__,
                                               "__doc__": f"{kind} padding of the last {dims} "
                                                          f"dim(s)."})


for _d in (1, 2, 3):
    globals()[f"ConstantPad{_d}d"] = _make("Constant", _ConstantPadNd, "constant", _d)
    globals()[f"ZeroPad{_d}d"] = _make("Zero", _ZeroPadNd, "constant", _d)
    globals()[f"ReflectionPad{_d}d"] = _make("Reflection", _PadNd, "reflect", _d)
    globals()[f"ReplicationPad{_d}d"] = _make("Replication", _PadNd, "replicate", _d)
    globals()[f"CircularPad{_d}d"] = _make("Circular", _PadNd, "circular", _d)
del _d
