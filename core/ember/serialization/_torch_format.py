"""Reading checkpoints written by ``torch.save``, without torch.

Three layouts, all through ember's weights-only unpickler (or, with ``weights_only=False``, a
plain unpickler whose torch names are mapped the same way):

* the zip format (torch >= 1.6): ``<archive>/data.pkl`` is the pickled object, each storage is
  the entry ``<archive>/data/<key>``, ``<archive>/byteorder`` says the byte order;
* the legacy format (``_use_new_zipfile_serialization=False``, torch < 1.6): pickles of a magic
  number, a protocol version and the system info, then the object, then the list of storage
  keys, then each storage as an int64 element count and its bytes;
* the tar format (torch < 0.4): members ``storages``, ``tensors`` and ``pickle``.

Pickles refer to storages by persistent ids; tensors are rebuilt by
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`` & co,
which map to ember functions making strided views of the storage, so tensors that shared a
storage in torch share memory here too. Each storage is placed once by ``map_location``.
"""
from __future__ import annotations

import io
import warnings
import struct
import zipfile
import zlib
from pickle import UnpicklingError

import numpy as np

from .. import _dtype
from .._tensor import Size, Tensor
from ._unpickler import (Allowed, CorruptCheckpoint, SafeUnpickler, _Refused,
                         weights_only_message)
from .._device import device
from ..dispatch.grad_mode import no_grad
from ..nn.parameter import Parameter
from ..ops.factories import empty, from_numpy
from .._warn import user_stacklevel

LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
LEGACY_PROTOCOL = 1001

_STORAGES = {"FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
             "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
             "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
             "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
             "ComplexDoubleStorage": "complex128", "UntypedStorage": "uint8",
             "QInt8Storage": None, "QUInt8Storage": None, "QInt32Storage": None,
             "QUInt4x2Storage": None, "QUInt2x4Storage": None}
_EMBER_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                 "uint8", "bool", "complex64", "complex128")
_OTHER_DTYPES = ("uint16", "uint32", "uint64", "complex32", "float8_e4m3fn", "float8_e5m2",
                 "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
                 "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits8", "bits16",
                 "bits1x8", "bits2x4", "bits4x2", *(f"int{i}" for i in range(1, 8)),
                 *(f"uint{i}" for i in range(1, 8)))


class StorageType:
    """What ``torch.FloatStorage`` & co. stand for: the dtype of a storage's elements."""

    def __init__(self, name, dtype_name):
        self.name, self.dtype_name = name, dtype_name

    def __repr__(self):
        return f"torch.{self.name}"


