"""cupy's rules that numpy does not follow, for the simulated GPU's arrays (``arrays.py``):
which numpy functions only read metadata, which return views, which size their output from
values (cupy reads a count back), which write their first operand; cupy's wrapping of integer
indices; floating-point atomics refused in deterministic mode; the simulated DMA's access to host
memory by address."""
from __future__ import annotations

import ctypes

import numpy as np


def _is_int_array(k):
    return isinstance(k, np.ndarray) and k.dtype.kind in "iu"


# numpy functions that only look at shapes and dtypes, or at where memory is
_METADATA = frozenset({"shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj",
                       "may_share_memory", "shares_memory", "can_cast", "min_scalar_type",
                       "broadcast_shapes", "common_type"})
# numpy functions that return views of their operands where they can
_VIEW_FUNCTIONS = frozenset({
    "reshape", "transpose", "moveaxis", "swapaxes", "expand_dims", "squeeze", "broadcast_to",
    "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d", "real", "imag", "diagonal",
    "ravel", "split", "array_split", "hsplit", "vsplit", "dsplit", "flip", "fliplr", "flipud",
    "rot90", "rollaxis", "asarray", "ascontiguousarray", "asfortranarray", "matrix_transpose",
    "permute_dims", "unstack", "as_strided", "asanyarray"})
# cupy functions whose output size depends on the values: cupy reads a count back (a host
# synchronization) to allocate the result
_SIZE_FROM_VALUES = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "compress",
                               "bincount",
                               "extract", "unique_values", "unique_counts", "unique_inverse",
                               "unique_all", "intersect1d", "setdiff1d", "union1d",
                               "setxor1d", "trim_zeros"})
# numpy functions writing into their first operand
_WRITES_FIRST = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal",
                           "put_along_axis"})
# functions taking integer indices cupy wraps
_INDEXED = frozenset({"take", "take_along_axis", "put", "put_along_axis"})


def _no_float_atomics(what, dtype):
    """cupy adds floating-point values into one place with atomics, in an order that changes
    from run to run: under ``use_deterministic_algorithms`` no kernel may reach them."""
    from ember.runtime import are_deterministic_algorithms_enabled
    if dtype.kind in "fc" and are_deterministic_algorithms_enabled():
        raise RuntimeError(f"simulated GPU: cupy.{what} on {dtype} adds with atomics (the "
                           f"rounding changes from run to run) while "
                           f"use_deterministic_algorithms is on")


def _wrap_index_argument(name, args, kwargs):
    a, idx = args[0], np.asarray(args[1])
    if not _is_int_array(idx):
        return
    if name in ("take", "take_along_axis"):
        axis = kwargs.get("axis", args[2] if len(args) > 2 else None)
    elif name == "put_along_axis":
        axis = kwargs.get("axis", args[3] if len(args) > 3 else None)
    else:
        axis = None
    n = a.size if axis is None else a.shape[axis]
    if n:
        args[1] = np.mod(idx, n)


def _basic(key) -> bool:
    """True for keys of ints, slices, None and Ellipsis only (views)."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer)):
            if isinstance(k, (bool, np.bool_)):
                return False
            continue
        return False
    return True


def _all_ints(key, ndim) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return len(items) == ndim and all(isinstance(k, (int, np.integer)) and
                                      not isinstance(k, (bool, np.bool_)) for k in items)


def wrap_key(shape, key):
    """Integer-array indices taken modulo their dimension's size, as cupy does."""
    items = list(key) if isinstance(key, tuple) else [key]
    items = [np.asarray(k) if isinstance(k, list) else k for k in items]
    used = 0
    for k in items:
        if k is None or k is Ellipsis:
            continue
        used += k.ndim if isinstance(k, np.ndarray) and k.dtype == bool else 1
    out, dim = [], 0
    for k in items:
        if k is None:
            out.append(k)
            continue
        if k is Ellipsis:
            dim += len(shape) - used
            out.append(k)
            continue
        if isinstance(k, np.ndarray) and k.dtype == bool:
            dim += k.ndim
            out.append(k)
            continue
        if _is_int_array(k) and dim < len(shape) and shape[dim] > 0:
            k = np.mod(k, shape[dim])
        out.append(k)
        dim += 1
    return tuple(out) if isinstance(key, tuple) or len(out) != 1 else out[0]


def host_bytes(host):
    """A reader of the bytes of the contiguous host array ``host`` that keeps no reference to
    it (the simulated DMA)."""
    address, n = host.ctypes.data, host.nbytes

    def read():
        return np.frombuffer((ctypes.c_ubyte * n).from_address(address), np.uint8).copy()
    return read


def host_writer(host):
    """A writer of bytes into the contiguous host array ``host`` without a reference to it."""
    address, n = host.ctypes.data, host.nbytes

    def write(values):
        data = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
        ctypes.memmove(address, data.ctypes.data, min(n, data.nbytes))
    return write
