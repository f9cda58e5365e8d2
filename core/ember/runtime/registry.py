"""The backend registry: entry-point discovery, lazy loading, availability.

``import ember`` calls ``discover()``, which only reads entry-point *names* from installed
distributions' metadata. A backend's module is imported the first time that device is used
(``registry.get(name)``), at which point pluggy calls its ``ember_register_backends`` hook.

Environment:
  ``EMBER_BACKENDS=a,b``            only these backends, in this order; a load or init failure
                                    raises instead of warning.
  ``EMBER_DISABLE_PLUGIN_AUTOLOAD=1`` read no entry points; only backends registered by hand
                                    (``registry.add``) exist, plus the built-in CPU reference,
                                    which is registered by hand in that mode (like pytest's
                                    builtin plugins under PYTEST_DISABLE_PLUGIN_AUTOLOAD).
"""
from __future__ import annotations

import importlib.metadata
import os
import warnings

import pluggy

from . import hookspecs

GROUP = "ember.backends"


class BackendUnavailable(RuntimeError):
    pass


class BackendRegistry:
    def __init__(self):
        self.pm = pluggy.PluginManager("ember")
        self.pm.add_hookspecs(hookspecs)
        self._entry_points: dict = {}   # name -> EntryPoint, not yet loaded
        self._backends: dict = {}       # name -> Backend
        self._broken: dict = {}         # name -> reason the plugin failed to load
        self._order: list = []
        self._ready: set = set()        # names whose availability was checked
        self.strict = False
        self._listeners = []
        # historic: a plugin registered later is called with the registry at registration time
        self.pm.hook.ember_register_backends.call_historic(kwargs={"registry": self})

    # -- discovery ------------------------------------------------------------------------------
    def discover(self) -> None:
        wanted = os.environ.get("EMBER_BACKENDS", "").strip()
        self.strict = bool(wanted)
        if os.environ.get("EMBER_DISABLE_PLUGIN_AUTOLOAD", "").strip() not in ("", "0"):
            import ember_cpu
            self.register_plugin(ember_cpu, "cpu")
            return
        eps = {}
        for ep in importlib.metadata.entry_points(group=GROUP):
            eps.setdefault(ep.name, ep)  # first installed distribution wins on a name clash
        if wanted:
            names = [n.strip() for n in wanted.split(",") if n.strip()]
            if "cpu" not in names:
                names.insert(0, "cpu")  # the reference backend is always there
            missing = [n for n in names if n not in eps]
            if missing:
                raise RuntimeError(f"EMBER_BACKENDS names {', '.join(missing)}, but no installed "
                                   f"package provides it (entry points in '{GROUP}': "
                                   f"{', '.join(sorted(eps)) or 'none'})")
            eps = {n: eps[n] for n in names}
        self._entry_points.update(eps)
        self._order = list(eps)
        for name in eps:
            self._announce(name)
        if self.strict:
            for name in list(eps):
                self.get(name)

    def on_new_name(self, fn) -> None:
        """Call ``fn(name)`` for every backend name known now and later (device modules, Tensor
        methods)."""
        self._listeners.append(fn)
        for name in self.names():
            fn(name)

    def _announce(self, name):
        for fn in self._listeners:
            fn(name)

    # -- registration ---------------------------------------------------------------------------
    def register_plugin(self, plugin, name=None) -> None:
        """Register a plugin module/object by hand (what an entry point does when loaded).

        Its ``ember_register_backends`` runs now; then its ``ember_register_ops`` gets a library
        that may write only the kernel tables of the backends this plugin just added.
        """
        before = set(self._backends)
        self.pm.register(plugin, name=name)
        own = set(self._backends) - before
        others = [p for p in self.pm.get_plugins() if p is not plugin]
        call = self.pm.subset_hook_caller("ember_register_ops", remove_plugins=others)
        from ..library import Library
        call(library=Library(name or getattr(plugin, "__name__", "plugin"), "FRAGMENT",
                             allowed_devices=own))

    def add(self, backend) -> None:
        """Called from a plugin's ``ember_register_backends`` hook."""
        from .backend import Backend
        if not isinstance(backend, Backend):
            raise TypeError(f"registry.add() expects an ember.runtime.Backend, got {backend!r}")
        name = backend.name
        if name in self._backends and self._backends[name] is not backend:
            raise RuntimeError(f"two plugins register a backend named '{name}'")
        self._backends[name] = backend
        if name not in self._order:
            self._order.append(name)
        if self.strict and not backend.is_available():
            raise BackendUnavailable(f"backend '{name}' is listed in EMBER_BACKENDS but is not "
                                     f"available: {backend.unavailable_reason()}")
        from ..dispatch.dispatcher import invalidate
        from ..library import install_pending
        install_pending(backend)
        invalidate()
        self._announce(name)

    def remove(self, name: str) -> None:
        """Forget a backend registered by hand (tests)."""
        self._backends.pop(name, None)
        self._ready.discard(name)
        self._entry_points.pop(name, None)
        if name in self._order:
            self._order.remove(name)
        from ..dispatch.dispatcher import invalidate
        invalidate()

    def _load(self, name) -> None:
        ep = self._entry_points.pop(name, None)
        if ep is None:
            return
        try:
            plugin = ep.load()
            if self.pm.is_registered(plugin):
                return
            self.register_plugin(plugin, name=f"{ep.name}:{ep.value}")
        except BackendUnavailable:
            raise
        except Exception as e:  # a broken plugin must never break ember
            reason = f"plugin '{ep.value}' failed to load: {type(e).__name__}: {e}"
            if self.strict:
                raise BackendUnavailable(f"backend '{name}': {reason}") from e
            self._broken[name] = reason
            warnings.warn(f"ember: backend '{name}' is unavailable: {reason}", RuntimeWarning,
                          stacklevel=3)
        if name not in self._backends and name not in self._broken:
            self._broken[name] = f"plugin '{ep.value}' registered no backend named '{name}'"

    # -- lookup ---------------------------------------------------------------------------------
    def names(self) -> list:
        """Every backend name known: registered or announced by an entry point."""
        return list(self._order) + [n for n in self._backends if n not in self._order]

    def is_known(self, name: str) -> bool:
        return name in self._backends or name in self._entry_points or name in self._broken

    def check_device_type(self, name: str) -> None:
        if not self.is_known(name):
            raise RuntimeError(f"Expected one of {', '.join(self.names())} device type at start "
                               f"of device string: {name}")

    def peek(self, name: str):
        """The Backend object if it loads, else None (never raises)."""
        if name in self._entry_points:
            self._load(name)
        return self._backends.get(name)

    def get(self, name: str):
        """The Backend for ``name``, loading its plugin if needed; raises if unavailable."""
        if name in self._ready:
            return self._backends[name]
        backend = self._backends.get(name)
        if backend is None:
            if name in self._entry_points:
                self._load(name)
                backend = self._backends.get(name)
            if backend is None:
                if name in self._broken:
                    raise BackendUnavailable(f"backend '{name}' is unavailable: "
                                             f"{self._broken[name]}")
                raise RuntimeError(f"unknown device type '{name}'; known: "
                                   f"{', '.join(self.names())}")
        if not backend.is_available():
            raise BackendUnavailable(f"backend '{name}' is not available: "
                                     f"{backend.unavailable_reason() or 'no reason given'}")
        self._ready.add(name)
        return backend

    def unavailable_reason(self, name: str):
        if name in self._broken:
            return self._broken[name]
        backend = self.peek(name)
        if backend is None:
            return self._broken.get(name, "not registered")
        return None if backend.is_available() else (backend.unavailable_reason() or "unknown")

    def default_accelerator_name(self) -> str:
        for name in self.names():
            if name not in ("cpu", "meta") and self.unavailable_reason(name) is None:
                return name
        raise RuntimeError("no accelerator backend is available")


registry = BackendRegistry()