class UnsupportedDtype:
    """A torch dtype ember does not have: fine as a value, an error once a tensor needs it."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


def _unsupported(what):
    def refuse(*args, **kwargs):
        raise UnpicklingError(f"the checkpoint holds {what}, which ember does not support")
    refuse.__name__ = refuse.__qualname__ = "unsupported"
    return refuse


def _torch_device(kind, index=None):
    spec = kind if index is None else f"{kind}:{index}"
    try:
        return device(spec)
    except Exception as e:
        warnings.warn(f"ember.load: the checkpoint holds torch.device({spec!r}), a device type "
                      f"ember does not know ({e}); it is loaded as the string {spec!r}",
                      stacklevel=user_stacklevel())
        return spec


class LoadedStorage:
    """A torch storage: its bytes (read on first use) and the placed tensor of its elements."""

    def __init__(self, reader, key, dtype_name, numel, location, read, parent=None):
        self.reader, self.key, self.dtype_name = reader, key, dtype_name
        self.numel, self.location = numel, location
        self._read = read
        self.parent = parent  # (root storage, element offset) for the legacy formats' views
        self._placed = {}  # dtype name -> placed 1-D tensor over the storage's bytes

    def elements(self, dtype_name):
        """The storage's bytes as a placed 1-D tensor of ``dtype_name``."""
        if dtype_name in self._placed:
            return self._placed[dtype_name]
        if self.parent is not None:
            root, offset = self.parent
            base = root.elements(dtype_name)
            if offset + self.numel > base.numel():
                raise UnpicklingError(f"ember.load: {self.reader.label}: storage view "
                                      f"{self.key!r} reaches past the end of its root storage")
            self._placed[dtype_name] = base[offset:offset + self.numel]
            return self._placed[dtype_name]
        if dtype_name not in _EMBER_DTYPES:
            raise UnpicklingError(f"ember.load: {self.reader.label}: storage {self.key!r} holds "
                                  f"torch.{dtype_name} elements; ember has no {dtype_name} "
                                  f"dtype")
        dt = _dtype.as_dtype(dtype_name)
        data = self._read()
        if len(data) % dt.itemsize:
            raise UnpicklingError(f"ember.load: {self.reader.label}: storage {self.key!r} has "
                                  f"{len(data)} bytes, not a whole number of {dtype_name}")
        arr = np.frombuffer(data, dtype=dt.np)
        if self.reader.big_endian:
            arr = arr.byteswap()
        what = f"storage {self.key!r} ({dtype_name}, {arr.size} elements)"
        t = self.reader.place(from_numpy(arr), self.location, what)
        self._placed[dtype_name] = t
        return t

    def view(self, offset, size, stride, dtype_name=None):
        base = self.elements(dtype_name or self.dtype_name)
        size, stride = tuple(size), tuple(stride)
        if len(size) != len(stride) or not all(type(n) is int and n >= 0 for n in size) or \
                not all(type(s) is int and s >= 0 for s in stride) or type(offset) is not int \
                or offset < 0:
            raise UnpicklingError(f"ember.load: {self.reader.label}: invalid tensor layout "
                                  f"(offset {offset!r}, size {size!r}, stride {stride!r})")
        extent = offset + (sum((n - 1) * s for n, s in zip(size, stride)) + 1
                           if all(size) else 0)
        if extent > base.numel():
            raise UnpicklingError(f"ember.load: {self.reader.label}: a tensor of size "
                                  f"{list(size)} and stride {list(stride)} at offset {offset} "
                                  f"reaches past the end of storage {self.key!r} "
                                  f"({base.numel()} elements): the file is corrupted")
        with no_grad():
            return base.as_strided(size, stride, offset)


