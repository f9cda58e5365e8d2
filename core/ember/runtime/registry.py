"""The backend registry: entry-point discovery, lazy loading, availability, fault isolation.

``import ember`` calls ``discover()``, which only reads entry-point *names* from installed
distributions' metadata. A backend's module is imported the first time that device is used
(``registry.get(name)``), at which point pluggy calls its ``ember_register_backends`` hook and
then its ``ember_register_ops`` hook.

Loading is guarded by one re-entrant lock: threads that use a device for the first time at once
wait for the one that loads it (re-entrant because a plug-in's hooks call back into the
registry, and may load the CPU backend).

A plug-in can never break ember: an import that raises (or calls ``sys.exit``), a hook that
raises, a kernel registration the library refuses, or an ``is_available()`` that raises makes
that backend *unavailable* -- every backend the plug-in had added is removed again, the reason
is kept, and ``ember.<name>.is_available()`` is False with ``unavailable_reason()`` saying why.

Environment:
  ``EMBER_BACKENDS=a,b``            only these backends, in this order; a load or init failure
                                    raises instead of warning.
  ``EMBER_DISABLE_PLUGIN_AUTOLOAD=1`` read no entry points; only backends registered by hand
                                    (``registry.add``) exist, plus the built-in CPU reference
                                    (like pytest's builtin plugins under
                                    PYTEST_DISABLE_PLUGIN_AUTOLOAD).
"""
from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
import time
import warnings

import pluggy

from . import device_types, events, hookspecs
from .kernels import KernelTable
from .._warn import user_stacklevel

log = logging.getLogger("ember.registry")

GROUP = "ember.backends"
REFERENCE = "cpu"  # the backend every other one is checked against; always registered

# what a plug-in may raise that must not escape: everything but KeyboardInterrupt
_PLUGIN_ERRORS = (Exception, SystemExit)


class BackendUnavailable(RuntimeError, AssertionError):
    """A backend was asked for that cannot run here (the message says why).

    Also an AssertionError, like ``DeviceNotInstalled``: torch's build without a device raises
    AssertionError ("Torch not compiled with CUDA enabled") where ember's device is unusable,
    and scripts catch that."""


class _Registration:
    """The plug-in being registered right now: which backends it added."""

    __slots__ = ("backends", "builtin")

    def __init__(self, builtin):
        self.backends = []
        self.builtin = builtin


