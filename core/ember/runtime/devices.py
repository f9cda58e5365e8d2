"""``ember.device``: a backend name plus an optional index, interned so identity is equality.

The class lives in the runtime because the registry decides which device types exist; the
dispatch layer keeps its key bit for each concrete device in the ``_key`` slot.

**Redirects** (``redirect("cuda", "opencl")``, what ``ember run --device cuda=opencl`` sets):
every device a program names enters through this class — ``ember.device(...)``, ``device=``
arguments, ``.to("cuda")``, ``.cuda()``, ``map_location``, a checkpoint's saved locations —
so a redirect here moves all of them: ``device("cuda:1")`` *is* ``device("opencl:1")``. Names of
device types that are not parsed as devices (``ember.cuda``, ``autocast("cuda")``,
``Tensor.is_cuda``, the current accelerator) read the same table through ``resolve_type``.
"""
from __future__ import annotations

import re

from . import events
from .registry import registry

_DEVICE_RE = re.compile(r"^([a-zA-Z_][a-zA-Z0-9_]*)(?::(\d+))?$")
_interned: dict = {}
_redirects: dict = {}      # device type a program names -> the type that runs it
_INDEXLESS = ("cpu", "meta")


def resolve_type(name: str) -> str:
    """The device type that runs what a program calls ``name`` (``name`` unless redirected)."""
    return _redirects.get(name, name) if _redirects else name


def redirects() -> dict:
    """{named type: type that runs it} for the redirects in force."""
    return dict(_redirects)


def redirected_accelerator():
    """The target of the first redirect of an accelerator type (``cuda=opencl`` makes OpenCL
    the accelerator a program means by ``device(0)`` or ``ember.accelerator``), else None."""
    for source, target in _redirects.items():
        if source not in _INDEXLESS:
            return target
    return None


def redirect(source: str, target: str) -> None:
    """From now on, devices of type ``source`` are devices of type ``target``: ``source:i`` is
    ``target:i`` (``target`` itself when it has no indices, as cpu and meta). ``target`` must be
    an installed, available backend; ``source`` any known device type (``cuda`` whether or not
    a CUDA backend is installed). Devices made before keep their type."""
    registry.check_device_type(source)
    registry.check_device_type(target)
    if source == target:
        raise ValueError(f"device redirect {source}={target}: a type can't be redirected to "
                         f"itself")
    if target in _redirects:
        raise ValueError(f"device redirect {source}={target}: '{target}' is itself redirected "
                         f"to '{_redirects[target]}'; redirect to the final type")
    registry.get(target)   # raises with the reason when it can't run here
    _redirects[source] = target
    # forget the spellings of ``source`` interned so far: they now parse to ``target``
    for key in [k for k in _interned if k[0].partition(":")[0].strip() == source]:
        del _interned[key]
    events.publish(events.DEVICE_REDIRECTED, source, target)


def clear_redirects() -> None:
    """Undo every redirect (tests)."""
    sources = list(_redirects)
    _redirects.clear()
    for key in [k for k in _interned if k[0].partition(":")[0].strip() in sources]:
        del _interned[key]
    for source in sources:
        events.publish(events.DEVICE_REDIRECTED, source, source)


class device:
    """A device is ``type`` (a registered backend's name) and ``index``.

    ``ember.device("opencl:1")``, ``ember.device("cuda", 0)``, ``ember.device("cpu")``.
    Instances are interned: ``device("cpu") is device("cpu")``.
    """

    __slots__ = ("type", "index", "_key", "__weakref__")

    def __new__(cls, type_or_spec, index=None):
        if type_or_spec.__class__ is device:
            if index is not None:
                raise ValueError("device(): an index can't be given with a device object")
            return type_or_spec
        if isinstance(type_or_spec, int) and not isinstance(type_or_spec, bool):
            # torch.device(0) means the current accelerator; we take the first non-cpu default
            name = redirected_accelerator() or registry.default_accelerator_name()
            return device(name) if name in _INDEXLESS else device(name, type_or_spec)
        if not isinstance(type_or_spec, str):
            raise TypeError(f"device() expected a string, a device or an int, got "
                            f"{type(type_or_spec).__name__}")
        found = _interned.get((type_or_spec, index))
        if found is not None:
            return found
        m = _DEVICE_RE.match(type_or_spec.strip())
        if m is None:
            raise RuntimeError(f"Invalid device string: '{type_or_spec}'")
        name, idx = m.group(1), m.group(2)
        if idx is not None:
            if index is not None:
                raise RuntimeError(f"device(): type (string) must not include an index because "
                                   f"index was passed explicitly: {type_or_spec}")
            index = int(idx)
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"device(): index must be an int, got {type(index).__name__}")
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        registry.check_device_type(name)
        if _redirects and name in _redirects:
            name = _redirects[name]
            if name in _INDEXLESS:
                index = None
        key = (name, index)
        obj = _interned.get(key)
        if obj is None:
            new = object.__new__(cls)
            object.__setattr__(new, "type", name)
            object.__setattr__(new, "index", index)
            object.__setattr__(new, "_key", 0)
            # setdefault is atomic: threads racing to make the first cpu device get one object
            obj = _interned.setdefault(key, new)
        _interned[(type_or_spec, None if idx is not None else index)] = obj
        return obj

    def __setattr__(self, name, value):
        if name == "_key":
            object.__setattr__(self, name, value)
        else:
            raise AttributeError("device objects are immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        return self is other

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


# the name users and files know it by: pickles (checkpoints) name the class ember._device.device,
# as every file written before it moved here does, and the generated stubs import it from there
device.__module__ = "ember._device"


def concrete(d: "device") -> "device":
    """``d`` with its index filled in (the backend's current device) for device types that have
    indices (all but ``cpu`` and ``meta``, as in PyTorch)."""
    if d.index is None and d.type not in ("cpu", "meta"):
        d = device(d.type, registry.get(d.type).current_device())
    return d