class TorchReader:
    """Shared by the three layouts: the torch name table and the rebuild functions."""

    def __init__(self, src, place, weights_only, pickle_module, encoding):
        self.src, self.label, self.place = src, src.label, place
        self.weights_only, self.pickle_module, self.encoding = \
            weights_only, pickle_module, encoding
        self.big_endian = False
        self.storages = {}

    # -- rebuild functions (what torch._utils._rebuild_* become) ----------------------------
    def _tensor(self, storage, offset, size, stride, requires_grad=False, dtype_name=None):
        if not isinstance(storage, LoadedStorage):
            raise UnpicklingError(f"ember.load: {self.label}: a tensor is rebuilt from "
                                  f"{type(storage).__name__}, not from a storage")
        t = storage.view(offset, size, stride, dtype_name)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def rebuild_tensor(self, storage, storage_offset, size, stride):
        return self._tensor(storage, storage_offset, size, stride)

    def rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad,
                          backward_hooks, metadata=None):
        return self._tensor(storage, storage_offset, size, stride, requires_grad)

    def rebuild_tensor_v3(self, storage, storage_offset, size, stride, requires_grad,
                          backward_hooks, dtype, metadata=None):
        if isinstance(dtype, UnsupportedDtype):
            raise UnpicklingError(f"ember.load: {self.label}: the checkpoint holds a tensor of "
                                  f"dtype torch.{dtype.name}; ember has no such dtype")
        if not isinstance(dtype, _dtype.dtype):
            raise UnpicklingError(f"ember.load: {self.label}: invalid dtype {dtype!r}")
        return self._tensor(storage, storage_offset, size, stride, requires_grad, dtype.name)

    @staticmethod
    def rebuild_parameter(data, requires_grad, backward_hooks):
        if not isinstance(data, Tensor):
            raise UnpicklingError(f"a Parameter is rebuilt from {type(data).__name__}")
        return Parameter(data, requires_grad)

    @classmethod
    def rebuild_parameter_with_state(cls, data, requires_grad, backward_hooks, state):
        return _set_state(cls.rebuild_parameter(data, requires_grad, backward_hooks), state)

    def rebuild_from_type_v2(self, func, new_type, args, state):
        if new_type not in (Tensor, Parameter):
            raise UnpicklingError(f"ember.load: {self.label}: tensor subclass {new_type!r} is "
                                  f"not supported")
        ret = func(*args)
        if not isinstance(ret, Tensor):
            raise UnpicklingError(f"ember.load: {self.label}: {func!r} did not rebuild a "
                                  f"tensor")
        if new_type is Parameter and type(ret) is not Parameter:
            ret = Parameter(ret, ret.requires_grad)
        return _set_state(ret, state)

    @staticmethod
    def rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
        try:
            t = empty(0, dtype=dtype, device="meta").as_strided(tuple(size), tuple(stride))
        except Exception as e:
            raise UnpicklingError(f"the checkpoint holds a meta tensor, and ember's meta device "
                                  f"is not available ({e})") from None
        return t.requires_grad_(bool(requires_grad))

    def names(self):
        table = {"torch.Size": Size, "torch.device": _torch_device, "torch.Tensor": Tensor,
                 "torch.nn.parameter.Parameter": Parameter,
                 "torch._utils._rebuild_tensor": self.rebuild_tensor,
                 "torch._utils._rebuild_tensor_v2": self.rebuild_tensor_v2,
                 "torch._utils._rebuild_tensor_v3": self.rebuild_tensor_v3,
                 "torch._utils._rebuild_parameter": self.rebuild_parameter,
                 "torch._utils._rebuild_parameter_with_state":
                     self.rebuild_parameter_with_state,
                 "torch._tensor._rebuild_from_type_v2": self.rebuild_from_type_v2,
                 "torch._utils._rebuild_meta_tensor_no_storage":
                     self.rebuild_meta_tensor_no_storage}
        for what, names in (("a sparse tensor", ("_rebuild_sparse_tensor",
                                                  "_rebuild_sparse_csr_tensor")),
                            ("a quantized tensor", ("_rebuild_qtensor",)),
                            ("a nested tensor", ("_rebuild_nested_tensor",)),
                            ("a tensor subclass (wrapper)", ("_rebuild_wrapper_subclass",)),
                            ("a tensor of an XLA/MTIA-like device",
                             ("_rebuild_device_tensor_from_numpy", "_rebuild_xla_tensor",
                              "_rebuild_mtia_tensor",
                              "_rebuild_device_tensor_from_cpu_tensor"))):
            for n in names:
                table[f"torch._utils.{n}"] = _unsupported(what)
        table["torch.serialization._get_layout"] = _unsupported("a sparse tensor layout")
        for n in _EMBER_DTYPES:
            table[f"torch.{n}"] = _dtype.as_dtype(n)
        for n in _OTHER_DTYPES:
            table[f"torch.{n}"] = UnsupportedDtype(n)
        for n, d in _STORAGES.items():
            st = StorageType(n, d)
            for module in ("torch", "torch.storage", "torch.cuda"):
                table[f"{module}.{n}"] = st
        for n in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte",
                  "Bool", "ComplexFloat", "ComplexDouble"):
            for module in ("torch", "torch.cuda"):
                table[f"{module}.{n}Tensor"] = Tensor  # legacy tensor types: just a marker
        return table

    def allowed(self):
        names = self.names()
        funcs = [v for v in names.values() if callable(v) and not isinstance(v, type)]
        return Allowed(names, callables=(*funcs, Size), newobj=(Parameter, Size),
                       hint=_hint).with_user_globals()

    # -- storages ------------------------------------------------------------------------------
    def storage_type(self, st):
        if not isinstance(st, StorageType):
            raise UnpicklingError(f"ember.load: {self.label}: {st!r} is not a storage type")
        if st.dtype_name is None:
            raise UnpicklingError(f"ember.load: {self.label}: the checkpoint holds a "
                                  f"{st.name} (a quantized storage), which ember does not "
                                  f"support")
        return st.dtype_name

    # -- running a pickle ----------------------------------------------------------------------
    def unpickle(self, data, persistent_load):
        if not self.weights_only:
            return _plain_unpickle(self, data, persistent_load)
        try:
            return SafeUnpickler(data, self.allowed(), persistent_load,
                                 encoding=self.encoding).load()
        except _Refused as e:
            raise UnpicklingError(weights_only_message(self.label, str(e))) from None
        except UnpicklingError as e:
            if self.label in str(e):  # ember's own checks name the file already
                raise
            raise UnpicklingError(f"ember.load: {self.label} is corrupted: its pickle does "
                                    f"not parse ({e})") from None