class BackendRegistry:
    """Every backend ember knows: loaded ones, entry points not imported yet, and broken ones.

    The one instance is ``ember.runtime.registry``.
    """

    def __init__(self):
        self.pm = pluggy.PluginManager("ember")
        self.pm.add_hookspecs(hookspecs)
        self._lock = threading.RLock()
        self._entry_points: dict = {}   # name -> EntryPoint, not yet loaded
        self._backends: dict = {}       # name -> Backend
        self._broken: dict = {}         # name -> why its plug-in failed
        self._verdicts: dict = {}       # name -> availability checked once: None or the reason
        self._order: list = []
        self._ready: set = set()        # names checked available: get() takes no lock for them
        self._loading: set = set()      # entry points being imported (by the lock's holder)
        self._registering: list = []    # stack of _Registration
        self._builtin_modules = frozenset()
        self._builtin: set = set()      # backends shipped with ember (trusted kernels)
        self.strict = False
        # historic: a plugin registered later is called with the registry at registration time
        self.pm.hook.ember_register_backends.call_historic(kwargs={"registry": self})

    # -- discovery ------------------------------------------------------------------------------
    def discover(self, builtin=None) -> None:
        """Read the installed backends' entry-point names (imports nothing).

        ``builtin`` maps the names of the backends shipped with ember to their modules
        (``{"cpu": "ember_cpu", ...}``, given by ``ember/__init__.py``): their kernels are
        trusted (outputs are checked only with ``EMBER_CHECK_KERNELS=1``), and the reference
        ``cpu`` among them is registered even without entry points.
        """
        builtin = dict(builtin or {})
        self._builtin_modules = frozenset(builtin.values())
        wanted = os.environ.get("EMBER_BACKENDS", "").strip()
        self.strict = bool(wanted)
        reference = ({REFERENCE: importlib.metadata.EntryPoint(REFERENCE, builtin[REFERENCE],
                                                                GROUP)}
                     if REFERENCE in builtin else {})
        if os.environ.get("EMBER_DISABLE_PLUGIN_AUTOLOAD", "").strip() not in ("", "0"):
            self._add_entry_points(reference)
            return
        found = {}
        for ep in importlib.metadata.entry_points(group=GROUP):
            found.setdefault(ep.name, ep)  # first installed distribution wins on a name clash
        for name, ep in reference.items():
            found.setdefault(name, ep)
        # a fixed order, whatever order site-packages lists distributions in: the reference,
        # the built-in backends, then plug-ins by name (the first available accelerator in
        # this order is ember.accelerator's current one)
        ranked = sorted(found, key=lambda n: (n != REFERENCE, n not in builtin, n))
        eps = {n: found[n] for n in ranked}
        if wanted:
            names = [n.strip() for n in wanted.split(",") if n.strip()]
            if REFERENCE not in names:
                names.insert(0, REFERENCE)  # the reference backend is always there
            missing = [n for n in names if n not in eps]
            if missing:
                raise RuntimeError(f"EMBER_BACKENDS names {', '.join(missing)}, but no installed "
                                   f"package provides it (entry points in '{GROUP}': "
                                   f"{', '.join(sorted(eps)) or 'none'})")
            eps = {n: eps[n] for n in names}
        self._add_entry_points(eps)
        log.debug("discovered backends: %s", ", ".join(f"{n} = {ep.value}" for n, ep in
                                                        eps.items()))
        if self.strict:
            for name in list(eps):
                self.get(name)

    def _add_entry_points(self, eps) -> None:
        with self._lock:
            self._entry_points.update(eps)
            for name in eps:
                if name not in self._order:
                    self._order.append(name)
        for name in eps:
            self._announce(name)

    def on_new_name(self, fn) -> None:
        """Call ``fn(name)`` for every backend name known now and later (device modules, Tensor
        methods): ``events.BACKEND_ANNOUNCED`` plus a replay of the names known already."""
        events.subscribe(events.BACKEND_ANNOUNCED, fn)
        for name in self.names():
            fn(name)

    def _announce(self, name):
        events.publish(events.BACKEND_ANNOUNCED, name)

    # -- registration ---------------------------------------------------------------------------
    def register_plugin(self, plugin, name=None, *, builtin=False) -> None:
        """Register a plugin module/object by hand (what an entry point does when loaded).

        Its ``ember_register_backends`` runs now; then its ``ember_register_ops`` gets a library
        that may write only the kernel tables of the backends this plugin just added. If either
        raises, the plugin is unregistered, every backend it added is removed and marked
        unavailable with the error as the reason, and the error propagates.
        """
        plugin_name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        with self._lock:
            reg = _Registration(builtin)
            self._registering.append(reg)
            try:
                try:
                    self.pm.register(plugin, name=name)
                finally:
                    self._registering.pop()
                others = [p for p in self.pm.get_plugins() if p is not plugin]
                call = self.pm.subset_hook_caller("ember_register_ops", remove_plugins=others)
                events.publish(events.PLUGIN_REGISTERED, plugin_name, tuple(reg.backends),
                               lambda library: call(library=library))
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                self._roll_back(plugin, reg.backends,
                                f"plugin '{plugin_name}' failed to register: "
                                f"{type(e).__name__}: {e}")
                raise

    def _roll_back(self, plugin, names, reason) -> None:
        """Undo a failed registration: no half-registered backend stays usable."""
        for n in names:
            self._broken[n] = reason           # first: the name never looks unknown
            self._forget(n)
        try:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
        except Exception:  # pluggy may refuse a plugin it only half took; nothing to undo then
            pass
        for n in names:
            events.publish(events.BACKEND_REMOVED, n)

    def _forget(self, name) -> None:
        self._ready.discard(name)
        self._backends.pop(name, None)
        self._verdicts.pop(name, None)
        self._builtin.discard(name)

    def add(self, backend) -> None:
        """Called from a plugin's ``ember_register_backends`` hook."""
        if not (isinstance(getattr(backend, "name", None), str) and
                isinstance(getattr(backend, "kernels", None), KernelTable)):
            raise TypeError(f"registry.add() expects an ember.runtime.Backend, got {backend!r}")
        name = backend.name
        with self._lock:
            if name in self._backends and self._backends[name] is not backend:
                raise RuntimeError(f"two plugins register a backend named '{name}'")
            self._backends[name] = backend
            self._broken.pop(name, None)
            self._verdicts.pop(name, None)
            if self._registering:
                reg = self._registering[-1]
                reg.backends.append(name)
                if reg.builtin:
                    self._builtin.add(name)
            if name not in self._order:
                self._order.append(name)
            if self.strict:
                reason = self._availability(name, backend)
                if reason is not None:
                    raise BackendUnavailable(f"backend '{name}' is listed in EMBER_BACKENDS but "
                                             f"is not available: {reason}")
            events.publish(events.BACKEND_ADDED, backend)
        self._announce(name)

    def remove(self, name: str) -> None:
        """Forget a backend registered by hand (tests)."""
        with self._lock:
            self._forget(name)
            self._broken.pop(name, None)
            self._entry_points.pop(name, None)
            if name in self._order:
                self._order.remove(name)
        events.publish(events.BACKEND_REMOVED, name)

    def _load(self, name) -> None:
        """Import the entry point of ``name`` and register its plugin (lock held)."""
        ep = self._entry_points.get(name)
        if ep is None or name in self._loading:
            return
        self._loading.add(name)
        start = time.perf_counter()
        try:
            try:
                plugin = ep.load()
                if not self.pm.is_registered(plugin):
                    self.register_plugin(plugin, name=f"{ep.name}:{ep.value}",
                                         builtin=ep.value in self._builtin_modules)
                log.info("loaded backend '%s' from %s (%s) in %.0f ms", name, ep.value,
                         getattr(plugin, "__file__", "?"), 1e3 * (time.perf_counter() - start))
            except BackendUnavailable:
                raise
            except _PLUGIN_ERRORS as e:  # a broken plugin must never break ember
                reason = f"plugin '{ep.value}' failed to load: {type(e).__name__}: {e}"
                if self.strict:
                    raise BackendUnavailable(f"backend '{name}': {reason}") from e
                self._broken[name] = reason
                log.warning("backend '%s' is unavailable: %s", name, reason)
                warnings.warn(f"ember: backend '{name}' is unavailable: {reason}",
                              RuntimeWarning, stacklevel=user_stacklevel())
            if name not in self._backends and name not in self._broken:
                self._broken[name] = f"plugin '{ep.value}' registered no backend named '{name}'"
        finally:
            self._entry_points.pop(name, None)
            self._loading.discard(name)

    def _availability(self, name, backend):
        """None when ``backend`` can run, else the reason; asked once. An ``is_available`` that
        raises makes the backend broken (removed, with the exception as the reason)."""
        if name in self._verdicts:
            return self._verdicts[name]
        try:
            reason = None if backend.is_available() else (backend.unavailable_reason() or
                                                           "no reason given")
        except _PLUGIN_ERRORS as e:
            reason = (f"{type(backend).__name__}.is_available() raised {type(e).__name__}: "
                      f"{e}")
            self._broken[name] = reason
            self._forget(name)
            events.publish(events.BACKEND_REMOVED, name)
            warnings.warn(f"ember: backend '{name}' is unavailable: {reason}", RuntimeWarning,
                          stacklevel=user_stacklevel())
            return reason
        self._verdicts[name] = reason
        if reason is None:
            log.info("backend '%s' is available", name)
        else:
            log.info("backend '%s' is not available: %s", name, reason)
        return reason

    # -- lookup ---------------------------------------------------------------------------------
    def names(self) -> list:
        """Every backend name known: registered, announced by an entry point, or broken."""
        order = list(self._order)
        return order + [n for n in list(self._backends) if n not in order]

    def is_known(self, name: str) -> bool:
        return name in self._backends or name in self._entry_points or name in self._broken

    def check_device_type(self, name: str) -> None:
        """RuntimeError (PyTorch's message) unless ``name`` is a known device type: a backend's
        name, or one of PyTorch's device types (``cuda``, ``mps``…), which may be named even
        when no backend provides it (using it raises ``DeviceNotInstalled``)."""
        if not self.is_known(name) and not device_types.is_torch_device_type(name):
            # PyTorch's list in PyTorch's order, then the plug-ins' types
            expected = list(device_types.TORCH_DEVICE_TYPES) + [
                n for n in self.names() if n not in device_types.TORCH_DEVICE_TYPES]
            raise RuntimeError(f"Expected one of {', '.join(expected)} device type at start "
                               f"of device string: {name}")

    def peek(self, name: str):
        """The Backend object if it loads, else None (never raises); it may be unavailable."""
        with self._lock:
            if name in self._entry_points:
                self._load(name)
            return self._backends.get(name)

    def loaded(self, name: str):
        """The Backend registered as ``name`` (available or not), or None; never loads one."""
        return self._backends.get(name)

    def loaded_backends(self) -> list:
        """The backends loaded so far that are available, in registry order."""
        out = []
        for name in self.names():
            backend = self._backends.get(name)
            if backend is not None and self.unavailable_reason(name) is None:
                out.append(backend)
        return out

    def get(self, name: str):
        """The Backend for ``name``, loading its plugin if needed; raises if unavailable."""
        if name in self._ready:
            backend = self._backends.get(name)
            if backend is not None:
                return backend
        with self._lock:
            backend = self._backends.get(name)
            if backend is None:
                if name in self._entry_points:
                    self._load(name)
                    backend = self._backends.get(name)
                if backend is None:
                    if name in self._broken:
                        raise BackendUnavailable(f"backend '{name}' is unavailable: "
                                                 f"{self._broken[name]}")
                    if device_types.is_torch_device_type(name):
                        raise device_types.not_installed(name)
                    raise RuntimeError(f"unknown device type '{name}'; known: "
                                       f"{', '.join(self.names())}")
            reason = self._availability(name, backend)
            if reason is not None:
                raise BackendUnavailable(f"backend '{name}' is not available: {reason}")
            if name not in self._loading:  # a plug-in asking for itself mid-registration
                self._ready.add(name)
            return backend

    def unavailable_reason(self, name: str):
        """None when ``name`` can run, else why not (loads the plugin to find out)."""
        with self._lock:
            if name in self._broken:
                return self._broken[name]
            backend = self.peek(name)
            if backend is None:
                if name not in self._broken and device_types.is_torch_device_type(name):
                    return device_types.not_installed_reason(name)
                return self._broken.get(name, "not registered")
            return self._availability(name, backend)

    def is_builtin(self, name: str) -> bool:
        """True for backends shipped with ember (cpu, opencl): their kernels are trusted."""
        return name in self._builtin

    def default_accelerator_name(self) -> str:
        for name in self.names():
            if name not in ("cpu", "meta") and self.unavailable_reason(name) is None:
                return name
        raise RuntimeError("no accelerator backend is available")


registry = BackendRegistry()
