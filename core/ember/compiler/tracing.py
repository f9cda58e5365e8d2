"""What Python state a captured call reads and writes.

The dispatcher sees tensor ops only, so a graph alone can't tell that ``x * S`` read the global
``S``, or that ``forward`` stored its loss in ``self.last_loss``. While a capture runs its
function, ``StateTracer`` follows the user's frames (and ``nn.Module``/optimizer code) with
``sys.settrace``'s per-opcode events and, at each load or store instruction, works out which
slot it touches:

* ``LOAD_GLOBAL`` → the module's globals (or builtins) entry; ``LOAD_DEREF`` of a free variable
  → its closure cell;
* ``LOAD_ATTR``/``LOAD_METHOD`` → the instance's ``__dict__`` entry (or a module's
  ``_modules``/``_parameters``/``_buffers`` entry, or the class attribute, with the instance
  entry guarded absent), ``BINARY_SUBSCR`` with a constant or local key → that container item;
* the matching stores (``STORE_ATTR``, ``STORE_GLOBAL``, ``STORE_DEREF``, ``STORE_SUBSCR``,
  deletes) and mutating method calls on lists and dicts (``append``, ``update``, ...).

The object a load reads from is found by re-reading the short chain of loads before the
instruction (``self.cfg.scale``: ``LOAD_FAST self``, ``LOAD_ATTR cfg``) — the value stack
itself is not visible from Python. Only state that outlives the call matters, so a slot counts
when its object is *external*: reached from a global, a closure cell, an argument, or another
external object (modules bring their whole tree); objects made during the call are ignored.

The first read of each slot (unless the call wrote it first) becomes a guard
(``guards.StateGuard``); each written slot becomes a side effect to redo on replay
(``effects.py``). Reads through properties or ``__getattr__`` of non-modules, and objects
reached only through call results, are not seen (docs/architecture.md lists the limits)."""
from __future__ import annotations

import dis
import gc
import sys
import threading
from types import FunctionType as _FunctionType, ModuleType as _ModuleType

from .._tensor import Tensor
from ..nn.modules.module import Module
from .capture import _user_line

MISSING = object()
UNKNOWN = object()