def _set_state(t, state):
    """``_rebuild_parameter_with_state``'s attributes: only new ones (a file may not replace
    an attribute the tensor already has)."""
    if not state:
        return t
    if isinstance(state, tuple) and len(state) == 2:
        state = {**(state[0] or {}), **(state[1] or {})}
    if not isinstance(state, dict):
        raise UnpicklingError(f"invalid tensor state {type(state).__name__}")
    for k, v in state.items():
        if not isinstance(k, str) or k.startswith("_") or hasattr(t, k):
            raise UnpicklingError(f"the checkpoint sets the tensor attribute {k!r}, which "
                                  f"ember does not allow (it exists or is private)")
        setattr(t, k, v)
    return t


def _hint(full_path):
    if full_path.startswith("torch.nn.") or full_path.startswith("torch."):
        return ("ember reads tensors and containers from torch checkpoints but cannot rebuild "
                "torch classes: if a whole torch module was saved, save its state_dict() with "
                "torch instead.")
    if full_path.startswith("__main__."):
        return "(a class of the script that saved the checkpoint)"
    return None


def _plain_unpickle(reader, data, persistent_load):
    table = reader.names()
    module = reader.pickle_module

    class Unpickler(module.Unpickler):
        def find_class(self, mod, name):
            full = f"{mod}.{name}"
            if full in table:
                return table[full]
            try:
                return super().find_class(mod, name)
            except ModuleNotFoundError as e:
                raise ModuleNotFoundError(f"ember.load: {reader.label} needs {full}, whose "
                                          f"module is not installed ({e})") from None

    u = Unpickler(io.BytesIO(bytes(data)), encoding=reader.encoding)
    u.persistent_load = persistent_load
    return u.load()


def _decode(x):
    return x.decode("ascii") if isinstance(x, bytes) else x


# -- the zip format ---------------------------------------------------------------------------
#: what zipfile raises for a damaged archive (besides its own BadZipFile): truncated or garbled
#: deflate/bz2/lzma streams, and header bits it reads as features it lacks
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
               NotImplementedError, RuntimeError, zlib.error, UnicodeDecodeError,
               struct.error, OverflowError)


