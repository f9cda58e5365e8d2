"""Inference tensors: ``Tensor.is_inference()`` / ``ember.is_inference``.

While ``inference_mode()`` is on, the ``INFERENCE`` functionality key is in the thread's
include mask; its handler runs the op below itself and marks the tensors the op made as
inference tensors. As in torch, an in-place op's result and a view of a normal tensor stay
normal tensors. Outside inference mode the key is off, so nothing is marked and no op pays
for it."""
from __future__ import annotations

from .._tensor import Tensor
from ..dispatch import dispatcher as _dispatcher
from ..dispatch import keys as K

INFERENCE = K.INFERENCE


def is_inference(input) -> bool:
    """Whether ``input`` was made inside ``inference_mode()``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return bool(input.__dict__.get("_inference", False))


def _mark(out, sources):
    if isinstance(out, Tensor):
        if id(out) in sources or out._storage in sources.values():
            return                       # an in-place result or a view of a normal tensor
        out.__dict__["_inference"] = True
    elif isinstance(out, (list, tuple)):
        for o in out:
            _mark(o, sources)


def _make_handler(op, bit):
    def handler(*args, **kwargs):
        out = _dispatcher.call_below(op, INFERENCE, args, kwargs)
        sources = {id(a): a._storage for a in _dispatcher.tensors_in(args)
                   if not a.__dict__.get("_inference", False)}
        _mark(out, sources)
        return out
    return handler


_dispatcher.register_functionality(INFERENCE, _make_handler)
Tensor.is_inference = is_inference
