"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from __future__ import annotations

import warnings

import operator
from collections import OrderedDict
from collections.abc import Mapping
from itertools import chain, islice

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent
from ..._warn import user_stacklevel

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]


def _index(idx, n, what):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx + n if idx < 0 else idx


class Container(Module):
    """torch's deprecated ``nn.Container``: a Module holding the keyword-argument modules as
    submodules (use ``Module`` itself)."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now "
                      "implemented in nn.Module. Subclass that instead.", DeprecationWarning,
                      stacklevel=user_stacklevel())
        for key, value in kwargs.items():
            self.add_module(key, value)


class _Pop:
    """``pop(key)`` over the container's own item access (Sequential, ModuleList and the
    dicts)."""

    def pop(self, key):
        v = self[key]
        del self[key]
        return v


class _NumberedModules(_Pop, Module):
    """What Sequential and ModuleList share: modules keyed "0".."n-1" (kept so when modules
    are inserted or deleted), iterated in order."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def _renumber(self, modules):
        self._modules.clear()
        self._modules.update((str(i), m) for i, m in enumerate(modules))


class Sequential(_NumberedModules):
    """Modules called in order, the output of each the input of the next."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, m in args[0].items():
                self.add_module(key, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self), "Sequential")
        return next(islice(self._modules.values(), i, None))

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules)[idx]:
                delattr(self, key)
        else:
            delattr(self, list(self._modules)[_index(idx, len(self), "Sequential")])
        self._renumber(list(self._modules.values()))  # keys 0..n-1, as PyTorch keeps them

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        out = Sequential()
        for m in chain(self, other):
            out.append(m)
        return out

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._renumber(mods)
        return self

    def extend(self, sequential):
        for m in sequential:
            self.append(m)
        return self


class ModuleList(_NumberedModules):
    """A list of modules, registered so their parameters are visible."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for k in (keys[idx] if isinstance(idx, slice) else
                  [keys[_index(idx, len(self), "ModuleList")]]):
            del self._modules[k]
        self._renumber(list(self._modules.values()))

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(chain(self, other)))

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def extend(self, modules):
        if isinstance(modules, (Module, Tensor)) or not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def __repr__(self):
        # PyTorch folds runs of identically-printed modules: "(0-2): 3 x Linear(...)"
        lines, items = [], list(self._modules.items())
        i = 0
        while i < len(items):
            j = i
            r = repr(items[i][1])
            while j + 1 < len(items) and repr(items[j + 1][1]) == r:
                j += 1
            key = items[i][0] if j == i else f"{items[i][0]}-{items[j][0]}"
            body = r if j == i else f"{j - i + 1} x {r}"
            lines.append(f"({key}): " + _addindent(body, 2))
            i = j + 1
        if not lines:
            return self._get_name() + "()"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class _KeyedContainer(_Pop):
    """The dict methods ModuleDict and ParameterDict share, over ``_entries`` (the dict whose
    keys are the container's keys, in order) and the class's own item access."""

    def __len__(self):
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def keys(self):
        return self._entries.keys()

    def update(self, entries):
        if isinstance(entries, (Mapping, _KeyedContainer)):
            for k, v in entries.items():
                self[k] = v
            return
        for j, kv in enumerate(entries):
            if not isinstance(kv, (tuple, list)) or len(kv) != 2:
                raise ValueError(f"{self._kind} update sequence element #{j} should "
                                 f"be an iterable of length 2")
            self[kv[0]] = kv[1]


class ModuleDict(_KeyedContainer, Module):
    """An ordered dict of modules, registered under their keys."""
    _kind = "ModuleDict"

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    @property
    def _entries(self):
        return self._modules

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def clear(self):
        self._modules.clear()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()


def _describe_entries(entries):
    """PyTorch's listing of a ParameterList/ParameterDict: one line per (key, value)."""
    lines = []
    for k, p in entries:
        if isinstance(p, Tensor):
            kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
            dev = "" if p.device.type == "cpu" else f" ({p.device})"
            lines.append(f"  ({k}): {kind} containing: [{p.dtype} of size "
                         f"{'x'.join(map(str, p.shape))}{dev}]")
        else:
            lines.append(f"  ({k}): Object of type: {type(p).__name__}")
    return "\n".join(lines)


def _entries_repr(self):
    extra = self.extra_repr()
    return self._get_name() + ("(\n" + extra + "\n)" if extra else "()")


def _not_callable(name):
    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{name} should not be called.")
    return __call__


class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped in Parameter)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = ParameterList()
            for v in list(self)[idx]:
                out.append(v)
            return out
        return getattr(self, str(_index(idx, len(self), "ParameterList")))

    def __setitem__(self, idx, param):
        idx = _index(idx, len(self), "ParameterList")
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, params):
        return self.extend(params)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        if isinstance(values, Tensor) or not hasattr(values, "__iter__"):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return _describe_entries(enumerate(self))

    __repr__ = _entries_repr
    __call__ = _not_callable("ParameterList")


class ParameterDict(_KeyedContainer, Module):
    """An ordered dict of parameters (plain tensors are wrapped in Parameter)."""
    _kind = "ParameterDict"

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @property
    def _entries(self):
        return self._keys

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def extra_repr(self):
        return _describe_entries(self.items())

    __repr__ = _entries_repr
    __call__ = _not_callable("ParameterDict")
