"""``ember.utils.swap_tensors``: two tensor objects exchange their contents (class, data,
autograd state and attributes), each keeping its identity (``torch.utils.swap_tensors``)."""
from __future__ import annotations

import copyreg
import weakref

__all__ = ["swap_tensors"]

_POISONED = ("Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can "
             "happen when you try to run backward on a tensor that was swapped. For a module m "
             "with `torch.__future__.set_swap_module_params_on_conversion(True)` you should not "
             "change the device or dtype of the module (e.g. `m.cpu()` or `m.half()`) between "
             "running forward and backward. To resolve this, please only change the "
             "device/dtype before running forward (or after both forward and backward).")


def _poisoned_pre_hook(grad_outputs):
    raise RuntimeError(_POISONED)


def _retire_accumulator(t) -> None:
    """A graph recorded before the swap accumulates into the object it was recorded for; its
    leaf sink now belongs to the other object, so backward through it raises, and the next
    graph gets a fresh sink."""
    meta = t._ag
    acc = meta.acc() if meta is not None and meta.acc is not None else None
    if acc is not None:
        acc.register_prehook(_poisoned_pre_hook)
        meta.acc = None


def swap_tensors(t1, t2) -> None:
    """Make ``t1`` hold what ``t2`` held and the reverse: their classes, storages, shapes,
    dtypes, devices, autograd state and ``__dict__``. Refused when either has weak
    references or the two classes have different slots."""
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")

    def swap_attr(name):
        tmp = getattr(t1, name)
        setattr(t1, name, getattr(t2, name))
        setattr(t2, name, tmp)

    _retire_accumulator(t1)
    _retire_accumulator(t2)
    swap_attr("__class__")
    swap_attr("__dict__")
    for slot in t1_slots:
        if hasattr(t1, slot) and hasattr(t2, slot):
            swap_attr(slot)
        elif hasattr(t1, slot):
            setattr(t2, slot, getattr(t1, slot))
            delattr(t1, slot)
        elif hasattr(t2, slot):
            setattr(t1, slot, getattr(t2, slot))
            delattr(t2, slot)
