"""The weights-only unpickler: a pickle interpreter that builds data and calls nothing but an
allow-list.

``pickle.Unpickler`` with an overridden ``find_class`` still lets a file BUILD (set attributes
on) any object it can reach and run the extension registry, so, like PyTorch, ember interprets
the opcodes itself: containers, numbers, strings and bytes are built directly; GLOBAL resolves
only names on the allow-list (never importing anything); REDUCE, NEWOBJ and INST call only
allow-listed callables and classes; BUILD is accepted only on instances of allow-listed classes
(never on ember's interned values such as devices); persistent ids go to the caller's loader.
Anything else is an ``UnpicklingError`` that names what was refused and how to allow it.

The allow-list itself and the user's additions live in ``_safe_globals``.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import struct
from collections import Counter, OrderedDict
from pickle import UnpicklingError
import io
import pickletools

from ..ops.inplace_metadata import default_setstate
from ._safe_globals import (Allowed, CorruptCheckpoint, _refusal, _Refused,
                            add_safe_globals, clear_safe_globals, get_safe_globals,
                            safe_globals, weights_only_message)

__all__ = ["SafeUnpickler", "globals_in_pickle", "Allowed", "CorruptCheckpoint",
           "weights_only_message", "add_safe_globals", "get_safe_globals",
           "clear_safe_globals", "safe_globals"]

class SafeUnpickler:
    """Interpret one pickle from ``data`` (bytes-like) starting at ``pos``; ``load()`` returns
    the object and leaves ``pos`` after the STOP opcode."""

    def __init__(self, data, allowed, persistent_load=None, *, encoding="utf-8", pos=0):
        self.data = memoryview(data).cast("B")
        self.pos = pos
        self.allowed = allowed
        self.persistent_load = persistent_load
        self.encoding = encoding

    # -- reading ---------------------------------------------------------------------------------
    def _read(self, n):
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise UnpicklingError(f"pickle data was truncated: {n} bytes wanted at byte "
                                  f"{self.pos}, {len(self.data) - self.pos} left")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def _readline(self):
        data = self.data
        i = self.pos
        n = len(data)
        while i < n and data[i] != 10:
            i += 1
        if i >= n:
            raise UnpicklingError("pickle data was truncated inside a text opcode")
        out = bytes(data[self.pos:i])
        self.pos = i + 1
        return out

    # -- the machine -----------------------------------------------------------------------------
    def load(self):
        self.stack, self.metastack, self.memo = [], [], {}
        dispatch = _DISPATCH
        while True:
            start = self.pos
            code = self._read(1)[0]
            handler = dispatch.get(code)
            if handler is None:
                raise UnpicklingError(f"unsupported or invalid pickle opcode {bytes([code])!r} "
                                      f"at byte {start}")
            try:
                if handler(self) is _STOP:
                    if len(self.stack) != 1 or self.metastack:
                        raise UnpicklingError("malformed pickle: the stack is not a single "
                                              "object at STOP")
                    return self.stack.pop()
            except (UnpicklingError, CorruptCheckpoint):
                raise
            except (IndexError, KeyError, TypeError, ValueError, AttributeError,
                    struct.error, UnicodeDecodeError, OverflowError, RecursionError) as e:
                raise UnpicklingError(f"malformed pickle at byte {start} (opcode "
                                      f"{bytes([code])!r}): {type(e).__name__}: {e}") from None

    def _pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _global(self, module, name):
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        try:
            return self.allowed.names[full]
        except KeyError:
            raise _Refused(_refusal(full, self.allowed.hint)) from None

    def _call(self, func, args, kwargs=None):
        if id(func) not in self.allowed.callables:
            raise _Refused(f"Trying to call reduce for unrecognized function {func!r}; only "
                           f"allow-listed globals may be called")
        return func(*args, **(kwargs or {}))

    def _new(self, cls, args, kwargs=None):
        if not isinstance(cls, type) or id(cls) not in self.allowed.newobj:
            raise _Refused(f"Can only create new object for classes allowlisted via "
                           f"`ember.serialization.add_safe_globals` but got {cls!r}")
        return cls.__new__(cls, *args, **(kwargs or {}))

    def _build(self, inst, state):
        if id(type(inst)) not in self.allowed.build:
            raise _Refused(f"Can only build OrderedDict, Counter or types allowlisted via "
                           f"`ember.serialization.add_safe_globals`, but got {type(inst)!r}")
        setstate = getattr(inst, "__setstate__", None)
        if setstate is not None:
            setstate(state)
            return
        default_setstate(inst, state)

    def _check_container(self, obj, kind):
        ok = {"list": list, "dict": dict, "set": set}[kind]
        if type(obj) is ok or (kind == "dict" and isinstance(obj, (OrderedDict, Counter))) \
                or id(type(obj)) in self.allowed.build:
            return obj
        raise _Refused(f"Can only add items to a {kind}, but got {type(obj)!r}")


_STOP = object()


def _op(code):
    def deco(fn):
        _DISPATCH[code[0]] = fn
        return fn
    return deco


_DISPATCH = {}


@_op(b"\x80")
def _proto(u):
    if u._read(1)[0] > 5:
        raise UnpicklingError("unsupported pickle protocol (newer than 5)")


@_op(b"\x95")
def _frame(u):
    u._read(8)


@_op(b".")
def _stop(u):
    return _STOP


@_op(b"(")
def _mark(u):
    u.metastack.append(u.stack)
    u.stack = []


@_op(b"0")
def _pop(u):
    if u.stack:
        u.stack.pop()
    else:
        u._pop_mark()


@_op(b"1")
def _pop_mark(u):
    u._pop_mark()


@_op(b"2")
def _dup(u):
    u.stack.append(u.stack[-1])


# -- numbers, strings, bytes --------------------------------------------------------------------
@_op(b"N")
def _none(u):
    u.stack.append(None)


@_op(b"\x88")
def _true(u):
    u.stack.append(True)


@_op(b"\x89")
def _false(u):
    u.stack.append(False)


@_op(b"I")
def _int(u):
    line = u._readline()
    u.stack.append({b"00": False, b"01": True}.get(line) if line in (b"00", b"01")
                   else int(line))


@_op(b"L")
def _long(u):
    line = u._readline()
    u.stack.append(int(line[:-1] if line.endswith(b"L") else line))


@_op(b"J")
def _binint(u):
    u.stack.append(struct.unpack("<i", u._read(4))[0])


@_op(b"K")
def _binint1(u):
    u.stack.append(u._read(1)[0])


@_op(b"M")
def _binint2(u):
    u.stack.append(struct.unpack("<H", u._read(2))[0])


@_op(b"\x8a")
def _long1(u):
    n = u._read(1)[0]
    u.stack.append(int.from_bytes(u._read(n), "little", signed=True))


@_op(b"\x8b")
def _long4(u):
    n = struct.unpack("<i", u._read(4))[0]
    u.stack.append(int.from_bytes(u._read(n), "little", signed=True))


@_op(b"F")
def _float(u):
    u.stack.append(float(u._readline()))


@_op(b"G")
def _binfloat(u):
    u.stack.append(struct.unpack(">d", u._read(8))[0])


def _py2_str(u, raw):
    return raw if u.encoding == "bytes" else raw.decode(u.encoding, "strict")


@_op(b"S")
def _string(u):
    line = u._readline()
    if len(line) < 2 or line[0] != line[-1] or line[0] not in b"\"'":
        raise UnpicklingError("the STRING opcode argument must be quoted")
    u.stack.append(_py2_str(u, codecs.escape_decode(line[1:-1])[0]))


@_op(b"T")
def _binstring(u):
    n = struct.unpack("<i", u._read(4))[0]
    u.stack.append(_py2_str(u, bytes(u._read(n))))


@_op(b"U")
def _short_binstring(u):
    u.stack.append(_py2_str(u, bytes(u._read(u._read(1)[0]))))


@_op(b"V")
def _unicode(u):
    u.stack.append(u._readline().decode("raw-unicode-escape"))


def _sized(u, length_format):
    """The payload after a little-endian length ("<B", "<I" or "<Q" struct format)."""
    prefix = u._read(struct.calcsize(length_format))
    return u._read(struct.unpack(length_format, prefix)[0])


def _utf8(data):
    return str(data, "utf-8", "surrogatepass")


def _sized_opcode(code, length_format, convert):
    """Register opcode ``code``: push ``convert`` of its length-prefixed payload."""
    @_op(code)
    def push(u):
        u.stack.append(convert(_sized(u, length_format)))


# the length-prefixed string and bytes opcodes: (opcode, length format, what it pushes)
for _code, _length_format, _convert in (
        (b"X", "<I", _utf8),          # BINUNICODE
        (b"\x8c", "<B", _utf8),       # SHORT_BINUNICODE
        (b"\x8d", "<Q", _utf8),       # BINUNICODE8
        (b"B", "<I", bytes),          # BINBYTES
        (b"C", "<B", bytes),          # SHORT_BINBYTES
        (b"\x8e", "<Q", bytes),       # BINBYTES8
        (b"\x96", "<Q", bytearray)):  # BYTEARRAY8
    _sized_opcode(_code, _length_format, _convert)
del _code, _length_format, _convert


# -- containers ---------------------------------------------------------------------------------
@_op(b")")
def _empty_tuple(u):
    u.stack.append(())


@_op(b"t")
def _tuple(u):
    items = u._pop_mark()  # (before u.stack is read: popping the mark replaces it)
    u.stack.append(tuple(items))


@_op(b"\x85")
def _tuple1(u):
    u.stack[-1] = (u.stack[-1],)


@_op(b"\x86")
def _tuple2(u):
    u.stack[-2:] = [(u.stack[-2], u.stack[-1])]


@_op(b"\x87")
def _tuple3(u):
    u.stack[-3:] = [(u.stack[-3], u.stack[-2], u.stack[-1])]


@_op(b"]")
def _empty_list(u):
    u.stack.append([])


@_op(b"l")
def _list(u):
    items = u._pop_mark()
    u.stack.append(items)


@_op(b"}")
def _empty_dict(u):
    u.stack.append({})


@_op(b"d")
def _dict(u):
    items = u._pop_mark()
    u.stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})


@_op(b"\x8f")
def _empty_set(u):
    u.stack.append(set())


@_op(b"\x91")
def _frozenset(u):
    items = u._pop_mark()
    u.stack.append(frozenset(items))


@_op(b"a")
def _append(u):
    item = u.stack.pop()
    target = u._check_container(u.stack[-1], "list")
    target.append(item)


@_op(b"e")
def _appends(u):
    items = u._pop_mark()
    target = u._check_container(u.stack[-1], "list")
    if type(target) is list:
        target.extend(items)
    else:
        for x in items:
            target.append(x)


@_op(b"s")
def _setitem(u):
    value, key = u.stack.pop(), u.stack.pop()
    u._check_container(u.stack[-1], "dict")[key] = value


@_op(b"u")
def _setitems(u):
    items = u._pop_mark()
    target = u._check_container(u.stack[-1], "dict")
    for i in range(0, len(items), 2):
        target[items[i]] = items[i + 1]


@_op(b"\x90")
def _additems(u):
    items = u._pop_mark()
    target = u._check_container(u.stack[-1], "set")
    for x in items:
        target.add(x)


# -- memo ---------------------------------------------------------------------------------------
@_op(b"g")
def _get(u):
    u.stack.append(u.memo[int(u._readline())])


@_op(b"h")
def _binget(u):
    u.stack.append(u.memo[u._read(1)[0]])


@_op(b"j")
def _long_binget(u):
    u.stack.append(u.memo[struct.unpack("<I", u._read(4))[0]])


@_op(b"p")
def _put(u):
    i = int(u._readline())
    if i < 0:
        raise ValueError("negative PUT argument")
    u.memo[i] = u.stack[-1]


@_op(b"q")
def _binput(u):
    u.memo[u._read(1)[0]] = u.stack[-1]


@_op(b"r")
def _long_binput(u):
    u.memo[struct.unpack("<I", u._read(4))[0]] = u.stack[-1]


@_op(b"\x94")
def _memoize(u):
    u.memo[len(u.memo)] = u.stack[-1]


# -- the risky ones: names, calls, object state --------------------------------------------------
@_op(b"c")
def _global_op(u):
    module = u._readline().decode("utf-8")
    name = u._readline().decode("utf-8")
    u.stack.append(u._global(module, name))


@_op(b"\x93")
def _stack_global(u):
    name, module = u.stack.pop(), u.stack.pop()
    if type(name) is not str or type(module) is not str:
        raise UnpicklingError("STACK_GLOBAL requires str module and name")
    u.stack.append(u._global(module, name))


@_op(b"R")
def _reduce(u):
    args = u.stack.pop()
    if type(args) is not tuple:
        raise UnpicklingError(f"REDUCE arguments must be a tuple, got {type(args).__name__}")
    u.stack[-1] = u._call(u.stack[-1], args)


@_op(b"\x81")
def _newobj(u):
    args = u.stack.pop()
    cls = u.stack.pop()
    u.stack.append(u._new(cls, tuple(args)))


@_op(b"\x92")
def _newobj_ex(u):
    kwargs = u.stack.pop()
    args = u.stack.pop()
    cls = u.stack.pop()
    u.stack.append(u._new(cls, tuple(args), dict(kwargs)))


@_op(b"i")
def _inst(u):
    module = u._readline().decode("ascii")
    name = u._readline().decode("ascii")
    cls = u._global(module, name)
    args = u._pop_mark()
    u.stack.append(u._call(cls, tuple(args)))


@_op(b"o")
def _obj(u):
    args = u._pop_mark()
    cls = args.pop(0)
    u.stack.append(u._call(cls, tuple(args)))


@_op(b"b")
def _build_op(u):
    state = u.stack.pop()
    u._build(u.stack[-1], state)


@_op(b"P")
def _persid(u):
    pid = u._readline().decode("ascii")
    u.stack.append(_persistent(u, pid))


@_op(b"Q")
def _binpersid(u):
    u.stack.append(_persistent(u, u.stack.pop()))


def _persistent(u, pid):
    if u.persistent_load is None:
        raise UnpicklingError("the pickle refers to external data (a persistent id) where "
                              "none is expected")
    return u.persistent_load(pid)


for _code, _what in ((b"\x82", "EXT1"), (b"\x83", "EXT2"), (b"\x84", "EXT4"),
                     (b"\x97", "NEXT_BUFFER"), (b"\x98", "READONLY_BUFFER")):
    def _refuse(u, _what=_what):
        raise _Refused(f"the pickle opcode {_what} (the copyreg extension registry or "
                       f"out-of-band buffers) is not allowed in a weights-only load")
    _DISPATCH[_code[0]] = _refuse


def globals_in_pickle(data, pos=0):
    """The ``module.name`` globals a pickle refers to (read without running anything), and the
    position after it."""
    stream = io.BytesIO(bytes(data))
    stream.seek(pos)
    found, strings = [], []
    for opcode, arg, _ in pickletools.genops(stream):
        if opcode.name in ("GLOBAL", "INST"):
            module, name = arg.split(" ", 1)
            found.append(_compat_name(module, name))
        elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.append(_compat_name(strings[-2], strings[-1]))
        if isinstance(arg, str):
            strings.append(arg)
    return found, stream.tell()


def _compat_name(module, name):
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{name}"
