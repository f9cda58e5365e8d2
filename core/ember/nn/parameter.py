"""``nn.Parameter``: a Tensor that modules register as a learnable parameter.

It is a Tensor subclass sharing the storage of the tensor it wraps (like PyTorch's), so
``isinstance(p, Tensor)`` holds and every op accepts it; ops on it return plain Tensors because
kernels build results with ``Tensor._make``.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.graph import alias
from .._tensor_str import tensor_repr
from ..dispatch.grad_mode import no_grad
from ..ops.factories import empty, from_numpy


class Parameter(Tensor):
    """``Parameter(data=None, requires_grad=True)``: a leaf that requires grad by default."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
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
    return Parameter(from_numpy(array).to(device), requires_grad)


class UninitializedTensorMixin:
    """What a lazy module's parameters and buffers share before their first forward: no
    elements yet, the shape decided by ``materialize``, which turns the object into its
    ``cls_to_become`` in place (so optimizers and references made earlier keep working)."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        with no_grad():
            self.data = empty(tuple(shape), device=device or self.device,
                              dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self, *, tensor_contents=None):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        raise ValueError(f"Attempted to use an uninitialized parameter in {type(self)}. This "
                         f"error happens when you are using a `LazyModule` or explicitly "
                         f"manipulating `torch.nn.parameter.{type(self).__name__}` objects. "
                         f"When using LazyModules Call `forward` with a dummy batch to "
                         f"initialize the parameters before calling torch functions")


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter of a lazy module before its first forward."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return super().__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = out
        return out


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module (running statistics) before its first forward."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        d = empty(0, device=device, dtype=dtype)
        t = cls._make(d._storage, d._shape, d._stride, d._offset, d.dtype, d.device, d._native)
        t.requires_grad_(requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


class _BufferMeta(type):
    # a Buffer is a plain tensor marked ``_is_buffer``, as torch's is
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """``Buffer(data=None, *, persistent=True)``: ``data`` detached and marked so that assigning
    it to a Module attribute registers a buffer (``persistent=False`` keeps it out of
    ``state_dict``). What it returns is a plain Tensor, as in torch."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def is_lazy(param) -> bool:
    return isinstance(param, UninitializedTensorMixin)
