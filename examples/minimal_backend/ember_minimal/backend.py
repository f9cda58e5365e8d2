"""``MinimalBackend``: numpy byte buffers as device memory, the five required methods."""
from __future__ import annotations

import math

import numpy as np

from ember.runtime import (Backend, Storage, from_numpy_dtype, get_native, make_tensor,
                           registry, set_native, to_numpy_dtype)

from . import kernels


class MinimalBackend(Backend):
    name = "minimal"       # device="minimal:0"
    cpu_fallback = True    # ops without a kernel here run on the CPU (warned once per op)
    # Stream/Event: the synchronous defaults (HostStream, HostEvent); allocator(): None (no
    # memory statistics); create_generator: the host Philox generator -- all inherited.

    def __init__(self):
        super().__init__()
        kernels.register(self)

    def device_name(self, index: int) -> str:
        return "minimal numpy device"

    # -- tensors ----------------------------------------------------------------------------------
    def new_tensor(self, shape, dtype, device):
        """A fresh C-contiguous tensor: a Storage over a new byte buffer, viewed by a Tensor."""
        shape = tuple(shape)
        nbytes = math.prod(shape) * dtype.itemsize
        return make_tensor(Storage(np.empty(nbytes, np.uint8), nbytes, device), shape, dtype)

    def native(self, t):
        """The tensor as a numpy array over its storage's bytes, cached on the tensor."""
        arr = get_native(t)
        if arr is None:
            isz = t.dtype.itemsize
            shape = tuple(t.shape)
            # an empty slice may start past the end of its storage (x[5:] of a 4-element x)
            offset = t.storage_offset() * isz if 0 not in shape else 0
            arr = np.ndarray(shape, to_numpy_dtype(t.dtype), buffer=t.untyped_storage().data,
                             offset=offset, strides=[s * isz for s in t.stride()])
            set_native(t, arr)
        return arr

    # -- the required methods -------------------------------------------------------------------
    def empty(self, shape, dtype, device):
        return self.new_tensor(shape, dtype, device)

    def from_numpy(self, array, device, non_blocking=False):
        out = self.new_tensor(array.shape, from_numpy_dtype(array.dtype), device)
        self.native(out)[...] = array  # a copy: the caller may reuse `array`
        return out

    def to_numpy(self, tensor):
        return self.native(tensor).copy()  # a copy: the host never aliases device memory

    def copy_(self, dst, src, non_blocking=False):
        if src.device is not dst.device:  # from another device: through the host
            src_values = registry.get(src.device.type).to_numpy(src)
        else:
            src_values = self.native(src)
        d = self.native(dst)
        if src_values.dtype.kind == "c" and d.dtype.kind != "c":
            # PyTorch: complex -> bool is "!= 0", complex -> real keeps the real part
            src_values = (src_values != 0) if d.dtype.kind == "b" else src_values.real
        with np.errstate(all="ignore"):  # nan/inf to integers cast quietly, as in PyTorch
            np.copyto(d, np.broadcast_to(src_values, d.shape), casting="unsafe")
        return dst

    def storage_nbytes(self, data) -> int:
        return data.nbytes
