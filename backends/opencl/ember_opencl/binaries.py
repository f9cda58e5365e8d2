"""Program binaries kept on disk, so a later process skips the OpenCL compiler.

A program is built from its binary when ember's private, hash-verified cache
(``ember.runtime.DiskCache("opencl")``) has one for the same source, options, device, driver
and pyopencl; otherwise from source, and its binary is stored. pyopencl's own cache is never
used: it unpickles an info file from a directory ember does not check. A binary the driver
refuses (another driver version wrote it under the same name, or it is damaged in a way its
hash could not show) is rebuilt from source and replaced.

PoCL keeps its own cache of compiled work-group functions (shared objects it loads); unless
``POCL_CACHE_DIR`` is set, ``use_private_driver_cache`` points it into ember's private cache
directory before the first platform query (see docs/security.md).
"""
from __future__ import annotations

import hashlib
import os

from ember.runtime import CacheDirectoryError, DiskCache

_BINARIES = DiskCache("opencl")
_POCL = DiskCache("pocl")


def use_private_driver_cache():
    """Point PoCL's kernel cache at ember's private ``pocl`` directory, unless the user chose
    one; a refused cache root is reported when the first program is built."""
    if "POCL_CACHE_DIR" in os.environ:
        return
    try:
        os.environ["POCL_CACHE_DIR"] = _POCL.directory
    except (CacheDirectoryError, OSError):
        pass


def identity(device):
    import pyopencl as cl
    return "\0".join([device.platform.name, device.platform.version, device.name,
                      device.driver_version, device.version, str(cl.VERSION)])


def cache_key(device, src, options):
    """The cache entry of program ``src`` built with ``options`` for ``device``."""
    h = hashlib.sha256()
    for part in (identity(device), " ".join(options), src):
        h.update(part.encode())
        h.update(b"\0")
    return f"program_{h.hexdigest()[:32]}.bin"


def build(context, device, src, options):
    """``src`` built for ``device`` (a ``pyopencl.Program``), through the binary cache. Build
    errors of the source propagate as pyopencl raises them."""
    import pyopencl as cl
    options = list(options)
    key = cache_key(device, src, options)
    binary = _BINARIES.read(key)
    if binary is not None:
        try:
            return cl.Program(context, [device], [binary]).build(options=options,
                                                                 cache_dir=False)
        except (cl.Error, RuntimeError, ValueError):
            pass  # a binary this driver won't take: build from source and replace it
    prg = cl.Program(context, src).build(options=options, cache_dir=False)
    try:
        (binary,) = prg.get_info(cl.program_info.BINARIES)
    except (cl.Error, ValueError):
        return prg  # a driver that does not hand out binaries: nothing to keep
    if binary:
        _BINARIES.write(key, binary)
    return prg
