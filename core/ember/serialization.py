"""``ember.save`` / ``ember.load``: objects made of tensors, containers and Python scalars, in a
safetensors file, with no pickle anywhere.

The file is an ordinary safetensors file (readable by any safetensors tool): each distinct tensor
is one entry named ``t0``, ``t1``… holding its values C-contiguously (a view is saved as its own
data). The safetensors metadata holds ``format`` ("ember"), ``format_version`` and two JSON
documents: ``tensors`` (per entry: ember dtype, device, shape, requires_grad, class) and ``tree``
(the object, where every container and non-JSON value is a tagged node ``{"$": tag, "v": …}``,
so dict keys of any supported type — e.g. an optimizer state's int keys — survive).

Loading only ever builds the allow-listed node types below from data; nothing in a file can
name a function to call, so loading an untrusted file cannot run code. ``weights_only`` is
accepted for PyTorch compatibility; both values load the same way.
"""
from __future__ import annotations

import json
import math
import os
import struct
import tempfile
from collections import Counter, OrderedDict

import numpy as np
import safetensors

from . import _dtype
from ._device import device as _device_cls
from ._tensor import Size, Tensor

__all__ = ["save", "load"]

FORMAT = "ember"
FORMAT_VERSION = 1
_MAX_DEPTH = 256  # deeper trees are refused on load (and on save) instead of overflowing

# ember dtype name -> (safetensors TensorSpec dtype, header tag); complex128 has no safetensors
# type, so it is stored as float64 pairs (a trailing dimension of 2)
_ST = {"bool": ("bool", "BOOL"), "uint8": ("uint8", "U8"), "int8": ("int8", "I8"),
       "int16": ("int16", "I16"), "int32": ("int32", "I32"), "int64": ("int64", "I64"),
       "float16": ("float16", "F16"), "bfloat16": ("bfloat16", "BF16"),
       "float32": ("float32", "F32"), "float64": ("float64", "F64"),
       "complex64": ("complex64", "C64"), "complex128": ("float64", "F64")}


# -- save -------------------------------------------------------------------------------------
class _Encoder:
    def __init__(self):
        self.tensors = {}   # name -> info dict (goes into the header)
        self.arrays = {}    # name -> contiguous host array (kept alive while serializing)
        self._names = {}    # id(tensor) -> name: one entry per tensor object
        self._keep = []     # the tensors themselves, so ids stay unique while encoding

    def encode(self, obj, path="obj", depth=0):
        if depth > _MAX_DEPTH:
            raise ValueError(f"ember.save: the object is nested more than {_MAX_DEPTH} levels "
                             f"deep (at {path})")
        if obj is None or obj is True or obj is False or type(obj) in (int, str):
            return obj
        if type(obj) is float:
            return obj if math.isfinite(obj) else {"$": "float", "v": repr(obj)}
        if type(obj) is complex:
            return {"$": "complex", "v": [self.encode(obj.real), self.encode(obj.imag)]}
        if isinstance(obj, Tensor):
            return {"$": "tensor", "v": self._tensor(obj)}
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
        raise TypeError(f"ember.save: can't save an object of type {type(obj).__qualname__} (at "
                        f"{path}); supported: tensors, dict/OrderedDict/Counter, list, tuple, "
                        f"None, bool, int, float, complex, str, ember.dtype, ember.device, "
                        f"ember.Size")

    def _tensor(self, t):
        name = self._names.get(id(t))
        if name is not None:
            return name
        name = f"t{len(self._names)}"
        self._names[id(t)] = name
        self._keep.append(t)
        arr = t.detach()._host()
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
        if t.dtype is _dtype.complex128:
            arr = arr.reshape(-1).view(np.float64).reshape(tuple(t.shape) + (2,))
        self.arrays[name] = arr
        info = {"dtype": t.dtype.name, "device": str(t.device), "shape": list(t.shape),
                "requires_grad": bool(t.requires_grad)}
        if type(t).__name__ == "Parameter" and type(t).__module__ == "ember.nn.parameter":
            info["class"] = "Parameter"
        self.tensors[name] = info
        return name


