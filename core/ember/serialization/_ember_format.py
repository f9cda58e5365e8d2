"""ember's own checkpoint format: a safetensors file whose metadata describes the object.

Layout (an ordinary safetensors file, readable by any safetensors tool): since version 3 an entry
holds one *storage* (all its bytes, as ``torch.save`` stores storages), named after the first
tensor saved from it; its dtype is that tensor's (``U8`` when tensors of different dtypes share
the storage) and its shape the tensor's when the tensor is the whole storage, contiguous, else
1-D. The metadata holds ``format`` ("ember"), ``format_version``, ``tensors`` (JSON: per tensor
its ember dtype, device, shape, stride, storage offset, storage entry, requires_grad, class and,
for the tensor an entry is named after, the CRC-32 of the entry's bytes) and the object in one
of two forms (``object``). So views keep their strides and tensors sharing a storage load
sharing one, as with torch (a view of a big storage saves the whole storage, as torch does;
``clone()`` it to save less). Versions 1 and 2 stored each tensor's values on their own.

Version 1 files (tree form, no checksums) still load.
"""
from __future__ import annotations

import io
import json
import math
import pickle
import struct
import zlib
from collections import Counter, OrderedDict

from pickle import UnpicklingError
import numpy as np

from .. import _dtype
from .._device import device, device as _device_cls
from .._tensor import Size, Tensor
from ._unpickler import (Allowed, CorruptCheckpoint, SafeUnpickler, _Refused,
                         weights_only_message)
from ..nn.modules.module import _HookODict
from ..nn.parameter import Parameter
from ..ops.factories import from_numpy
from ..runtime import make_tensor
from .._layout import strided

FORMAT = "ember"
FORMAT_VERSION = 3
MAX_DEPTH = 256  # deeper trees are refused on load (and on save) instead of overflowing
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header

# ember dtype name -> (safetensors dtype tag, numpy storage dtype of the stored bytes);
# complex128 has no safetensors type, so it is stored as float64 pairs
ST = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
      "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32",
      "float64": "F64", "complex64": "C64", "complex128": "F64"}
_ST_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "F16": 2, "BF16": 2,
                "F32": 4, "F64": 8, "C64": 8, "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1,
                "F8_E5M2": 1, "C128": 16}


class NotTree(TypeError):
    """The object holds something the JSON tree cannot express: it goes to the pickle form."""


