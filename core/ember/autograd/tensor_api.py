"""Tensor's autograd API, attached to ``ember.Tensor``: requires_grad, grad, backward, detach,
hooks, retain_grad, output_nr, data."""
from __future__ import annotations

import weakref

from .. import _tensor
from .._tensor import Tensor
from ..dispatch import keys as K
from . import engine
from .graph import (AutogradMeta, _HookDict, add_hook, alias, differentiable_dtype,
                    root_view_base)
from ..ops._grad import expandable
from ..ops._util import as_shape
from .record import regenerate_view

_AG = K.AUTOGRAD


def _requires_grad(self) -> bool:
    ag = self._ag
    return ag is not None and ag.requires_grad


def _set_requires_grad(self, value):
    value = bool(value)
    ag = self._ag
    if ag is not None and ag.grad_fn is not None:
        if not value:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        return
    if value:
        if not differentiable_dtype(self.dtype):
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require "
                               f"gradients (requires_grad=True on a tensor of dtype "
                               f"{self.dtype})")
        if ag is None:
            self._ag = AutogradMeta(True)
        else:
            ag.requires_grad = True
        self._ks |= _AG
    else:
        if ag is not None:
            ag.requires_grad = False
        self._ks &= ~_AG


def requires_grad_(self, requires_grad=True):
    _set_requires_grad(self, requires_grad)
    return self


def _grad(self):
    ag = self._ag
    if ag is None:
        return None
    if ag.grad_fn is not None and not ag.retains_grad and ag.grad is None:
        engine._warn_nonleaf_grad()
    return ag.grad


def _set_grad(self, value):
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if value.dtype is not self.dtype:
            raise RuntimeError("assigned grad has data of a different type")
        if value.device is not self.device:
            raise RuntimeError("assigned grad has data located on a different device")
        if value._shape != self._shape:
            raise RuntimeError("assigned grad has data of a different size")
    rec = _tensor._grad_recorders and _tensor._grad_recorder()
    if rec:                          # ember.compile records the write as a step node
        rec.set_grad(self, value)
    ag = self._ag
    if ag is None:
        if value is None:
            return
        self._ag = ag = AutogradMeta(False)
    ag.grad = value


def _grad_fn(self):
    ag = self._ag
    if ag is None:
        return None
    if ag.view_version is not None and ag.requires_grad and \
            ag.view_version != self._storage.version:
        return regenerate_view(self)
    return ag.grad_fn


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves of its graph."""
    engine.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def detach(self):
    """A tensor sharing this one's memory (and version counter), outside autograd."""
    return alias(self)


def detach_(self):
    ag = self._ag
    if ag is not None and ag.view_version is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training, and gradient_as_bucket_"
                           "view is set as True, gradients are views of DDP buckets, and hence "
                           "detach_() cannot be called on these gradients. To fix this error, "
                           "please refer to the Optimizer.zero_grad() function in "
                           "torch/optim/optimizer.py as the solution.")
    if ag is not None:
        ag.grad_fn = None
        ag.output_nr = 0
        ag.requires_grad = False
    self._ks &= ~_AG
    return self


def register_hook(self, hook):
    """``hook(grad)`` runs when this tensor's gradient is computed; a returned tensor replaces
    the gradient. Returns a handle whose ``remove()`` takes the hook out."""
    if not _requires_grad(self):
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = _grad_fn(self)
    if fn is None:
        ag = self._ag
        if ag.hooks is None:
            ag.hooks = _HookDict()
        return add_hook(ag.hooks, hook)
    return add_hook(fn._tensor_hooks(self._ag.output_nr), hook)


def register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` after the gradient was accumulated into this leaf's ``.grad``."""
    if not _requires_grad(self):
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if _grad_fn(self) is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    ag = self._ag
    if ag.post_acc_hooks is None:
        ag.post_acc_hooks = _HookDict()
    return add_hook(ag.post_acc_hooks, hook)


def retain_grad(self):
    """Populate ``.grad`` for this non-leaf tensor during backward."""
    if not _requires_grad(self):
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    fn = _grad_fn(self)
    if fn is None:  # leaves keep their grad anyway
        return
    x = fn.extras()
    if x.retain_hooks is None:
        x.retain_hooks = {}
    x.retain_hooks[self._ag.output_nr] = weakref.ref(self)
    self._ag.retains_grad = True


def _retains_grad(self) -> bool:
    ag = self._ag
    return ag is not None and ag.grad_fn is not None and ag.retains_grad


def _output_nr(self) -> int:
    ag = self._ag
    return 0 if ag is None else ag.output_nr


def _data(self):
    return alias(self)


def _set_data(self, other):
    if not isinstance(other, Tensor):
        raise TypeError(f"data must be a Tensor, got {type(other).__name__}")
    if _requires_grad(self) and not differentiable_dtype(other.dtype):
        raise RuntimeError("data set to a tensor that requires gradients must be floating point "
                           "or complex dtype")
    self._storage, self._shape, self._stride, self._offset = (other._storage, other._shape,
                                                              other._stride, other._offset)
    self.dtype, self.device, self._native = other.dtype, other.device, other._native
    self._ks = (self.device._key or K.device_key(self.device)) | (self._ks & _AG)


def _is_view(self) -> bool:
    return getattr(self, "_view_base", None) is not None


def sum_to_size(self, *size):
    """PyTorch's ``at::sum_to``: a public ``sum`` over the broadcast dims (so bool and integer
    tensors promote as sum does), ``self`` when nothing is reduced, and always a full ``sum()``
    to the empty size."""
    shape = as_shape(size, "sum_to_size")
    if not expandable(shape, self._shape):
        raise RuntimeError(f"sum_to_size: size {list(shape)} is not expandable to size "
                           f"{list(self._shape)}")
    if not shape:
        return self.sum()
    lead = self.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape)
                                if s == 1 and self._shape[lead + i] != 1]
    if not dims:
        return self
    r = self.sum(dims, keepdim=True)
    return r.reshape(shape) if lead else r


def attach_all():
    Tensor.requires_grad = property(_requires_grad, _set_requires_grad)
    Tensor.requires_grad_ = requires_grad_
    Tensor.grad = property(_grad, _set_grad)
    Tensor.grad_fn = property(_grad_fn)
    Tensor.backward = backward
    Tensor.detach = detach
    Tensor.detach_ = detach_
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(_retains_grad)
    Tensor.output_nr = property(_output_nr)
    Tensor.data = property(_data, _set_data)
    Tensor._base = property(root_view_base)
    Tensor._is_view = _is_view
    Tensor.sum_to_size = sum_to_size


def zero_grads(params, set_to_none=True) -> None:
    """Reset the ``.grad`` of every tensor in ``params`` (``Module.zero_grad`` and
    ``Optimizer.zero_grad``): drop it, or zero it in place after cutting it from any graph."""
    for p in params:
        g = p.grad
        if g is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            if g.grad_fn is not None:
                g.detach_()
            else:
                g.requires_grad_(False)
            g.zero_()
