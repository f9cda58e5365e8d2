"""ember's logging: ``logging.getLogger("ember")`` and its children, and ``EMBER_LOGS``.

Every logger is a child of ``"ember"``, so ``logging.basicConfig(level=logging.INFO)`` (or any
handler on ``"ember"``) shows them. ``EMBER_LOGS`` works like ``TORCH_LOGS``: a comma-separated
list of names, each at INFO, ``+name`` at DEBUG, ``-name`` at ERROR, ``all`` for every one::

    EMBER_LOGS="+dispatch,recompiles" python train.py

==================  ==========================  ==================================================
name                logger                      what it says
==================  ==========================  ==================================================
``registry``        ``ember.registry``          plug-ins discovered, loaded (time), unavailable
                                                (why); backends' availability
``dispatch``        ``ember.dispatch``          DEBUG: which handler an op gets for a key set (at
                                                a resolution-cache miss, never per call)
``fallback``        ``ember.fallback``          ops a backend runs on the CPU fallback (once each)
``kernels``         ``ember.kernels``           kernels/programs compiled (time) and the caches
                                                that spared a compile
``compile``         ``ember.compile``           ember.compile: captures and their graphs
``recompiles``      ``ember.compile.recompiles``  a new guard case captured, and why
``guards``          ``ember.compile.guards``    DEBUG: the guards of each captured case
``graph_breaks``    ``ember.compile.graph_breaks``  graph breaks, their reason and line
``distributed``     ``ember.distributed``       process groups, engines, the launcher
``run``             ``ember.run``               ``ember run``: the torch alias, device redirects,
                                                refused packages
==================  ==========================  ==================================================

Loggers are called only where something happens once (a load, a compile, a cache miss), never
on the per-op path. ``set_logs(registry=logging.INFO, recompiles=True)`` is the programmatic
form (``torch._logging.set_logs``).
"""
from __future__ import annotations

import logging
import os
import sys

__all__ = ["COMPONENTS", "set_logs", "configure_from_environment"]

ROOT = "ember"
COMPONENTS = {
    "registry": "ember.registry",
    "dispatch": "ember.dispatch",
    "fallback": "ember.fallback",
    "kernels": "ember.kernels",
    "compile": "ember.compile",
    "recompiles": "ember.compile.recompiles",
    "guards": "ember.compile.guards",
    "graph_breaks": "ember.compile.graph_breaks",
    "distributed": "ember.distributed",
    "run": "ember.run",
}

_handler = None
logging.getLogger(ROOT).addHandler(logging.NullHandler())


def parse(spec: str) -> dict:
    """``"+dispatch,recompiles"`` -> {"dispatch": DEBUG, "recompiles": INFO}; ValueError names
    the valid names for anything else."""
    levels = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        level = logging.DEBUG if item[0] == "+" else logging.ERROR if item[0] == "-" else \
            logging.INFO
        name = item.lstrip("+-")
        if name == "all":
            levels.update(dict.fromkeys(COMPONENTS, level))
        elif name in COMPONENTS:
            levels[name] = level
        else:
            raise ValueError(f"EMBER_LOGS: unknown log name {name!r} in {spec!r}; valid names: "
                             f"all, {', '.join(COMPONENTS)} (prefix + for DEBUG, - for ERROR)")
    return levels


def _install_handler() -> None:
    """One stderr handler on ``ember``: what EMBER_LOGS / set_logs turn on is printed even when
    the program configured no logging (torch's TORCH_LOGS does the same)."""
    global _handler
    root = logging.getLogger(ROOT)
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("[%(name)s] %(levelname)s: %(message)s"))
        root.addHandler(_handler)
        root.propagate = False
    root.setLevel(logging.DEBUG)   # each component's own level decides


def set_logs(**components) -> None:
    """``set_logs(registry=logging.INFO, dispatch=logging.DEBUG, recompiles=True)``: the given
    components at those levels (True: INFO; False/None: back to inheriting)."""
    unknown = [k for k in components if k not in COMPONENTS]
    if unknown:
        raise ValueError(f"set_logs: unknown log names {unknown}; valid: {', '.join(COMPONENTS)}")
    # components not named stay quiet (a parent's level would otherwise let them through)
    for name, logger_name in COMPONENTS.items():
        value = components.get(name)
        level = logging.INFO if value is True else value if isinstance(value, int) and \
            not isinstance(value, bool) else None
        logger = logging.getLogger(logger_name)
        if level is not None:
            logger.setLevel(level)
        elif "." in logger_name[len(ROOT) + 1:]:   # ember.compile.x inherits ember.compile's
            logger.setLevel(logging.NOTSET)
        else:
            logger.setLevel(logging.WARNING)
    _install_handler()


def configure_from_environment() -> None:
    """Apply ``EMBER_LOGS`` (done once when ``import ember`` imports this module)."""
    spec = os.environ.get("EMBER_LOGS", "").strip()
    if spec:
        set_logs(**parse(spec))


configure_from_environment()
