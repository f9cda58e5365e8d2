"""How a backend turns memory into an ``ember.Tensor``, and reads a tensor back.

A Tensor is ``(storage, shape, stride, offset, dtype, device)``: strides and offset count
elements, ``device`` is the storage's. Backends build every tensor they return with
``make_tensor`` (or, on a hot path, the raw constructor from ``tensor_constructor()``), and read
a tensor's layout with the accessors below (``storage_of``, ``data_of``, ``shape_of``,
``strides_of``, ``offset_of``, ``layout_of``): plain tuples and ints read from the tensor's
fields, for kernels on hot paths. ``t.shape`` (an ``ember.Size`` made per call),
``t.stride()``, ``t.storage_offset()`` and ``t.untyped_storage()`` say the same through the
PyTorch API, at the cost of a signature check per call. ``get_native``/``set_native`` give the
backend one cache slot per tensor, for its native view of the tensor's memory.

The Tensor class lives above the runtime (its methods are ops); ``ember`` installs it here when
it is defined (``install_tensor_class``), before any backend can run.
"""
from __future__ import annotations

from .layout import contiguous_strides

_tensor_class = None
_construct = None


def install_tensor_class(cls, constructor=None) -> None:
    """Called once by ``ember._tensor``: ``cls._make(storage, shape, stride, offset, dtype,
    device, native)`` builds a tensor without checks; ``constructor`` is the same function
    for ``cls`` itself, compiled (ember._C), when there is one."""
    global _tensor_class, _construct
    _tensor_class = cls
    _construct = constructor or cls._make


def make_tensor(storage, shape, dtype, stride=None, offset: int = 0, *, native=None):
    """A Tensor viewing ``storage``: ``shape`` and ``stride`` (default: contiguous) in elements,
    starting ``offset`` elements into the storage, of ``dtype``, on ``storage.device``.
    ``native`` pre-fills the backend's cache slot (see ``get_native``)."""
    shape = tuple(int(s) for s in shape)
    stride = contiguous_strides(shape) if stride is None else tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise ValueError(f"make_tensor: shape {list(shape)} has {len(shape)} dims but stride "
                         f"{list(stride)} has {len(stride)}")
    if any(s < 0 for s in shape) or offset < 0:
        raise ValueError(f"make_tensor: negative size or offset (shape {list(shape)}, offset "
                         f"{offset})")
    return _construct(storage, shape, stride, offset, dtype, storage.device, native)


def tensor_constructor():
    """The raw constructor for hot paths: ``new(storage, shape, stride, offset, dtype, device,
    native)`` with ``shape``/``stride`` tuples of ints and ``device`` the storage's; nothing is
    checked. Fetch it once (e.g. in ``Backend.__init__``), not per call."""
    return _construct


def is_tensor(obj) -> bool:
    """``isinstance(obj, ember.Tensor)``."""
    return isinstance(obj, _tensor_class)


def tensor_class():
    """``ember.Tensor``, for backends that test types on a hot path (``x.__class__ is T``)."""
    return _tensor_class


# -- reading a tensor's layout on hot paths ------------------------------------------------------
# Plain functions over the tensor's fields: on CPython 3.11 a call to one costs about 35 ns, less
# than operator.attrgetter (no vectorcall before 3.12) and a fifth of the signature-checked
# Tensor methods. A kernel reads each field once into a local.

def storage_of(t):
    """The tensor's ``Storage`` (what ``t.untyped_storage()`` returns): shared by its views,
    ``storage_of(a) is storage_of(b)`` when two tensors may overlap."""
    return t._storage


def data_of(t):
    """The backend's handle of the tensor's memory, ``storage_of(t).data`` (a numpy array, a
    ``cl.Buffer``...); add ``offset_of(t)`` elements to reach the tensor's first element."""
    return t._storage.data


def shape_of(t) -> tuple:
    """The tensor's sizes as a plain tuple of ints (``tuple(t.shape)`` without the Size)."""
    return t._shape


def strides_of(t) -> tuple:
    """The tensor's strides in elements, a tuple of ints (``t.stride()``)."""
    return t._stride


def offset_of(t) -> int:
    """Where the tensor starts in its storage, in elements (``t.storage_offset()``)."""
    return t._offset


def layout_of(t) -> tuple:
    """``(shape, strides, offset)`` in one call: what places a tensor's elements in its storage,
    hashable (a key for per-layout caches of index metadata)."""
    return t._shape, t._stride, t._offset


def get_native(t):
    """The tensor's backend cache slot: whatever its backend stored with ``set_native`` (the
    CPU keeps the tensor's numpy view there), or None. Every tensor, views included, has its own
    slot; it starts empty (or as ``make_tensor(native=...)`` filled it)."""
    return t._native


def set_native(t, value) -> None:
    """Fill the tensor's backend cache slot (see ``get_native``)."""
    t._native = value
