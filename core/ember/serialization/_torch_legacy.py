"""The pre-zip torch formats: the legacy pickle sequence (torch 1.0 – 1.5, and
``_use_new_zipfile_serialization=False`` since) and the tar format (torch < 0.4).

In the pickle sequence the storages' bytes come after the object's pickle, and their element
sizes are known only from the storage types named inside it. So the object's pickle is first
walked symbolically (nothing is resolved or called; only the persistent ids are collected), the
storages are located, and then the pickle is run for real by the weights-only unpickler.
"""
from __future__ import annotations

import pickletools
import struct
import tarfile
from pickle import UnpicklingError

from ._torch_format import (_STORAGES, LEGACY_MAGIC, LEGACY_PROTOCOL, LoadedStorage,
                            TorchReader, _decode, _itemsize)
from ._unpickler import (Allowed, CorruptCheckpoint, SafeUnpickler, _Refused,
                         weights_only_message)

_NO_GLOBALS = Allowed({})


class _Sym:
    """A placeholder for whatever a symbolic walk would have built."""

    def __init__(self, name=""):
        self.name = name


class _SymbolicUnpickler(SafeUnpickler):
    """Walks a pickle without resolving globals or calling anything."""

    def _global(self, module, name):
        return _Sym(f"{module}.{name}")

    def _call(self, func, args, kwargs=None):
        return _Sym()

    def _new(self, cls, args, kwargs=None):
        return _Sym()

    def _build(self, inst, state):
        pass

    def _check_container(self, obj, kind):
        return obj if isinstance(obj, (list, dict, set)) else _SymSink()


class _SymSink:
    def append(self, x):
        pass

    def add(self, x):
        pass

    def __setitem__(self, k, v):
        pass


def _pickle_end(src, pos):
    """Where the pickle starting at ``pos`` ends (its opcodes parsed, nothing run)."""
    src.stream.seek(src.start + pos)
    try:
        for opcode, _, _ in pickletools.genops(src.stream):
            if opcode.name == "STOP":
                break
        else:
            raise ValueError("no STOP opcode")
    except ValueError as e:
        raise CorruptCheckpoint(f"ember.load: {src.label} is corrupted: a pickle at byte {pos} does "
                         f"not parse ({e})") from None
    return src.stream.tell() - src.start


def _small_pickle(reader, pos):
    """One of the sequence's plain-data pickles (magic number, protocol, system info, storage
    keys): torch writes no global into them, so none is ever resolved (even with
    ``weights_only=False``)."""
    src = reader.src
    end = _pickle_end(src, pos)
    try:
        return SafeUnpickler(src.read_at(pos, end - pos), _NO_GLOBALS).load(), end
    except _Refused as e:
        if reader.weights_only:
            raise UnpicklingError(weights_only_message(src.label, str(e))) from None
        raise UnpicklingError(f"ember.load: {src.label} is not a valid torch checkpoint: the "
                              f"data pickle at byte {pos} refers to a global, which torch never "
                              f"writes there; refused ({e})") from None
    except UnpicklingError as e:
        raise UnpicklingError(f"ember.load: {src.label} is corrupted: the pickle at byte "
                                f"{pos} does not parse ({e})") from None


def load_legacy(reader: TorchReader):
    src = reader.src
    magic, pos = _small_pickle(reader, 0)
    if magic != LEGACY_MAGIC:
        raise CorruptCheckpoint(f"ember.load: {reader.label} is a pickle but not a torch checkpoint "
                         f"(no torch magic number)")
    protocol, pos = _small_pickle(reader, pos)
    if protocol != LEGACY_PROTOCOL:
        raise CorruptCheckpoint(f"ember.load: {reader.label}: invalid torch protocol version "
                         f"{protocol!r}")
    sys_info, pos = _small_pickle(reader, pos)
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    reader.big_endian = not little
    main_start, main_end = pos, _pickle_end(src, pos)
    main = src.read_at(main_start, main_end - main_start)
    keys, pos = _small_pickle(reader, main_end)
    if not isinstance(keys, list) or not all(isinstance(k, (str, bytes)) for k in keys):
        raise CorruptCheckpoint(f"ember.load: {reader.label} is corrupted: the storage key list is "
                         f"{type(keys).__name__}")

    # 1. the storages the object refers to, by a symbolic walk
    roots = {}

    def collect(pid):
        if type(pid) is tuple and pid and _decode(pid[0]) == "storage" and len(pid) == 6:
            st, key, numel = pid[1], _decode(pid[2]), pid[4]
            name = st.name.rsplit(".", 1)[-1] if isinstance(st, _Sym) else ""
            if type(key) is str and type(numel) is int and _STORAGES.get(name):
                roots.setdefault(key, (_STORAGES[name], numel))
        return _Sym("storage")

    try:
        _SymbolicUnpickler(main, _NO_GLOBALS, collect).load()
    except UnpicklingError as e:
        raise UnpicklingError(f"ember.load: {reader.label} is corrupted: its object pickle "
                                f"does not parse ({e})") from None

    # 2. where each storage's bytes are: an int64 element count, then the elements
    fmt = "<q" if little else ">q"
    located = {}
    for key in map(_decode, keys):
        if key not in roots:
            raise CorruptCheckpoint(f"ember.load: {reader.label} is corrupted: storage {key!r} is "
                             f"stored but no tensor of the object uses it")
        dtype_name, numel = roots[key]
        head = src.read_at(pos, 8)
        if len(head) != 8:
            raise CorruptCheckpoint(f"ember.load: {reader.label} is truncated: storage {key!r} is "
                             f"missing")
        (count,) = struct.unpack(fmt, bytes(head))
        if count != numel:
            raise CorruptCheckpoint(f"ember.load: {reader.label} is corrupted: storage {key!r} holds "
                             f"{count} elements, its tensors expect {numel}")
        located[key] = (pos + 8, numel * _itemsize(dtype_name))
        pos += 8 + numel * _itemsize(dtype_name)

    def reader_for(key):
        start, n = located[key]

        def read():
            data = src.read_at(start, n)
            if len(data) != n:
                raise CorruptCheckpoint(f"ember.load: {reader.label} is truncated inside storage "
                                 f"{key!r}")
            return data
        return read

    # 3. the object, for real
    def persistent_load(pid):
        kind = _decode(pid[0]) if type(pid) is tuple and pid else None
        if kind == "module" and len(pid) == 4:
            return pid[1]  # a module class saved with its source (already allow-listed)
        if kind != "storage" or len(pid) != 6:
            raise UnpicklingError(f"ember.load: {reader.label}: unexpected persistent id "
                                  f"{pid!r}")
        _, st, key, location, numel, view = pid
        key, location = _decode(key), _decode(location)
        dtype_name = reader.storage_type(st)
        if key not in located:
            raise UnpicklingError(f"ember.load: {reader.label} is corrupted: storage {key!r} "
                                  f"is not in the file")
        root = reader.storages.get(key)
        if root is None:
            root = reader.storages[key] = LoadedStorage(reader, key, dtype_name, numel,
                                                        str(location), reader_for(key))
        if view is None:
            return root
        view_key, offset, size = view
        view_key = _decode(view_key)
        s = reader.storages.get(("view", view_key))
        if s is None:
            s = reader.storages[("view", view_key)] = LoadedStorage(
                reader, view_key, dtype_name, size, root.location, None, parent=(root, offset))
        return s

    return reader.unpickle(main, persistent_load)


