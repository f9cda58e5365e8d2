"""The import hook of ``ember run``: ``import torch`` (and every ``torch.X.Y``) gives ember.

A meta-path finder placed first on ``sys.meta_path`` answers for ``torch`` and its submodules:
``torch.X.Y`` is the module object ``ember.X.Y`` itself (``import torch.nn as nn; nn is
ember.nn``), registered under both names in ``sys.modules``, so ``isinstance`` checks, pickles
and module attributes agree whichever name a script uses. ``torchdata`` is ``ember.data`` (its
DataPipes). A torch submodule ember does not have raises ``ModuleNotFoundError`` naming both.

Packages built on PyTorch (torchvision, transformers, …) are not torch: loading one against ember
would fail somewhere inside it. ``outside.refusal`` recognises them (their distribution requires
torch, or the name is a well-known one) and the finder raises an ``ImportError`` that names the
package and what to do, unless ``--allow NAME`` let it through.

``install(devices=..., allow=...)`` also applies device redirects (``cuda=opencl``) through
``ember.runtime.devices.redirect`` and records everything in the environment
(``EMBER_RUN_ALIAS``, ``EMBER_RUN_DEVICES``, ``EMBER_RUN_ALLOW``), which the ``sitecustomize``
in ``_site/`` reads to do the same in the Python processes the script starts (multiprocessing's
spawn and forkserver workers, subprocesses).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import logging
import os
import sys

from . import outside
from ..runtime import devices as _devices

#: import names that resolve to ember's modules: prefix -> ember module path
ALIASES = {"torch": "ember", "torchdata": "ember.data"}

ENV_ALIAS, ENV_DEVICES, ENV_ALLOW = "EMBER_RUN_ALIAS", "EMBER_RUN_DEVICES", "EMBER_RUN_ALLOW"
log = logging.getLogger("ember.run")


def _aliased(fullname: str):
    """The ember module name behind ``fullname``, or None when it is not an alias."""
    head = fullname.partition(".")[0]
    target = ALIASES.get(head)
    return None if target is None else target + fullname[len(head):]


class _AliasLoader(importlib.abc.Loader):
    """Loads ``torch.X`` by importing ``ember.X`` and putting that module object in its place
    (the import system returns whatever ``sys.modules`` holds after ``exec_module``)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None    # a placeholder module, replaced in exec_module

    def exec_module(self, module):
        name = module.__name__
        try:
            real = importlib.import_module(self.target)
        except ModuleNotFoundError as e:
            if e.name is None or not (e.name == self.target or
                                      self.target.startswith(e.name + ".")):
                raise   # something inside ember's module is missing: not ours to reword
            raise ModuleNotFoundError(
                f"No module named '{name}': ember has no '{self.target}' (ember run resolves "
                f"'{name}' to it). This part of PyTorch is not provided by ember; see "
                f"`ember info` and docs/architecture.md for what is.", name=name) from None
        sys.modules[name] = real
        _alias_loaded_submodules(self.target, name)
        log.debug("import %s -> %s", name, real.__name__)


def _alias_loaded_submodules(target: str, name: str) -> None:
    """Register ``name.<sub>`` for every ``target.<sub>`` already imported: the import system
    only looks submodules up by name once their parent is a package, and ember's device modules
    (``ember.cuda``, with ``ember.cuda.amp``) are plain modules."""
    prefix = target + "."
    for key in [k for k in sys.modules if k.startswith(prefix)]:
        sys.modules.setdefault(name + key[len(target):], sys.modules[key])


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path`` while a script runs under ``ember run``."""

    def __init__(self, allow=()):
        self.allow = frozenset(allow)

    def find_spec(self, fullname, path=None, target=None):
        real = _aliased(fullname)
        if real is not None:
            return importlib.util.spec_from_loader(fullname, _AliasLoader(real), is_package=True)
        if "." not in fullname and fullname not in self.allow:
            message = outside.refusal(fullname)
            if message is not None:
                log.info("refused the import of %r: a package built on torch", fullname)
                raise ImportError(message, name=fullname)
        return None


def _parse_devices(spec: str) -> list:
    pairs = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        source, sep, target = item.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise ValueError(f"ember run: --device expects SOURCE=TARGET (e.g. cuda=opencl), got "
                             f"{item!r}")
        pairs.append((source.strip(), target.strip()))
    return pairs


def install(devices=(), allow=()) -> TorchAliasFinder:
    """Alias torch to ember in this process (and, through the environment, in the processes it
    starts); ``devices`` are ``(source, target)`` redirects, ``allow`` package names let
    through. Returns the finder (``uninstall`` removes it)."""
    devices, allow = list(devices), list(allow)
    for source, target in devices:
        _devices.redirect(source, target)
    finder = TorchAliasFinder(allow)
    sys.meta_path.insert(0, finder)
    log.info("torch is ember in this process%s%s",
             "; devices " + ", ".join(f"{s} -> {t}" for s, t in devices) if devices else "",
             "; allowed: " + ", ".join(allow) if allow else "")
    os.environ[ENV_ALIAS] = "1"
    os.environ[ENV_DEVICES] = ",".join(f"{s}={t}" for s, t in devices)
    os.environ[ENV_ALLOW] = ",".join(allow)
    site_dir = os.path.join(os.path.dirname(__file__), "_site")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if site_dir not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([site_dir] + paths)
    return finder


def install_from_environment() -> TorchAliasFinder:
    """What ``_site/sitecustomize.py`` calls in a child process of ``ember run``."""
    devices = _parse_devices(os.environ.get(ENV_DEVICES, ""))
    allow = [a for a in os.environ.get(ENV_ALLOW, "").split(",") if a]
    return install(devices, allow)


def uninstall(finder) -> None:
    """Remove ``finder`` and the ``torch``/``torchdata`` names it gave ember's modules."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for key in [k for k in sys.modules if k.partition(".")[0] in ALIASES]:
        if getattr(sys.modules[key], "__name__", "").startswith("ember"):
            del sys.modules[key]
    for var in (ENV_ALIAS, ENV_DEVICES, ENV_ALLOW):
        os.environ.pop(var, None)