def _serialize(obj) -> bytes:
    enc = _Encoder()
    tree = enc.encode(obj)
    specs = {}
    for name, arr in enc.arrays.items():
        st_dtype = _ST[enc.tensors[name]["dtype"]][0]
        specs[name] = safetensors.TensorSpec(dtype=st_dtype, shape=list(arr.shape),
                                             data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    metadata = {"format": FORMAT, "format_version": str(FORMAT_VERSION),
                "tensors": json.dumps(enc.tensors), "tree": json.dumps(tree)}
    data = safetensors.serialize(specs, metadata=metadata)
    del enc  # the arrays had to outlive serialize(): it reads them through raw pointers
    return bytes(data)


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save ``obj`` (tensors on any device, nested in dicts/lists/tuples, with Python scalars
    and strings) to ``f``: a path (written atomically: a temporary file in the same directory,
    then ``os.replace``) or a writable binary file object. The pickle arguments exist for
    PyTorch compatibility and must be left at their defaults."""
    if pickle_module is not None or pickle_protocol is not None:
        raise ValueError("ember.save: ember files never use pickle; pickle_module and "
                         "pickle_protocol must be None")
    data = _serialize(obj)  # everything that can fail before touching the destination
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".ember-save-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    elif hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"ember.save: f must be a path (str or os.PathLike) or a binary file "
                        f"object with write(), got {type(f).__qualname__}")


# -- load -------------------------------------------------------------------------------------
class _Decoder:
    def __init__(self, label, infos, entries, place):
        self.label = label
        self.infos = infos      # name -> tensor info (from the header)
        self.entries = entries  # name -> safetensors entry {"dtype", "shape", "data"}
        self.place = place      # (cpu tensor, saved device string) -> tensor
        self.done = {}          # name -> tensor: the same entry loads as the same object

    def bad(self, what):
        return ValueError(f"ember.load: {self.label} is corrupted or not a valid ember file: "
                          f"{what}")

    def decode(self, node, depth=0, path="obj"):
        if depth > _MAX_DEPTH:
            raise self.bad(f"the object tree is nested more than {_MAX_DEPTH} levels deep")
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
            return self._tensor(v, path)
        if tag == "float" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "complex":
            parts = [self.decode(x, depth + 1) for x in self._list(v, tag)]
            if len(parts) != 2 or not all(type(x) in (int, float) for x in parts):
                raise self.bad(f"a complex number must be [real, imag], got {_short(v)}")
            return complex(*parts)
        if tag == "dtype" and v in _ST:
            return _dtype.as_dtype(v)
        if tag == "device" and isinstance(v, str):
            return self._call(_device_cls, v, "device")
        if tag == "size" and isinstance(v, list) and \
                all(type(n) is int and n >= 0 for n in v):
            return Size(v)
        raise self.bad(f"unknown or malformed node {_short(node)}")

    def _list(self, v, tag):
        if not isinstance(v, list):
            raise self.bad(f"a {tag} node must hold a list, got {_short(v)}")
        return v

    def _call(self, fn, arg, what):
        try:
            return fn(arg)
        except Exception as e:
            raise self.bad(f"invalid {what} {arg!r}: {e}") from None

    def _tensor(self, name, path):
        if name in self.done:
            return self.done[name]
        info, entry = self.infos.get(name), self.entries.get(name)
        if not isinstance(info, dict) or entry is None:
            raise self.bad(f"the object tree refers to tensor {name!r}, which the file does not "
                           f"hold")
        dname, shape = info.get("dtype"), info.get("shape")
        if dname not in _ST or not isinstance(shape, list) or \
                not all(type(n) is int and n >= 0 for n in shape):
            raise self.bad(f"tensor {name!r} has an invalid description {_short(info)}")
        dt = _dtype.as_dtype(dname)
        st_shape = shape + [2] if dt is _dtype.complex128 else shape
        if entry["dtype"] != _ST[dname][1] or list(entry["shape"]) != st_shape:
            raise self.bad(f"tensor {name!r} is described as {dname} {shape} but stored as "
                           f"{entry['dtype']} {list(entry['shape'])}")
        data = entry["data"]
        if len(data) != math.prod(shape) * dt.itemsize:
            raise self.bad(f"tensor {name!r} holds {len(data)} bytes; {dname} {shape} needs "
                           f"{math.prod(shape) * dt.itemsize}")
        buf = data if isinstance(data, bytearray) else bytearray(data)  # writable, owned
        arr = np.frombuffer(buf, dtype=dt.np).reshape(shape)
        from .ops.factories import from_numpy
        t = self.place(from_numpy(arr), str(info.get("device", "cpu")), path)
        if info.get("requires_grad") is True:
            t.requires_grad_(True)
        if info.get("class") == "Parameter":
            from .nn.parameter import Parameter
            t = Parameter(t, requires_grad=t.requires_grad)
        self.done[name] = t
        return t


def _short(x, n=80):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "…"


def _placer(map_location, label):
    """(cpu tensor, saved device string, entry name) -> the tensor where map_location puts it."""
    from ._device import as_device

    if map_location is None or isinstance(map_location, (str, _device_cls)):
        fixed = None if map_location is None else str(map_location)
        table = None
    elif isinstance(map_location, dict):
        fixed = None
        table = {str(k): str(v) for k, v in map_location.items()}
    elif callable(map_location):
        fixed = table = None
    else:
        raise TypeError(f"ember.load: map_location must be None, a device or device string, a "
                        f"dict of device strings, or a callable; got "
                        f"{type(map_location).__qualname__}")

    def move(t, target, saved, name):
        try:
            dev = as_device(target)
            return t if dev.type == "cpu" and dev.index in (None, 0) else t.to(dev)
        except Exception as e:
            raise RuntimeError(f"ember.load: {label}: tensor {name} was saved on '{saved}' and "
                               f"cannot be restored on '{target}': {e}. Pass map_location (e.g. "
                               f"map_location='cpu') to load it elsewhere.") from None

    def place(t, saved, name):
        if callable(map_location) and not isinstance(map_location, (dict, str, _device_cls)):
            out = map_location(t, saved)
            if out is None:
                return move(t, saved, saved, name)
            if not isinstance(out, Tensor):
                raise TypeError(f"ember.load: map_location callable returned "
                                f"{type(out).__qualname__} for tensor {name}; expected a "
                                f"Tensor or None")
            return out
        if fixed is not None:
            return move(t, fixed, saved, name)
        if table is not None:
            target = table.get(saved, table.get(saved.split(":")[0], saved))
            return move(t, target, saved, name)
        return move(t, saved, saved, name)

    return place


def _read_all(f):
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            return fh.read(), repr(path)
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"ember.load: the file object must be opened in binary mode (read() "
                            f"returned {type(data).__qualname__})")
        name = getattr(f, "name", None)
        return bytes(data), (repr(name) if isinstance(name, (str, bytes)) else "the file object")
    raise TypeError(f"ember.load: f must be a path (str or os.PathLike) or a binary file object "
                    f"with read(), got {type(f).__qualname__}")


def _header(data, label):
    """The safetensors JSON header, checked enough to say clearly what is wrong."""
    def bad(what):
        return ValueError(f"ember.load: {label} is not an ember file ({what})")
    if len(data) < 8:
        raise bad(f"only {len(data)} bytes; a safetensors file starts with an 8-byte header "
                  f"size")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise bad(f"the header claims {n} bytes but the file has {len(data) - 8} after the size "
                  f"field: truncated, or not a safetensors file")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad("the safetensors header is not valid JSON") from None
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise bad("no ember metadata in the safetensors header; was it written by ember.save?")
    try:
        version = int(meta.get("format_version", ""))
    except ValueError:
        raise bad(f"invalid format_version {meta.get('format_version')!r}") from None
    if version > FORMAT_VERSION:
        raise ValueError(f"ember.load: {label} uses ember file format version {version}; this "
                         f"ember reads versions up to {FORMAT_VERSION} (upgrade ember)")
    return meta


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load an object written by ``ember.save`` from a path or a binary file object.

    ``map_location``: None (each tensor back on the device it was saved from), a device or
    device string (everything there), a dict ``{saved device: target device}`` (keys may also be
    a device type such as ``"opencl"``), or a callable ``fn(cpu_tensor, saved_device_str)``
    returning the tensor to use (None: the default placement)."""
    if pickle_module is not None or pickle_load_args:
        raise ValueError("ember.load: ember files never use pickle; pickle_module and pickle "
                         "load arguments are not accepted")
    if mmap:
        raise ValueError("ember.load: mmap=True is not supported; ember reads the whole file")
    data, label = _read_all(f)
    meta = _header(data, label)
    try:
        entries = {name: e for name, e in safetensors.deserialize(data)}
    except Exception as e:  # the Rust parser's own errors: bad offsets, sizes, dtypes
        raise ValueError(f"ember.load: {label} is corrupted: the safetensors data does not "
                         f"parse ({e})") from None
    try:
        infos = json.loads(meta.get("tensors", ""))
        tree = json.loads(meta.get("tree", ""))
    except (ValueError, TypeError, RecursionError):
        raise ValueError(f"ember.load: {label} is corrupted: its ember metadata is not valid "
                         f"JSON") from None
    if not isinstance(infos, dict):
        raise ValueError(f"ember.load: {label} is corrupted: the tensor table is not a mapping")
    dec = _Decoder(label, infos, entries, _placer(map_location, label))
    return dec.decode(tree)
