"""The allow-list of the weights-only unpickler: the user's safe globals (``add_safe_globals``
/ ``safe_globals``, process-wide like PyTorch's), the ``Allowed`` tables a loader builds, and the
refusal messages in PyTorch's wording."""
from __future__ import annotations

import codecs
import contextlib
import threading
from collections import Counter, OrderedDict
from pickle import UnpicklingError

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "Allowed", "CorruptCheckpoint", "weights_only_message"]

_lock = threading.Lock()
_user_globals: list = []  # objects, or (object, "module.name") pairs


def add_safe_globals(safe_globals):
    """Allow these classes and functions in ``ember.load(weights_only=True)``: a list of
    objects (named by their ``__module__`` and ``__qualname__``) or ``(object, "module.name")``
    pairs for objects known under another name. A class allowed here may be created, called and
    have its state set by a checkpoint, so allow only classes you trust to be rebuilt from
    data."""
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals expects a list of globals, got "
                        f"{type(safe_globals).__qualname__}")
    for g in safe_globals:
        _name_of(g)  # validate before adding any
    with _lock:
        _user_globals.extend(safe_globals)


def get_safe_globals():
    """The user's allow-list (what ``add_safe_globals`` added), as a list."""
    with _lock:
        return list(_user_globals)


def clear_safe_globals():
    """Empty the user's allow-list."""
    with _lock:
        _user_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """``with safe_globals([...]):`` allow these globals inside the block only."""
    with _lock:
        saved = list(_user_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        with _lock:
            _user_globals[:] = saved


def _name_of(g):
    if isinstance(g, tuple):
        if len(g) != 2 or not isinstance(g[1], str):
            raise ValueError(f"add_safe_globals: a tuple entry must be (object, "
                             f"'module.name'), got {g!r}")
        return g[1]
    module, name = getattr(g, "__module__", None), getattr(g, "__qualname__", None) or \
        getattr(g, "__name__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise ValueError(f"add_safe_globals: {g!r} has no __module__/__qualname__; pass "
                         f"(object, 'module.name')")
    return f"{module}.{name}"


def _user_table():
    with _lock:
        return {_name_of(g): (g[0] if isinstance(g, tuple) else g) for g in _user_globals}


def _encode(obj, encoding="utf-8", errors="strict"):
    """``_codecs.encode`` as protocol-2 pickles use it for bytes: text codecs only."""
    if codecs.lookup(encoding).name not in ("latin-1", "iso8859-1", "utf-8", "ascii"):
        raise UnpicklingError(f"_codecs.encode with encoding {encoding!r} is not allowed")
    return codecs.encode(obj, encoding, errors)


class Allowed:
    """What a pickle may use: ``names`` (GLOBAL name -> object), the objects that REDUCE/INST
    may call, the classes NEWOBJ may create and BUILD may set state on. ``hint(name)`` adds a
    sentence to the refusal of a global."""

    BASE = {"collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
            "builtins.set": set, "builtins.frozenset": frozenset, "builtins.complex": complex,
            "builtins.bytearray": bytearray, "_codecs.encode": _encode}

    def __init__(self, names, *, callables=(), newobj=(), build=(), hint=None):
        self.names = {**self.BASE, **names}
        self.callables = {id(x) for x in (*self.BASE.values(), *callables)}
        self.newobj = {id(x) for x in newobj}
        self.build = {id(x) for x in (OrderedDict, Counter, *build)}
        self.hint = hint

    def with_user_globals(self):
        user = _user_table()
        out = Allowed.__new__(Allowed)
        out.names = {**self.names, **user}
        ids = {id(x) for x in user.values()}
        out.callables = self.callables | ids
        out.newobj = self.newobj | ids
        out.build = self.build | ids
        out.hint = self.hint
        return out


def _refusal(full_path, hint):
    shown = full_path[len("builtins."):] if full_path.startswith("builtins.") else full_path
    msg = (f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. "
           f"Please use `ember.serialization.add_safe_globals([{shown}])` or the "
           f"`ember.serialization.safe_globals([{shown}])` context manager to allowlist this "
           f"global if you trust this class/function.")
    extra = hint(full_path) if hint else None
    return msg + (" " + extra if extra else "")


def weights_only_message(label, detail):
    """PyTorch's wording for a refused weights-only load, with ember's names."""
    return (f"Weights only load failed for {label}. This file can still be loaded, to do so you "
            f"have two options, do those steps only if you trust the source of the checkpoint."
            f"\n\t(1) Re-running `ember.load` with `weights_only` set to `False` will likely "
            f"succeed, but it can result in arbitrary code execution. Do it only if you got the "
            f"file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` "
            f"please check the recommended steps in the following error message.\n\t"
            f"WeightsUnpickler error: {detail}")


class _Refused(UnpicklingError):
    """A refusal by the allow-list (as opposed to a malformed pickle)."""


class CorruptCheckpoint(ValueError):
    """A checkpoint that is damaged or inconsistent (raised by the readers, also from inside a
    running pickle: it passes through the interpreter unchanged)."""


