"""Process-group backends: the contract a collective engine implements, and their registry.

A *process-group backend* runs collectives for the device types it serves. ember ships one,
``"mpi"`` (mpi4py over the ``mpich`` wheel), which serves **every** device by staging tensors
through host buffers. A backend package can contribute its own — an NCCL group for CUDA tensors
is meant to come from the CUDA backend package — through the pluggy hook
``ember_register_process_groups(registry)`` in ``ember.runtime.hookspecs``, from the same plugin
module its ``ember.backends`` entry point names::

    @ember.runtime.hookimpl
    def ember_register_process_groups(registry):
        registry.add("nccl", make_nccl_group, devices=["cuda"])

``factory(context)`` gets a :class:`BackendContext` (group rank/size, the members' global ranks,
the timeout, and ``bootstrap``: an MPI group over the same members for exchanging setup data such
as an NCCL unique id without sockets) and returns a :class:`ProcessGroupBackend`. A backend named
for some device types becomes the default for them when ``init_process_group(backend=None)``;
device types nobody claims use MPI. ``Backend.register_backend`` (PyTorch's API) writes into the
same registry.
"""
from __future__ import annotations

import threading

from .contract import BackendContext, ProcessGroupBackend
from ..runtime.registry import registry as devices

__all__ = ["Backend", "BackendContext", "ProcessGroupBackend", "registry"]


class ProcessGroupBackendRegistry:
    """Backend name -> (factory, device types). Filled by the pluggy hook and
    ``Backend.register_backend``."""

    def __init__(self):
        self._factories = {}      # name -> (factory, devices tuple or None = any device)
        self._lock = threading.Lock()
        self._hooked = False
        self._plugins_loaded = False

    def add(self, name: str, factory, *, devices=None, extended_api=False) -> None:
        """Register a backend: ``factory(context) -> ProcessGroupBackend``; ``devices``: the
        device types it serves natively (None: any device). ``extended_api`` is accepted for
        PyTorch compatibility; ember always passes the full context."""
        if not isinstance(name, str) or not name or not name.replace("_", "").isalnum():
            raise ValueError(f"process-group backend names are identifiers such as 'nccl', got "
                             f"{name!r}")
        if not callable(factory):
            raise TypeError(f"the factory of process-group backend '{name}' must be callable, "
                            f"got {type(factory).__name__}")
        key = name.lower()
        if isinstance(devices, str):
            devices = (devices,)
        devices = tuple(devices) if devices is not None else None
        old = self._factories.get(key)
        if old is not None and old[0] is not factory:
            raise RuntimeError(f"two packages register a process-group backend named '{key}'")
        self._factories[key] = (factory, devices)
        if devices:
            for d in devices:
                Backend.default_device_backend_map.setdefault(d, key)
        Backend.backend_capability[key] = list(devices) if devices else ["*"]

    def _ensure_hooked(self) -> None:
        if self._hooked:
            return
        with self._lock:
            if self._hooked:
                return
            self._hooked = True
            from . import mpi  # start-up: ember.distributed.mpi (~20 ms)
            if not devices.pm.is_registered(mpi):
                devices.pm.register(mpi, name="ember.distributed.mpi")
            # historic: backend plugins loaded later (devices load lazily) are called then
            devices.pm.hook.ember_register_process_groups.call_historic(
                kwargs={"registry": self})

    def _load_plugins(self) -> None:
        """Import every installed backend plugin, so that those contributing process groups
        have registered them (plugins load lazily, on first use of their device)."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for name in devices.names():
            devices.peek(name)

    def get(self, name: str):
        self._ensure_hooked()
        key = name.lower()
        if key not in self._factories:
            self._load_plugins()
        entry = self._factories.get(key)
        if entry is None:
            known = ", ".join(sorted(self._factories)) or "none"
            hint = ""
            if key == "nccl":
                hint = (" NCCL process groups come from the package of ember's CUDA backend "
                        "(its plugin implements ember_register_process_groups); it is not "
                        "installed or has no usable GPU.")
            elif key == "gloo":
                hint = " ember has no gloo; use backend='mpi', which serves every device."
            raise RuntimeError(f"Distributed package doesn't have {name} built in: no installed "
                               f"package registers a process-group backend named '{key}' "
                               f"(registered: {known}).{hint}")
        return entry

    def names(self) -> list:
        self._ensure_hooked()
        self._load_plugins()
        return sorted(self._factories)


registry = ProcessGroupBackendRegistry()


class Backend(str):
    """Backend names (``torch.distributed.Backend``): ``Backend("MPI") == "mpi"``; unknown names
    are lower-cased and accepted (plug-ins). ``register_backend`` adds a third-party backend."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, UCC, MPI]
    #: device type -> backend used for it when init_process_group(backend=None)
    default_device_backend_map = {"cpu": MPI}
    #: backend -> device types it serves ("*": any, through host staging)
    backend_capability = {MPI: ["*"]}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got "
                             f"{type(name).__name__}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return super().__new__(cls, value)

    @classmethod
    def register_backend(cls, name, func, extended_api=False, devices=None) -> None:
        """Register a third-party process-group backend: ``func(context)`` returns a
        :class:`ProcessGroupBackend`; ``devices``: the device types it serves."""
        if hasattr(Backend, name.upper()) and name.lower() in cls.backend_list:
            raise ValueError(f"{name.upper()} c10d backend already exist")
        registry.add(name, func, devices=devices, extended_api=extended_api)
        if name.lower() not in cls.backend_list:
            cls.backend_list.append(name.lower())
        setattr(Backend, name.upper(), name.lower())


def parse_backend_spec(backend) -> dict:
    """``"mpi"`` -> {"*": "mpi"}; ``"cpu:mpi,cuda:nccl"`` -> {"cpu": "mpi", "cuda": "nccl"};
    a plug-in name -> its devices; None -> MPI for everything plus the registered defaults."""
    if backend is None:
        spec = {"*": Backend.MPI}
        spec.update({d: b for d, b in Backend.default_device_backend_map.items()
                     if d != "cpu"})
        return spec
    if not isinstance(backend, str):
        raise ValueError(f"init_process_group: backend must be a string such as 'mpi' or "
                         f"'cpu:mpi,cuda:nccl', got {type(backend).__name__}")
    text = backend.strip().lower()
    if ":" in text:
        spec = {}
        for part in text.split(","):
            dev, sep, name = part.partition(":")
            if not sep or not dev.strip() or not name.strip():
                raise ValueError(f"init_process_group: invalid backend string {backend!r}; "
                                 f"expected 'device:backend' pairs such as 'cpu:mpi,cuda:nccl'")
            spec[dev.strip()] = str(Backend(name.strip()))
        return spec
    name = str(Backend(text))
    if name == Backend.UNDEFINED:
        raise ValueError("init_process_group: backend 'undefined' is not a backend")
    _, devices = registry.get(name)
    if devices is None:
        return {"*": name}
    return {d: name for d in devices}
