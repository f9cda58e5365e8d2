"""``ember.save`` / ``ember.load``: checkpoints that never run code on load by default.

Formats
-------
``ember.save`` writes ember's format (``_ember_format``): an ordinary safetensors file holding
each storage's bytes (views keep their strides and offsets, and tensors sharing a storage load
sharing one, as with ``torch.save``), plus metadata describing the object. Objects made of tensors, containers
(dict, OrderedDict, Counter, list, tuple), numbers, strings, dtypes, devices and Sizes — state
dicts, optimizer and scheduler states — are stored as a JSON tree, with no pickle at all.
Anything else ``torch.save`` accepts (whole modules, instances of user classes) is pickled with
every tensor replaced by a reference to its safetensors entry, so tensor data never goes through
pickle either way. Each storage's bytes (and the pickle) carry a CRC-32: a damaged file is an
error naming the tensor, not silently wrong values.

``ember.load`` reads ember files and checkpoints written by ``torch.save`` — the zip format, the
legacy pickle format (``_use_new_zipfile_serialization=False``) and the old tar format — without
torch installed (``_torch_format``, ``_torch_legacy``).

Safety
------
``weights_only=True`` (the default, as in PyTorch 2.6+) unpickles with ember's own interpreter
(``_unpickler``): it builds data and calls only allow-listed globals (containers, ember's and
torch's tensor, dtype, device and Size rebuilders). Any other global is refused with an
``UnpicklingError`` naming it and saying how to allow it: ``add_safe_globals([...])`` or
``with safe_globals([...]):``. ``weights_only=False`` is the explicit opt-in to full pickle (it
can run arbitrary code: use it only for files you trust).

Files
-----
Saves to a path are atomic and crash-safe (``_files``): a temporary file next to the target,
renamed over it once complete; temporary files of killed writers are removed by the next save
into that directory; files get the umask's mode like any other file.
"""
from __future__ import annotations

import os
import pickle
import zipfile

from ._ember_format import FORMAT_VERSION, ember_allowed, read_header
from ._ember_format import Reader as _EmberReader
from ._ember_format import is_ember_file as _is_ember_file
from ._ember_format import prepare as _prepare
from ._files import Source as _Source
from ._files import remove_stale_temp_files, write_atomically
from ._placement import DeviceMapError, placer
from ._torch_format import TorchReader as _TorchReader, _ZIP_ERRORS
from ._torch_format import load_zip as _load_zip
from ._torch_legacy import load_legacy as _load_legacy
from ._torch_legacy import load_tar as _load_tar
from ._unpickler import (CorruptCheckpoint, add_safe_globals, clear_safe_globals, get_safe_globals,
                         globals_in_pickle, safe_globals)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL",
           "FORMAT_VERSION", "DeviceMapError", "remove_stale_temp_files"]

DEFAULT_PROTOCOL = 2  # PyTorch's default pickle protocol for torch.save


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Save ``obj`` to ``f`` (a path, written atomically, or a writable binary file object).

    Tensors (on any device) are stored in safetensors entries; state-dict-like objects as a
    JSON tree, anything else picklable (modules, user classes) as a pickle that refers to those
    entries (``pickle_module``/``pickle_protocol`` choose how). The torch-specific flags are
    accepted for compatibility and do not change ember's format."""
    if pickle_module is None:
        pickle_module = pickle
    if pickle_protocol is None:
        pickle_protocol = DEFAULT_PROTOCOL
    if not (isinstance(f, (str, os.PathLike)) or hasattr(f, "write")):
        raise TypeError(f"ember.save: f must be a path (str or os.PathLike) or a binary file "
                        f"object with write(), got {type(f).__qualname__}")
    write = _prepare(obj, pickle_module, pickle_protocol)  # may fail: nothing written yet
    if isinstance(f, (str, os.PathLike)):
        write_atomically(f, write)
    else:
        write(f)


def _kind(src):
    head = bytes(src.read_at(0, 512))
    if head[:4] == b"PK\x03\x04":
        return "zip"
    if _is_ember_file(head):
        return "ember"
    if head[257:262] == b"ustar":
        return "tar"
    if head[:1] == b"\x80":
        return "legacy"
    return None


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load a checkpoint written by ``ember.save`` or ``torch.save`` (any of torch's formats,
    without torch installed) from a path or a binary file object.

    ``map_location``: None (each tensor back on the device it was saved from), a device or
    device string (everything there), a dict ``{saved location: target}`` (keys may also be a
    device type such as ``"cuda"``), or a callable ``fn(cpu_tensor, saved_location)`` returning
    the tensor to use (None: the default placement).

    ``weights_only`` (default True): unpickle with the allow-listed unpickler, which never runs
    code from the file; ``False`` is the opt-in to full pickle for trusted files (then
    ``pickle_module`` and ``encoding`` are honoured)."""
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"ember.load: unexpected pickle load arguments "
                        f"{sorted(pickle_load_args)} (only encoding is accepted)")
    if mmap:
        raise ValueError("ember.load: mmap=True is not supported; ember reads each tensor "
                         "into its own memory")
    pickle_module = pickle_module or pickle
    src = _Source(f)
    try:
        place = placer(map_location, src.label)
        kind = _kind(src)
        if kind == "ember":
            return _EmberReader(src, place, weights_only, pickle_module, encoding).load()
        if kind is None:
            raise ValueError(f"ember.load: {src.label} is not an ember file or a torch "
                             f"checkpoint (unrecognised first bytes)")
        reader = _TorchReader(src, place, weights_only, pickle_module, encoding)
        return {"zip": _load_zip, "legacy": _load_legacy, "tar": _load_tar}[kind](reader)
    finally:
        src.close()


def get_unsafe_globals_in_checkpoint(f):
    """The ``module.name`` globals a checkpoint's pickle uses that ``weights_only=True`` would
    refuse (read without running anything): what to pass to ``add_safe_globals`` if you trust
    them."""
    src = _Source(f)
    try:
        kind = _kind(src)
        if kind == "ember":
            meta, _, entries, start = read_header(src)
            if meta.get("object") != "pickle" or "pickle" not in entries:
                return []
            b, e = entries["pickle"]["data_offsets"]
            names, _ = globals_in_pickle(src.read_at(start + b, e - b))
            allowed = ember_allowed().with_user_globals().names
        elif kind == "zip":

            src.stream.seek(src.start)
            try:
                zf = zipfile.ZipFile(src.stream)
                pkl = next((n for n in zf.namelist() if n.endswith("/data.pkl")), None)
                data = zf.read(pkl) if pkl is not None else None
            except _ZIP_ERRORS as e:
                raise CorruptCheckpoint(f"ember.get_unsafe_globals_in_checkpoint: {src.label} is "
                                        f"a corrupted file ({type(e).__name__}: {e})") from None
            if data is None:
                raise CorruptCheckpoint(f"ember.get_unsafe_globals_in_checkpoint: {src.label} "
                                        f"is a zip file without a data.pkl entry")
            names, _ = globals_in_pickle(data)
            allowed = _TorchReader(src, None, True, pickle, "utf-8").allowed().names
        elif kind == "legacy":
            data = src.read_at(0, src.size())
            names, pos = [], 0
            for _ in range(4):
                found, pos = globals_in_pickle(data, pos)
                names += found
            allowed = _TorchReader(src, None, True, pickle, "utf-8").allowed().names
        else:
            raise ValueError(f"ember.get_unsafe_globals_in_checkpoint: {src.label} is not an "
                             f"ember file or a zip/legacy torch checkpoint")
        return sorted({n for n in names if n not in allowed})
    finally:
        src.close()