# -- save -------------------------------------------------------------------------------------
class Encoder:
    def __init__(self):
        self.tensors = {}   # name -> info dict (goes into the header)
        self.arrays = {}    # entry name -> (safetensors dtype, shape, bytes), see ``finish``
        self._names = {}    # id(tensor) -> name: one entry per tensor object
        self._storages = {}  # id(storage) -> [entry name, storage, [tensor names]]
        self._keep = []     # the tensors themselves, so ids stay unique while encoding

    def encode(self, obj, path="obj", depth=0):
        if depth > MAX_DEPTH:
            raise ValueError(f"ember.save: the object is nested more than {MAX_DEPTH} levels "
                             f"deep (at {path})")
        if obj is None or obj is True or obj is False or type(obj) in (int, str):
            return obj
        if type(obj) is float:
            return obj if math.isfinite(obj) else {"$": "float", "v": repr(obj)}
        if type(obj) is complex:
            return {"$": "complex", "v": [self.encode(obj.real), self.encode(obj.imag)]}
        if isinstance(obj, Tensor):
            return {"$": "tensor", "v": self.tensor(obj)}
        if isinstance(obj, _dtype.dtype):
            return {"$": "dtype", "v": obj.name}
        if isinstance(obj, _device_cls):
            return {"$": "device", "v": str(obj)}
        if type(obj) is Size:
            return {"$": "size", "v": [int(n) for n in obj]}
        if type(obj) in (list, tuple):
            tag = "list" if type(obj) is list else "tuple"
            return {"$": tag, "v": [self.encode(x, f"{path}[{i}]", depth + 1)
                                    for i, x in enumerate(obj)]}
        if type(obj) in (dict, OrderedDict, Counter):
            tag = {dict: "dict", OrderedDict: "odict", Counter: "counter"}[type(obj)]
            return {"$": tag, "v": [[self.encode(k, f"{path} key {k!r}", depth + 1),
                                     self.encode(v, f"{path}[{k!r}]", depth + 1)]
                                    for k, v in obj.items()]}
        raise NotTree(path, type(obj))

    def tensor(self, t):
        name = self._names.get(id(t))
        if name is not None:
            return name
        name = f"t{len(self._names)}"
        self._names[id(t)] = name
        self._keep.append(t)
        if t.device.type == "meta":
            raise ValueError("ember.save: cannot save a meta tensor: it holds no data")
        if t.layout is not _layout_strided():
            raise TypeError(f"ember.save: cannot save a {t.layout} tensor yet; save its "
                            f"to_dense() (or its indices and values)")
        st = t._storage
        held = self._storages.get(id(st))
        if held is None:
            held = self._storages[id(st)] = [name, st, []]
        held[2].append(name)
        info = {"dtype": t.dtype.name, "device": str(t.device), "shape": list(t.shape),
                "stride": list(t._stride), "offset": int(t._offset), "storage": held[0],
                "requires_grad": bool(t.requires_grad)}
        if type(t).__name__ == "Parameter" and type(t).__module__ == "ember.nn.parameter":
            info["class"] = "Parameter"
        self.tensors[name] = info
        return name

    def finish(self):
        """Each storage's bytes as an entry (see the module doc for its dtype and shape)."""
        for entry, st, users in self._storages.values():
            owner = self.tensors[entry]
            dt = _dtype.as_dtype(owner["dtype"])
            raw = make_tensor(st, (st.nbytes,), _dtype.uint8)._host()
            mixed = any(self.tensors[u]["dtype"] != owner["dtype"] for u in users) or \
                st.nbytes % dt.itemsize
            n = st.nbytes // dt.itemsize
            whole = owner["offset"] == 0 and math.prod(owner["shape"]) == n and \
                list(owner["stride"]) == _contiguous(owner["shape"])
            if mixed:
                tag, shape = "U8", [st.nbytes]
            else:
                tag = ST[dt.name]
                shape = list(owner["shape"]) if whole else [n]
                if dt is _dtype.complex128:
                    shape = shape + [2]
            owner["crc32"] = zlib.crc32(memoryview(raw))
            self.arrays[entry] = (tag, shape, raw)

    def pickle(self, obj, pickle_module, protocol):
        """The object pickled with every tensor as a persistent id (its data goes to the
        safetensors entries)."""
        buf = io.BytesIO()
        pickler = pickle_module.Pickler(buf, protocol=protocol)
        tensor = self.tensor

        def persistent_id(x):
            return tensor(x) if isinstance(x, Tensor) else None

        pickler.persistent_id = persistent_id
        pickler.dump(obj)
        return np.frombuffer(buf.getbuffer(), dtype=np.uint8).copy()


def _bytes_of(arr):
    return memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))


def _contiguous(shape):
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return out[::-1]


def _layout_strided():
    return strided


