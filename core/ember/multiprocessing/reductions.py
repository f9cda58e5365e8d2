"""How ``multiprocessing`` sends ember tensors between processes: CPU tensors move to shared
memory (``Tensor.share_memory_``) and travel as a duplicate of their shared-memory file's
descriptor, so the receiver's tensor views the sender's memory (torch's ``file_descriptor``
strategy). Tensors on other devices, and sparse ones, are pickled by value (copied)."""
from __future__ import annotations

from multiprocessing.reduction import DupFd, ForkingPickler

from .. import _dtype, _shared_memory
from .._device import device as _device
from .._layout import strided
from .._tensor import Tensor
from ..nn.parameter import Parameter
from ..runtime.storage import Storage

__all__ = ["init_reductions", "rebuild_tensor", "reduce_tensor"]


def _make_cpu_storage(data):
    return Storage(data, data.nbytes, _device("cpu"))


def rebuild_tensor(cls, fd_holder, nbytes, data_shape, data_strides, np_dtype, shape, stride,
                   offset, dtype_name, requires_grad):
    storage = _shared_memory.attach(fd_holder.detach(), nbytes, data_shape, data_strides,
                                    np_dtype, _make_cpu_storage)
    t = Tensor._make(storage, tuple(shape), tuple(stride), offset, _dtype._by_name(dtype_name),
                     storage.device)
    if issubclass(cls, Parameter):
        return cls(t, requires_grad)
    if cls is not Tensor:
        t = t.as_subclass(cls)
    return t.requires_grad_(True) if requires_grad else t


def reduce_tensor(t):
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    if t.device.type != "cpu" or t.layout is not strided:
        return t.__reduce_ex__(4)   # by value: only host memory can be shared here
    storage = t._storage
    _shared_memory.share_storage(storage)
    if not _shared_memory.is_shared(storage):
        return t.__reduce_ex__(4)
    data = storage.data
    return (rebuild_tensor, (type(t), DupFd(_shared_memory.descriptor(storage)),
                             _shared_memory._span(data), data.shape, data.strides,
                             data.dtype.str, t._shape, t._stride, t._offset, t.dtype.name,
                             t.requires_grad))


def init_reductions():
    """Send ember's tensor classes through ``reduce_tensor`` in every ``multiprocessing``
    pickler (queues, pipes, the arguments of spawned processes)."""
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)