def load_tar(reader: TorchReader):
    src = reader.src
    src.stream.seek(src.start)
    try:
        tar = tarfile.open(fileobj=src.stream, mode="r:")
        members = {m.name: m for m in tar.getmembers()}
    except (tarfile.TarError, OSError) as e:
        raise CorruptCheckpoint(f"ember.load: {reader.label} is not a readable tar checkpoint "
                         f"({e})") from None

    def member(name):
        m = members.get(name)
        if m is None or not m.isfile():
            raise CorruptCheckpoint(f"ember.load: {reader.label} is a tar file without a {name!r} "
                             f"member: not a torch checkpoint")
        try:
            return bytearray(tar.extractfile(m).read())
        except (tarfile.TarError, OSError, EOFError) as e:
            raise CorruptCheckpoint(f"ember.load: {reader.label} is corrupted: its {name!r} "
                                    f"member cannot be read ({e})") from None

    allowed = reader.allowed()
    objects = {}

    def at(buf, pos):
        u = SafeUnpickler(buf, allowed, encoding=reader.encoding, pos=pos)
        try:
            return u.load(), u.pos
        except _Refused as e:
            raise UnpicklingError(weights_only_message(reader.label, str(e))) from None
        except UnpicklingError as e:
            if reader.label in str(e):
                raise
            raise UnpicklingError(f"ember.load: {reader.label} is corrupted: a pickle at "
                                    f"byte {pos} does not parse ({e})") from None

    def ints(buf, pos, fmt, n):
        size = struct.calcsize(fmt) * n
        if pos + size > len(buf):
            raise CorruptCheckpoint(f"ember.load: {reader.label} is truncated")
        return struct.unpack(f"<{n}{fmt}", bytes(buf[pos:pos + size])), pos + size

    buf = member("storages")
    count, pos = at(buf, 0)
    for _ in range(int(count)):
        (key, location, st), pos = at(buf, pos)
        dtype_name = reader.storage_type(st)
        (numel,), pos = ints(buf, pos, "q", 1)
        n = numel * _itemsize(dtype_name)
        if numel < 0 or pos + n > len(buf):
            raise CorruptCheckpoint(f"ember.load: {reader.label} is truncated inside storage {key!r}")
        data = buf[pos:pos + n]
        pos += n
        objects[key] = LoadedStorage(reader, key, dtype_name, numel, str(_decode(location)),
                                     lambda data=data: bytearray(data))
    views, pos = at(buf, pos)
    for target, root, offset, numel in views:
        r = objects[root]
        objects[target] = LoadedStorage(reader, target, r.dtype_name, numel, r.location, None,
                                        parent=(r, offset))
    buf = member("tensors")
    count, pos = at(buf, 0)
    for _ in range(int(count)):
        (key, storage_id, _tensor_type), pos = at(buf, pos)
        (ndim,), pos = ints(buf, pos, "i", 1)
        pos += 4  # the legacy writer stored ndim in 8 bytes
        size, pos = ints(buf, pos, "q", ndim)
        stride, pos = ints(buf, pos, "q", ndim)
        (offset,), pos = ints(buf, pos, "q", 1)
        objects[key] = reader._tensor(objects[storage_id], offset, size, stride)

    def persistent_load(saved_id):
        if isinstance(saved_id, tuple):
            return saved_id[0]  # a module class saved with its source (already allow-listed)
        try:
            return objects[int(saved_id)]
        except (KeyError, ValueError, TypeError):
            raise UnpicklingError(f"ember.load: {reader.label}: unknown persistent id "
                                  f"{saved_id!r}") from None

    objects = {int(k): v for k, v in objects.items()}
    return reader.unpickle(member("pickle"), persistent_load)
