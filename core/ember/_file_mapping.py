"""``ember.from_file``: a CPU tensor over a file's bytes, mapped into memory as torch maps it
(``shared=True``: a shared mapping whose writes reach the file; otherwise a private,
copy-on-write mapping)."""
from __future__ import annotations

import os

import numpy as np

from . import _dtype
from ._device import as_device
from .ops.factories import from_numpy

__all__ = ["from_file"]


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False, requires_grad=False):
    """A 1-D tensor of ``size`` elements of ``dtype`` (the default dtype) read from the start
    of ``filename``. With ``shared=True`` the tensor and the file share memory, all changes are
    written to the file, and the file is created or extended as needed; otherwise changes to
    the tensor do not reach the file, which must hold ``size * itemsize`` bytes."""
    dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if layout is not None and str(layout) not in ("torch.strided", "ember.strided", "strided"):
        raise RuntimeError(f"from_file(): only the strided layout is supported, got {layout}")
    if device is not None and as_device(device).type != "cpu":
        raise RuntimeError(f"from_file(): maps a file into CPU memory; device={device} is not "
                           f"supported (move the tensor with .to() afterwards)")
    if pin_memory:
        raise RuntimeError("from_file(): pin_memory=True is not supported (ember has no pinned "
                           "host memory)")
    size = int(size)
    if size < 0:
        raise RuntimeError(f"from_file(): size must be non-negative, got {size}")
    path = os.fspath(filename)
    nbytes = size * dt.itemsize
    if shared:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{path}> in read-write mode: "
                               f"{e.strerror} ({e.errno})") from None
        try:
            if os.fstat(fd).st_size < nbytes:
                os.ftruncate(fd, nbytes)
        finally:
            os.close(fd)
        mode = "r+"
    else:
        try:
            have = os.stat(path).st_size
        except OSError as e:
            raise RuntimeError(f"unable to open file <{path}> in read-only mode: "
                               f"{e.strerror} ({e.errno})") from None
        if have < nbytes:
            raise RuntimeError(f"file <{path}> size <{have}> is smaller than the required "
                               f"mapping size <{nbytes}>")
        mode = "c"
    if size == 0:  # mmap cannot map zero bytes
        array = np.empty(0, dtype=dt.np)
    else:
        array = np.memmap(path, dtype=dt.np, mode=mode, shape=(size,))
    t = from_numpy(array)
    return t.requires_grad_() if requires_grad else t