# functions whose calls a replay would skip: a call that reads one is a graph break
_IMPURE_MODULES = {"time", "random", "logging"}
_IMPURE_BUILTINS = {"print", "input", "open", "breakpoint"}
_MUTATORS = {
    list: {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
           "__setitem__", "__delitem__", "__iadd__"},
    dict: {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"},
    set: {"add", "discard", "remove", "pop", "clear", "update", "difference_update",
          "intersection_update", "symmetric_difference_update"},
}
# ember's own code is not traced, except where user-visible module/optimizer state is read
_TRACED_EMBER = ("ember.nn.modules", "ember.optim", "ember.nn.utils")
_SKIPPED_PACKAGES = {"numpy", "scipy", "torch", "pytest", "_pytest", "pluggy", "pyopencl",
                     "cupy", "onnx", "onnxruntime", "typing_extensions", "expecttest"}
_classified: dict = {}


def _traced_code(code, module_name):
    key = (code, module_name)
    hit = _classified.get(key)
    if hit is None:
        name = module_name or ""
        top = name.split(".", 1)[0]
        if top.startswith("ember"):
            hit = name.startswith(_TRACED_EMBER)
        elif top in sys.stdlib_module_names or top in _SKIPPED_PACKAGES:
            hit = False
        else:
            path = code.co_filename
            hit = not (path.startswith("<frozen") or "site-packages" in path or
                       "dist-packages" in path)
        _classified[key] = hit
    return hit


class _Code:
    """A code object's instructions by offset, and which offsets are jump targets."""
    __slots__ = ("at", "ins", "freevars")

    def __init__(self, code):
        self.ins = list(dis.get_instructions(code))
        self.at = {i.offset: k for k, i in enumerate(self.ins)}
        self.freevars = set(code.co_freevars)


_codes: dict = {}


def _code_info(code):
    info = _codes.get(code)
    if info is None:
        info = _codes[code] = _Code(code)
    return info


class Slot:
    """Where a value lives: ``kind`` "map" (``container[key]``, a dict or a class's
    mappingproxy), "cell" (``container.cell_contents``), "seq" (``container[key]`` of a
    list) or "attr" (``getattr(container, key)``; writes through ``setattr``)."""
    __slots__ = ("kind", "container", "key", "where", "owner")

    def __init__(self, kind, container, key, where=None, owner=None):
        self.kind, self.container, self.key, self.where = kind, container, key, where
        self.owner = owner       # the object whose attribute this is (reads and writes agree)

    def ident(self):
        key = self.key if _hashable(self.key) else ("id", id(self.key))
        if self.owner is not None:
            return ("attr", id(self.owner), key)
        return (self.kind, id(self.container), key)

    def read(self):
        c = self.container
        if self.kind == "map":
            return c.get(self.key, MISSING)
        if self.kind == "cell":
            try:
                return c.cell_contents
            except ValueError:
                return MISSING
        if self.kind == "seq":
            return c[self.key] if -len(c) <= self.key < len(c) else MISSING
        return getattr(c, self.key, MISSING)

    def describe(self):
        if self.kind == "cell":
            return f"closure variable {self.key}"
        if self.kind == "attr":
            return f"{type(self.container).__name__}.{self.key}"
        if self.where:
            return self.where
        return f"{type(self.container).__name__}[{self.key!r}]"


def _hashable(k):
    try:
        hash(k)
        return True
    except TypeError:
        return False


class StateTracer:
    """``with StateTracer(fn, args, kwargs): fn(*args, **kwargs)`` records ``reads`` (slot →
    the value first read) and ``writes`` (slots the call stored to), ``mutated`` containers
    (with their contents before the first mutation) and ``impure`` (why a replay would skip
    something the call did, e.g. a ``print``)."""

    def __init__(self, fn, args=(), kwargs=None, on_impure=None):
        self.on_impure = on_impure   # called with the reason when a replay would skip a call
        self._pending = []
        self.reads = {}          # ident -> (Slot, value)
        self.written = {}        # ident -> Slot
        self._stored = set()     # idents of container items the call stored (not guards)
        self._seen = {}          # id -> (container read from external state, its contents)
        self.mutated = {}        # id(container) -> (container, snapshot)
        self.impure = []         # (reason, where)
        self.external = set()
        self._alive = []
        self._memo = {}          # frame -> (instruction index, value, external)
        self._augmented = {}     # frame -> (object, external, key) of an ``x.a += v`` read
        self._cells = {}
        self.thread = threading.get_ident()
        self.fn = fn
        for a in list(args) + list((kwargs or {}).values()):
            self._register(a)
        self._register(getattr(fn, "__self__", None))
        func = getattr(fn, "__func__", fn)
        self._register(func)
        code = getattr(func, "__code__", None)
        if code is not None and getattr(func, "__closure__", None):
            self._cells[code] = dict(zip(code.co_freevars, func.__closure__))

    # -- external objects -----------------------------------------------------------------------
    def _register(self, v, depth=0):
        if v is None or isinstance(v, (int, float, str, bool, Tensor)) or id(v) in self.external:
            return
        self.external.add(id(v))
        self._alive.append(v)
        if isinstance(v, Module):
            for m in v.modules():
                if id(m) not in self.external:
                    self.external.add(id(m))
                    self._alive.append(m)
        elif depth < 2 and isinstance(v, (list, tuple, set, frozenset)):
            for x in v:
                self._register(x, depth + 1)
        elif depth < 2 and isinstance(v, dict):
            for x in list(v.values()):
                self._register(x, depth + 1)
        elif isinstance(v, _FunctionType):
            # default argument values live as long as the function
            for x in (v.__defaults__ or ()) + tuple((v.__kwdefaults__ or {}).values()):
                self._register(x, depth + 1)

    # -- tracing --------------------------------------------------------------------------------
    def __enter__(self):
        self._previous = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)
        self._memo.clear()
        self._augmented.clear()
        return False

    def _call(self, frame, event, arg):
        if event != "call" or not _traced_code(frame.f_code, frame.f_globals.get("__name__")):
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame, event, arg):
        if event == "opcode":
            try:
                self._opcode(frame)
            except Exception:  # noqa: BLE001 - an odd object must not break the user's call
                self._memo.pop(frame, None)
            if self._pending:
                reason = self._pending.pop()
                if self.on_impure is not None:
                    self.on_impure(reason)      # may raise GraphBreak (fullgraph=True)
        elif event == "return":
            self._memo.pop(frame, None)
            self._augmented.pop(frame, None)
        return self._local

    def _opcode(self, frame):
        info = _code_info(frame.f_code)
        k = info.at.get(frame.f_lasti)
        if k is None:
            return
        ins = info.ins[k]
        op = ins.opname
        if op == "LOAD_GLOBAL":
            self._memo[frame] = (k, self._global(frame, ins.argval), True)
        elif op in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
            if ins.argval in info.freevars:
                cell = self._cell(frame, ins.argval)
                if cell is not None:
                    value = self._read(Slot("cell", cell, ins.argval))
                    self._memo[frame] = (k, value, True)
        elif op in ("LOAD_ATTR", "LOAD_METHOD"):
            obj, ext = self._operand(frame, info, k - 1)
            if info.ins[k - 1].opname == "COPY":     # ``obj.a += v``: the store reuses obj
                self._augmented[frame] = (obj, ext, None)
            value = UNKNOWN
            if obj is not UNKNOWN:
                if op == "LOAD_METHOD" and ext:
                    self._check_mutator(obj, ins.argval, frame)
                if ext:
                    value = self._attr(obj, ins.argval, frame)
            self._memo[frame] = (k, value, ext and value is not UNKNOWN)
        elif op == "BINARY_SUBSCR":
            # ``c[k] += v`` reads through two COPYs of the container and key
            aug = info.ins[k - 1].opname == "COPY" and info.ins[k - 2].opname == "COPY"
            j = k - 2 if aug else k
            key = self._key(frame, info, j - 1)
            value, ext = UNKNOWN, False
            if key is not UNKNOWN:
                obj, ext = self._operand(frame, info, j - 2)
                if aug:
                    self._augmented[frame] = (obj, ext, key)
                if ext and isinstance(obj, (dict, list, tuple)):
                    value = self._item(obj, key)
                    ext = value is not UNKNOWN
            self._memo[frame] = (k, value, ext)
        elif op in ("STORE_ATTR", "DELETE_ATTR"):
            if info.ins[k - 1].opname == "SWAP":
                obj, ext, _ = self._augmented.get(frame, (UNKNOWN, False, None))
            else:
                obj, ext = self._operand(frame, info, k - 1)
            if ext and not isinstance(obj, Tensor):
                self._write(self._attr_slot(obj, ins.argval, for_write=True))
        elif op in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            self._write(Slot("map", frame.f_globals, ins.argval, f"global {ins.argval}"))
        elif op in ("STORE_DEREF", "DELETE_DEREF"):
            if ins.argval in info.freevars:
                cell = self._cell(frame, ins.argval)
                if cell is not None:
                    self._write(Slot("cell", cell, ins.argval))
        elif op in ("STORE_SUBSCR", "DELETE_SUBSCR"):
            if info.ins[k - 1].opname == "SWAP":
                obj, ext, _ = self._augmented.get(frame, (UNKNOWN, False, None))
            else:
                obj, ext = self._operand(frame, info, k - 2)
            if ext and isinstance(obj, (dict, list)):
                self._snapshot(obj)
                key = self._key(frame, info, k - 1) if info.ins[k - 1].opname != "SWAP" \
                    else self._augmented.get(frame, (None, None, UNKNOWN))[2]
                if key is not UNKNOWN:        # later reads of this item read the call's value
                    kind = "map" if isinstance(obj, dict) else "seq"
                    self._stored.add(Slot(kind, obj, key).ident())

    # -- operands -------------------------------------------------------------------------------
    def _operand(self, frame, info, j):
        """(value, external) of the expression whose last instruction is ``j``."""
        if j < 0 or info.ins[j + 1].is_jump_target:
            return UNKNOWN, False
        ins = info.ins[j]
        op = ins.opname
        if op == "LOAD_FAST":
            v = frame.f_locals.get(ins.argval, UNKNOWN)
            return v, v is not UNKNOWN and id(v) in self.external
        if op == "COPY" and ins.arg == 1:
            return self._operand(frame, info, j - 1)
        if op in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_ATTR",
                  "BINARY_SUBSCR"):
            memo = self._memo.get(frame)
            if memo is not None and memo[0] == j:
                return memo[1], memo[2]
            if op in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
                v = frame.f_locals.get(ins.argval, UNKNOWN)
                return v, False
        return UNKNOWN, False

    def _key(self, frame, info, j):
        if j < 0 or info.ins[j + 1].is_jump_target:
            return UNKNOWN
        ins = info.ins[j]
        if ins.opname == "COPY" and ins.arg == 1:
            return self._key(frame, info, j - 1)
        if ins.opname == "LOAD_CONST":
            return ins.argval
        if ins.opname == "LOAD_FAST":
            v = frame.f_locals.get(ins.argval, UNKNOWN)
            if v is UNKNOWN or not _hashable(v):
                return UNKNOWN
            return v
        return UNKNOWN

    def _cell(self, frame, name):
        code = frame.f_code
        cells = self._cells.get(code)
        if cells is None:
            cells = self._cells[code] = _find_cells(frame, self.external)
        return cells.get(name)

    # -- slots ----------------------------------------------------------------------------------
    def _read(self, slot):
        """Records the first read of ``slot`` (unless the call wrote it first) and returns its
        value, registering it as external."""
        ident = slot.ident()
        value = slot.read()
        if ident not in self.reads and ident not in self.written and ident not in self._stored:
            self.reads[ident] = (slot, value)
        if value is not MISSING:
            self._register(value)
            self._impure_read(value)
            if type(value) in (list, dict, set) and id(value) not in self._seen:
                # its contents now, to catch changes no visible method call made
                # (``self.log += [x]``, a C function appending): see changed_containers()
                self._seen[id(value)] = (value, _copy_of(value))
        return value

    def changed_containers(self):
        """Containers read from external state whose contents differ from when they were
        first read, without a mutation the tracer saw: (container, contents before)."""
        out = []
        for key, (c, before) in self._seen.items():
            if key in self.mutated:
                continue
            now = _copy_of(c)
            if len(now) != len(before) or (
                    any(a is not b for a, b in zip(now, before)) if isinstance(c, list) else
                    any(k not in before or before[k] is not v for k, v in now.items())
                    if isinstance(c, dict) else now != before):
                out.append((c, before))
        return out

    def _write(self, slot):
        self.written.setdefault(slot.ident(), slot)
        if slot.kind in ("map", "cell", "attr"):
            self._alive.append(slot.container)

    def _global(self, frame, name):
        g = frame.f_globals
        if name not in g or _ember_name(g.get("__name__")):
            # builtins, and ember's own globals, are ember's and Python's, not the user's state
            value = g.get(name, MISSING)
            if value is MISSING:
                value = frame.f_builtins.get(name, MISSING)
            if value is not MISSING:
                self._impure_read(value)
            return value if value is not MISSING else UNKNOWN
        value = self._read(Slot("map", g, name, f"global {name}"))
        return value if value is not MISSING else UNKNOWN

    def _attr_slot(self, obj, name, for_write=False):
        where = f"{type(obj).__name__}.{name}"
        if isinstance(obj, Module) and for_write:
            return Slot("attr", obj, name, where, owner=obj)
        d = getattr(obj, "__dict__", None)
        if isinstance(obj, type):
            for c in obj.__mro__:
                if name in c.__dict__:
                    return Slot("map", c.__dict__, name, f"{obj.__name__}.{name}")
            return None
        if d is None:
            return None
        if for_write or name in d:
            return Slot("map", d, name, where, owner=obj)
        if isinstance(obj, Module):
            for table in ("_parameters", "_buffers", "_modules"):
                t = d.get(table)
                if t is not None and name in t:
                    return Slot("map", t, name, where, owner=obj)
        return None

    def _attr(self, obj, name, frame):
        if isinstance(obj, Tensor):
            return UNKNOWN
        if isinstance(obj, _ModuleType) and _ember_name(obj.__name__):
            value = obj.__dict__.get(name, UNKNOWN)     # ember's API, not the user's state
            if value is not UNKNOWN:
                self._impure_read(value)
            return value
        tp = type(obj)
        if not isinstance(obj, type):
            # the class attribute (a method, a constant) unless a data descriptor (a property)
            # computes the value: those run user code, and are not read here
            for c in tp.__mro__:
                if name in c.__dict__:
                    attr = c.__dict__[name]
                    if hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__"):
                        if type(attr).__name__ == "member_descriptor":
                            return self._read_member(obj, attr, name)
                        return UNKNOWN
                    break
            else:
                attr = MISSING
            slot = self._attr_slot(obj, name)
            if slot is not None:
                return self._read(slot)
            d = getattr(obj, "__dict__", None)
            if attr is MISSING:
                return UNKNOWN
            if d is not None:                # guarded absent from the instance
                self._read(Slot("map", d, name, f"{tp.__name__}.{name}", owner=obj))
            for c in tp.__mro__:
                if name in c.__dict__:
                    # a method of the user's class may be patched; ember's and Python's aren't
                    if c.__module__ != "builtins" and not _ember_name(c.__module__):
                        self._read(Slot("map", c.__dict__, name, f"{c.__name__}.{name}"))
                    break
            get = getattr(type(attr), "__get__", None)
            return get(attr, obj, tp) if get is not None else attr
        slot = self._attr_slot(obj, name)
        if slot is None:
            return UNKNOWN
        value = self._read(slot)
        get = getattr(type(value), "__get__", None)
        if get is not None and value is not MISSING:
            try:
                return get(value, None, obj)
            except Exception:  # noqa: BLE001 - a descriptor that needs an instance
                return UNKNOWN
        return value if value is not MISSING else UNKNOWN

    def _read_member(self, obj, descriptor, name):
        # __slots__ members: no mapping to guard on; the object's identity is what we know
        try:
            return descriptor.__get__(obj, type(obj))
        except AttributeError:
            return UNKNOWN

    def _item(self, obj, key):
        if isinstance(obj, dict):
            if type(obj) is not dict and key not in obj:
                return UNKNOWN       # a defaultdict's missing key: its factory runs
            return self._read(Slot("map", obj, key))
        if isinstance(obj, list) and type(key) is int:
            return self._read(Slot("seq", obj, key))
        if isinstance(obj, tuple) and type(key) is int and -len(obj) <= key < len(obj):
            v = obj[key]
            self._register(v)
            return v
        return UNKNOWN

    def _snapshot(self, container):
        if id(container) not in self.mutated:
            seen = self._seen.get(id(container))
            # the contents when first read, if a change no call showed came before this one
            copy = seen[1] if seen is not None else _copy_of(container)
            self.mutated[id(container)] = (container, copy)
            self._alive.append(container)

    def _check_mutator(self, obj, name, frame):
        for kind, names in _MUTATORS.items():
            if isinstance(obj, kind) and name in names:
                self._snapshot(obj)
                return

    def _impure_read(self, value):
        if callable(value) and not isinstance(value, type):
            mod = getattr(value, "__module__", None)
            name = getattr(value, "__name__", "")
            owner = getattr(value, "__self__", None)
            if (mod == "builtins" and name in _IMPURE_BUILTINS) or mod in _IMPURE_MODULES or \
                    type(owner).__module__ == "random":
                reason = f"calls {mod or 'random'}.{name}(), which a replay would not run"
                self.impure.append((reason, _user_line()))
                self._pending.append(reason)


def _copy_of(c):
    return dict(c) if isinstance(c, dict) else list(c) if isinstance(c, list) else set(c)


def _ember_name(name):
    return bool(name) and (name == "ember" or name.startswith("ember.") or
                           name.startswith("ember_"))


def _find_cells(frame, external):
    """name -> cell of the free variables of the function running in ``frame``, when that
    function existed before the call (a closure made during the call has fresh cells)."""
    code = frame.f_code
    candidates = [f for f in gc.get_referrers(code)
                  if getattr(f, "__code__", None) is code and f.__closure__ and
                  id(f) in external]
    local = frame.f_locals
    for f in candidates:
        cells = dict(zip(code.co_freevars, f.__closure__))
        try:
            if all(local.get(n, MISSING) is c.cell_contents for n, c in cells.items()):
                return cells
        except ValueError:
            continue
    return {}

