"""``nn.Parameter``: a Tensor that modules register as a learnable parameter.

It is a Tensor subclass sharing the storage of the tensor it wraps (like PyTorch's), so
``isinstance(p, Tensor)`` holds and every op accepts it; ops on it return plain Tensors because
kernels build results with ``Tensor._make``.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.graph import alias


class Parameter(Tensor):
    """``Parameter(data=None, requires_grad=True)``: a leaf that requires grad by default."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..ops.factories import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        # share memory and version counter with ``data``, but start outside its graph
        d = alias(data)
        p = cls._make(d._storage, d._shape, d._stride, d._offset, d.dtype, d.device, d._native)
        p.requires_grad_(requires_grad)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__ (Tensor has no __init__ to chain to)

    def __repr__(self, *, tensor_contents=None):
        from .._tensor_str import tensor_repr
        return "Parameter containing:\n" + tensor_repr(self, "tensor(", tensor_contents)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach().cpu().numpy().copy(), str(self.device),
                                     self.requires_grad))


def _rebuild_parameter(array, device, requires_grad):
    from ..ops.factories import from_numpy
    return Parameter(from_numpy(array).to(device), requires_grad)


def is_lazy(param) -> bool:
    return False  # ember has no lazy (uninitialized) parameters