def load_zip(reader):
    src = reader.src
    total = src.size()
    src.stream.seek(src.start)
    try:
        zf = zipfile.ZipFile(src.stream)
        infos = {i.filename: i for i in zf.infolist()}
    except _ZIP_ERRORS as e:
        raise CorruptCheckpoint(f"ember.load: {reader.label} is a corrupted file: not a readable "
                                f"zip checkpoint ({type(e).__name__}: {e})") from None
    pkls = [n for n in infos if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pkls:
        if any(n.endswith("/constants.pkl") or "/code/" in n for n in infos):
            raise CorruptCheckpoint(f"ember.load: {reader.label} is a TorchScript archive "
                             f"(torch.jit.save); ember cannot run TorchScript. Save the model's "
                             f"state_dict() with torch.save and load that.")
        raise CorruptCheckpoint(f"ember.load: {reader.label} is a zip file without a data.pkl entry: "
                         f"not a torch.save checkpoint")
    prefix = pkls[0][:-len("data.pkl")]
    if any(n.startswith(prefix + "code/") for n in infos) or prefix + "constants.pkl" in infos:
        raise CorruptCheckpoint(f"ember.load: {reader.label} is a TorchScript archive "
                         f"(torch.jit.save); ember cannot run TorchScript. Save the model's "
                         f"state_dict() with torch.save and load that.")

    def entry(name, what):
        info = infos.get(name)
        if info is None:
            raise CorruptCheckpoint(f"ember.load: {reader.label} is corrupted: {what} ({name}) is "
                             f"missing")
        if info.compress_type != zipfile.ZIP_STORED and \
                info.file_size > 1100 * max(info.compress_size, 1):
            raise CorruptCheckpoint(f"ember.load: {reader.label}: {name} claims to expand "
                             f"{info.compress_size} bytes to {info.file_size}: refused")
        if info.compress_size > total or \
                (info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size):
            raise CorruptCheckpoint(f"ember.load: {reader.label} is a corrupted file: {what} "
                                    f"({name}) claims {info.compress_size} stored bytes for "
                                    f"{info.file_size} of data in a {total}-byte file")
        buf = bytearray(info.file_size)
        try:
            with zf.open(info) as fh:
                got = fh.readinto(buf)
                if got != info.file_size or fh.read(1):
                    raise zipfile.BadZipFile("the entry size does not match its header")
        except _ZIP_ERRORS as e:
            # zipfile reports damaged headers as NotImplementedError (a flag bit says
            # "encrypted", an unknown compression method) or RuntimeError (a password is
            # needed): torch writes neither, so the file is damaged
            raise CorruptCheckpoint(f"ember.load: {reader.label} is a corrupted file: {what} "
                                    f"({name}) cannot be read ({type(e).__name__}: {e})") \
                from None
        return buf

    order = infos.get(prefix + "byteorder")
    if order is not None:
        value = bytes(entry(prefix + "byteorder", "the byte order")).decode("ascii", "replace")
        if value not in ("little", "big"):
            raise CorruptCheckpoint(f"ember.load: {reader.label}: unknown byte order {value!r}")
        reader.big_endian = value == "big"

    def persistent_load(pid):
        if type(pid) is not tuple or len(pid) != 5 or _decode(pid[0]) != "storage":
            raise UnpicklingError(f"ember.load: {reader.label}: unexpected persistent id "
                                  f"{pid!r}; torch zip checkpoints refer only to storages")
        _, st, key, location, numel = pid
        key, location = _decode(key), _decode(location)
        if type(key) is not str or type(location) is not str or type(numel) is not int or \
                numel < 0:
            raise UnpicklingError(f"ember.load: {reader.label}: invalid storage id {pid!r}")
        if key in reader.storages:
            return reader.storages[key]
        dtype_name = reader.storage_type(st)
        nbytes = numel * _itemsize(dtype_name)
        name = f"{prefix}data/{key}"

        def read(name=name, nbytes=nbytes, key=key):
            data = entry(name, f"storage {key!r}")
            if len(data) != nbytes:
                raise CorruptCheckpoint(f"ember.load: {reader.label} is corrupted: storage {key!r} has "
                                 f"{len(data)} bytes, its tensors need {nbytes}")
            return data

        s = reader.storages[key] = LoadedStorage(reader, key, dtype_name, numel, location, read)
        return s

    return reader.unpickle(entry(prefix + "data.pkl", "the pickled object"), persistent_load)


def _itemsize(dtype_name):
    return _dtype.as_dtype(dtype_name).itemsize if dtype_name in _EMBER_DTYPES else 1