def prepare(obj, pickle_module, protocol):
    """Everything that can fail before the destination is touched: returns ``write(out)``."""
    enc = Encoder()
    meta = {"format": FORMAT, "format_version": str(FORMAT_VERSION)}
    try:
        meta["tree"] = json.dumps(enc.encode(obj))
        meta["object"] = "tree"
    except NotTree:
        enc = Encoder()
        try:
            payload = enc.pickle(obj, pickle_module, protocol)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise TypeError(f"ember.save: the object is not one of the types saved as data "
                            f"(tensors, containers, numbers, strings) and cannot be pickled "
                            f"either: {type(e).__name__}: {e}") from e
        meta["object"] = "pickle"
        meta["pickle_crc32"] = str(zlib.crc32(_bytes_of(payload)))
    enc.finish()
    if meta["object"] == "pickle":
        enc.arrays["pickle"] = ("U8", [payload.size], payload)
    meta["tensors"] = json.dumps(enc.tensors)
    header, offset = {"__metadata__": meta}, 0
    for name, (tag, shape, arr) in enc.arrays.items():
        header[name] = {"dtype": tag, "shape": shape,
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned, like safetensors' own

    def write(out):
        out.write(struct.pack("<Q", len(head)))
        out.write(head)
        for _, _, arr in enc.arrays.values():
            out.write(_bytes_of(arr))

    return write


# -- load -------------------------------------------------------------------------------------
def is_ember_file(first_bytes):
    return len(first_bytes) >= 9 and first_bytes[8:9] == b"{"


def read_header(src):
    """The safetensors header of ``src``, checked enough to say clearly what is wrong:
    (metadata, entries, data offset)."""
    label = src.label

    def bad(what):
        return CorruptCheckpoint(f"ember.load: {label} is not an ember file ({what})")
    size = src.size()
    if size < 8:
        raise bad(f"only {size} bytes; a safetensors file starts with an 8-byte header size")
    (n,) = struct.unpack("<Q", bytes(src.read_at(0, 8)))
    if n > size - 8 or n > _MAX_HEADER:
        raise bad(f"the header claims {n} bytes but the file has {size - 8} after the size "
                  f"field: truncated, or not a safetensors file")
    try:
        header = json.loads(bytes(src.read_at(8, n)).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad("the safetensors header is not valid JSON") from None
    meta = header.pop("__metadata__", None) if isinstance(header, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise bad("no ember metadata in the safetensors header; was it written by ember.save?")
    try:
        version = int(meta.get("format_version", ""))
    except ValueError:
        raise bad(f"invalid format_version {meta.get('format_version')!r}") from None
    if version > FORMAT_VERSION:
        raise CorruptCheckpoint(f"ember.load: {label} uses ember file format version {version}; this "
                         f"ember reads versions up to {FORMAT_VERSION} (upgrade ember)")
    data_len = size - 8 - n
    spans = []
    for name, e in header.items():
        ok = isinstance(e, dict) and e.get("dtype") in _ST_ITEMSIZE and \
            isinstance(e.get("shape"), list) and \
            all(type(d) is int and d >= 0 for d in e["shape"]) and \
            isinstance(e.get("data_offsets"), list) and len(e["data_offsets"]) == 2 and \
            all(type(o) is int for o in e["data_offsets"])
        if not ok:
            raise CorruptCheckpoint(f"ember.load: {label} is corrupted: invalid safetensors entry "
                             f"{name!r}: {_short(e)}")
        b, end = e["data_offsets"]
        if not 0 <= b <= end <= data_len or \
                end - b != math.prod(e["shape"]) * _ST_ITEMSIZE[e["dtype"]]:
            raise CorruptCheckpoint(f"ember.load: {label} is corrupted or truncated: entry {name!r} "
                             f"({e['dtype']} {e['shape']}) claims bytes {b}..{end} of a "
                             f"{data_len}-byte data section")
        spans.append((b, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise CorruptCheckpoint(f"ember.load: {label} is corrupted: entries {n0!r} and {n1!r} "
                             f"overlap")
        if b1 > e0:
            raise CorruptCheckpoint(f"ember.load: {label} is corrupted: {b1 - e0} bytes between "
                                    f"entries {n0!r} and {n1!r} belong to no entry (the "
                                    f"safetensors format allows no holes)")
    first = spans[0][0] if spans else data_len
    last = spans[-1][1] if spans else 0
    if first:
        raise CorruptCheckpoint(f"ember.load: {label} is corrupted: the first {first} bytes of "
                                f"the data section belong to no entry (the safetensors format "
                                f"allows no holes)")
    if last != data_len:
        raise CorruptCheckpoint(f"ember.load: {label} is corrupted: {data_len - last} bytes "
                                f"follow the last entry (trailing data: the safetensors format "
                                f"allows none)")
    return meta, version, header, 8 + n


class Reader:
    def __init__(self, src, place, weights_only, pickle_module, encoding):
        self.src, self.label = src, src.label
        self.meta, self.version, self.entries, self.data_start = read_header(src)
        self.place = place
        self.weights_only = weights_only
        self.pickle_module = pickle_module
        self.encoding = encoding
        try:
            self.infos = json.loads(self.meta.get("tensors", ""))
        except (ValueError, TypeError, RecursionError):
            raise self.bad("its ember metadata is not valid JSON") from None
        if not isinstance(self.infos, dict):
            raise self.bad("the tensor table is not a mapping")
        self.done = {}  # name -> tensor: the same entry loads as the same object
        self.storages = {}  # entry name -> its storage, placed (version 3)

    def bad(self, what):
        return CorruptCheckpoint(f"ember.load: {self.label} is corrupted or not a valid ember file: "
                          f"{what}")

    def load(self):
        form = self.meta.get("object", "tree")
        if form == "tree":
            try:
                tree = json.loads(self.meta.get("tree", ""))
            except (ValueError, TypeError, RecursionError):
                raise self.bad("its object tree is not valid JSON") from None
            return self.decode(tree)
        if form == "pickle" and self.version >= 2:
            return self._unpickle()
        raise self.bad(f"unknown object form {form!r}")

    def _entry_bytes(self, name, what):
        e = self.entries.get(name)
        if e is None:
            raise self.bad(f"the object refers to {what}, which the file does not hold")
        b, end = e["data_offsets"]
        data = self.src.read_at(self.data_start + b, end - b)
        if len(data) != end - b:
            raise self.bad(f"{what} is truncated")
        return e, data

    def _check_crc(self, data, stored, what):
        if stored is None and self.version < 2:
            return
        try:
            stored = int(stored)
        except (TypeError, ValueError):
            raise self.bad(f"{what} has no valid checksum ({stored!r})") from None
        got = zlib.crc32(data)
        if got != stored:
            raise CorruptCheckpoint(f"ember.load: {self.label} is corrupted: the data of {what} fails "
                             f"its checksum (CRC-32 {stored:#010x} stored, {got:#010x} read); "
                             f"the file was damaged after it was written")

    # -- the pickle form ----------------------------------------------------------------------
    def _unpickle(self):
        _, data = self._entry_bytes("pickle", "the pickled object")
        self._check_crc(data, self.meta.get("pickle_crc32"), "the pickled object")

        def persistent_load(pid):
            if type(pid) is not str or pid == "pickle":
                raise self.bad(f"invalid persistent id {_short(pid)} in the pickled object")
            return self.tensor(pid, f"tensor {pid}")

        if not self.weights_only:
            unpickler = self.pickle_module.Unpickler(io.BytesIO(bytes(data)),
                                                     encoding=self.encoding)
            unpickler.persistent_load = persistent_load
            return unpickler.load()
        allowed = ember_allowed().with_user_globals()
        try:
            return SafeUnpickler(data, allowed, persistent_load, encoding=self.encoding).load()
        except _Refused as e:
            raise UnpicklingError(weights_only_message(self.label, str(e))) from None
        except UnpicklingError as e:
            raise UnpicklingError(f"ember.load: {self.label} is corrupted: its pickled object "
                                  f"does not parse: {e}") from None

    # -- the tree form ------------------------------------------------------------------------
    def decode(self, node, depth=0, path="obj"):
        if depth > MAX_DEPTH:
            raise self.bad(f"the object tree is nested more than {MAX_DEPTH} levels deep")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or set(node) != {"$", "v"}:
            raise self.bad(f"unexpected node {_short(node)} in the object tree")
        tag, v = node["$"], node["v"]
        if tag in ("list", "tuple"):
            items = [self.decode(x, depth + 1, f"{path}[{i}]")
                     for i, x in enumerate(self._list(v, tag))]
            return items if tag == "list" else tuple(items)
        if tag in ("dict", "odict", "counter"):
            out = {"dict": dict, "odict": OrderedDict, "counter": Counter}[tag]()
            for pair in self._list(v, tag):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self.bad(f"a {tag} item must be a [key, value] pair, got "
                                   f"{_short(pair)}")
                key = self.decode(pair[0], depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise self.bad(f"unhashable dict key {_short(pair[0])}") from None
                out[key] = self.decode(pair[1], depth + 1, f"{path}[{key!r}]")
            return out
        if tag == "tensor" and isinstance(v, str):
            return self.tensor(v, path)
        if tag == "float" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "complex":
            parts = [self.decode(x, depth + 1) for x in self._list(v, tag)]
            if len(parts) != 2 or not all(type(x) in (int, float) for x in parts):
                raise self.bad(f"a complex number must be [real, imag], got {_short(v)}")
            return complex(*parts)
        if tag == "dtype" and v in ST:
            return _dtype.as_dtype(v)
        if tag == "device" and isinstance(v, str):
            try:
                return _device_cls(v)
            except Exception as e:
                raise self.bad(f"invalid device {v!r}: {e}") from None
        if tag == "size" and isinstance(v, list) and all(type(n) is int and n >= 0 for n in v):
            return Size(v)
        raise self.bad(f"unknown or malformed node {_short(node)}")

    def _list(self, v, tag):
        if not isinstance(v, list):
            raise self.bad(f"a {tag} node must hold a list, got {_short(v)}")
        return v

    def tensor(self, name, path):
        if name in self.done:
            return self.done[name]
        info = self.infos.get(name)
        if not isinstance(info, dict) or (self.version < 3 and name not in self.entries):
            raise self.bad(f"the object refers to tensor {name!r}, which the file does not "
                           f"hold")
        dname, shape = info.get("dtype"), info.get("shape")
        if dname not in ST or not isinstance(shape, list) or \
                not all(type(n) is int and n >= 0 for n in shape):
            raise self.bad(f"tensor {name!r} has an invalid description {_short(info)}")
        dt = _dtype.as_dtype(dname)
        what = path if path.startswith("tensor") else f"tensor {path} ({name})"
        if self.version >= 3:
            t = self._view(name, info, dt, shape, what)
        else:
            t = self._own_data(name, info, dt, shape, what)
        if info.get("requires_grad") is True:
            t.requires_grad_(True)
        if info.get("class") == "Parameter":
            t = Parameter(t, requires_grad=t.requires_grad)
        self.done[name] = t
        return t

    def _view(self, name, info, dt, shape, what):
        """Version 3: the tensor over its (shared) storage, with its strides and offset."""
        stride, offset, entry = info.get("stride"), info.get("offset"), info.get("storage")
        if not isinstance(stride, list) or len(stride) != len(shape) or \
                not all(type(s) is int and s >= 0 for s in stride) or \
                type(offset) is not int or offset < 0 or type(entry) is not str:
            raise self.bad(f"tensor {name!r} has an invalid layout {_short(info)}")
        storage = self._storage(entry, what)
        if math.prod(shape):
            end = (offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1) * dt.itemsize
            if end > storage.nbytes:
                raise self.bad(f"tensor {name!r} (size {shape}, stride {stride}, offset "
                               f"{offset}) reaches byte {end} of its {storage.nbytes}-byte "
                               f"storage {entry!r}")
        return make_tensor(storage, shape, dt, stride, offset)

    def _storage(self, entry, what):
        st = self.storages.get(entry)
        if st is not None:
            return st
        owner = self.infos.get(entry)
        e = self.entries.get(entry)
        if not isinstance(owner, dict) or e is None or owner.get("storage") != entry or \
                owner.get("dtype") not in ST:
            raise self.bad(f"{what} refers to storage {entry!r}, which the file does not hold")
        odt = _dtype.as_dtype(owner["dtype"])
        if e["dtype"] == ST[odt.name]:
            npd = odt.np
        elif e["dtype"] == "U8":
            npd = np.uint8
        else:
            raise self.bad(f"storage {entry!r} is stored as {e['dtype']}, not as its tensor "
                           f"{entry!r}'s {odt.name}")
        _, data = self._entry_bytes(entry, what)
        self._check_crc(data, owner.get("crc32"), what)
        if len(data) % np.dtype(npd).itemsize:
            npd = np.uint8
        base = self.place(from_numpy(np.frombuffer(data, dtype=npd)),
                          str(owner.get("device", "cpu")), what)
        st = self.storages[entry] = base._storage
        return st

    def _own_data(self, name, info, dt, shape, what):
        """Versions 1 and 2: each tensor's values in its own entry, C-contiguous."""
        entry = self.entries[name]
        st_shape = shape + [2] if dt is _dtype.complex128 else shape
        if entry["dtype"] != ST[dt.name] or entry["shape"] != st_shape:
            raise self.bad(f"tensor {name!r} is described as {dt.name} {shape} but stored as "
                           f"{entry['dtype']} {entry['shape']}")
        _, data = self._entry_bytes(name, f"tensor {name!r}")
        self._check_crc(data, info.get("crc32"), what)
        arr = np.frombuffer(data, dtype=dt.np).reshape(shape)
        return self.place(from_numpy(arr), str(info.get("device", "cpu")), what)


def _short(x, n=80):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "…"


_EMBER_ALLOWED = None


def ember_allowed():
    """The globals an ember pickle may use by default: containers and ember's value types."""
    global _EMBER_ALLOWED
    if _EMBER_ALLOWED is None:
        names = {"ember._dtype._by_name": _dtype._by_name, "ember._device.device": device,
                 "ember._tensor.Size": Size,
                 "ember.nn.modules.module._HookODict": _HookODict}
        _EMBER_ALLOWED = Allowed(names, callables=(_dtype._by_name, device, Size, _HookODict),
                                 newobj=(Size,), build=(_HookODict,))
    return _EMBER_ALLOWED
