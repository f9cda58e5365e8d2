"""``default_collate``/``default_convert`` and the extensible ``collate`` (torch's rules).

Samples are merged by type: tensors are stacked along a new first dim, numpy arrays and numpy
scalars become tensors, Python floats float64 and ints int64 tensors, strings stay lists, and
dicts, namedtuples and sequences are collated field by field. CPU tensors that need no autograd
are stacked with one ``numpy.stack`` (the same values, dtype and layout as ``ember.stack``).
"""
from __future__ import annotations

import collections
import copy
import re

import numpy as np
import ember

from ...._tensor import Tensor

__all__ = ["collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_str_fn", "collate_tensor_fn", "default_collate",
           "default_collate_fn_map", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _tensor_type():
    return Tensor


def default_convert(data):
    """Turn numpy arrays and numpy scalars (also inside dicts, namedtuples and sequences) into
    tensors; used when the DataLoader does not batch (``batch_size=None``)."""
    elem_type = type(data)
    if isinstance(data, _tensor_type()):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and \
                np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate a list of samples; ``collate_fn_map`` maps element types (or tuples of types) to
    functions ``fn(batch, *, collate_fn_map)`` and is consulted first, exact type then
    ``isinstance`` in insertion order."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _check_equal_shapes(shapes):
    first = shapes[0]
    for i, shape in enumerate(shapes):
        if shape != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(first)} at entry 0 and {list(shape)} at entry {i}")


def _gather_from_one_storage(batch, native):
    """Samples that are equally shaped views of one storage (``data[i]`` of a dataset tensor)
    stacked with a single numpy gather over that storage; None when they are not."""
    elem = batch[0]
    st, shape, stride = elem._storage, elem._shape, elem._stride
    if 0 in shape:
        return None
    for t in batch:
        if t._storage is not st or t._shape != shape or t._stride != stride:
            return None
    native(elem)  # makes the storage's flat byte view (the CPU backend keeps it in .cache)
    flat = getattr(st, "cache", None)
    if type(flat) is not np.ndarray or flat.dtype != np.uint8 or flat.ndim != 1:
        return None
    isz = elem.dtype.itemsize
    offsets = np.fromiter((t._offset for t in batch), dtype=np.intp, count=len(batch))
    starts = np.ndarray((int(offsets.max()) + 1,) + tuple(shape), elem.dtype.np, buffer=flat,
                        strides=(isz,) + tuple(s * isz for s in stride))
    return starts[offsets]


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Stack tensors along a new first dim (torch's ``stack`` error for unequal shapes)."""
    Tensor = _tensor_type()
    elem = batch[0]
    if all(type(t) is Tensor or isinstance(t, Tensor) for t in batch):
        _check_equal_shapes([t._shape for t in batch])
        dtype, device = elem.dtype, elem.device
        if device.type == "cpu" and all(t.dtype is dtype and t.device is device
                                        and not t.requires_grad for t in batch):
            native = elem._backend().native  # the CPU tensors' numpy views (cached per tensor)
            stacked = _gather_from_one_storage(batch, native)
            if stacked is None:
                stacked = np.stack([native(t) for t in batch])
            return ember.from_numpy(stacked)
    return ember.stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    if all(type(b) is np.ndarray and b.dtype == elem.dtype for b in batch):
        _check_equal_shapes([b.shape for b in batch])
        return ember.from_numpy(np.stack(batch))
    return collate([ember.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return ember.as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {}


def _fill_default_map():
    default_collate_fn_map[_tensor_type()] = collate_tensor_fn
    default_collate_fn_map[np.ndarray] = collate_numpy_array_fn
    default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
    default_collate_fn_map[float] = collate_float_fn
    default_collate_fn_map[int] = collate_int_fn
    default_collate_fn_map[str] = collate_str_fn
    default_collate_fn_map[bytes] = collate_str_fn


_fill_default_map()


def default_collate(batch):
    """Merge a list of samples into a batch (see the module docstring for the type rules).

    >>> default_collate([0, 1, 2, 3])
    tensor([0, 1, 2, 3])
    >>> default_collate([(0, 'a'), (1, 'b')])
    [tensor([0, 1]), ('a', 'b')]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
