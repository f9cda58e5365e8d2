"""Saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks`` and its relatives).

Inside ``with saved_tensors_hooks(pack, unpack):`` every tensor autograd saves for backward
goes through ``pack`` (under no_grad) and the node keeps what it returns; backward calls
``unpack`` on that to get the tensor back. The hooks are a per-thread stack (the innermost pair
applies), as torch's are. ``SavedTensor`` (graph.py) reads ``in_use`` — the number of pairs
entered on any thread — as its one check on the path without hooks; the compiled recorder
(csrc/record.c) gets the same count through ``ember._C.set_saved_hooks`` and then leaves saving
to the Python ``SavedTensor``.
"""
from __future__ import annotations

import contextlib
import threading

import ember  # save_on_cpu's device modules and ops, read at call time (a layer above)

from .. import _fastpath

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "current"]

in_use = 0           # pairs entered and not yet left, over all threads
_count_lock = threading.Lock()
_tls = threading.local()   # .stack: [(pack, unpack)]; .disabled: the error message, or None


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def current():
    """The innermost ``(pack, unpack)`` pair of this thread, or None."""
    s = getattr(_tls, "stack", None)
    return s[-1] if s else None


def _add_in_use(n):
    global in_use
    with _count_lock:
        in_use += n
        if _fastpath.C is not None:
            _fastpath.C.set_saved_hooks(in_use > 0)


class saved_tensors_hooks:
    """Pack/unpack hooks for the tensors saved for backward inside the block:
    ``pack_hook(tensor) -> Any`` when saved, ``unpack_hook(packed) -> Tensor`` when backward
    needs it. The hooks must not modify their input in place; the unpacked tensor must have
    the saved one's values (the version check is skipped, as in torch)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = getattr(_tls, "disabled", None)
        if message is not None:
            raise RuntimeError(message)
        _stack().append((self.pack_hook, self.unpack_hook))
        _add_in_use(1)

    def __exit__(self, *args):
        _stack().pop()
        _add_in_use(-1)


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors live on the CPU until backward, which copies them back to their device
    (``pin_memory``: page-locked host copies, where the device module has them)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        device_module = getattr(ember, device_type, ember.cuda)

        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()
            pinnable = device_module.is_available() and not tensor.is_sparse
            packed = ember.empty(tensor.size(), dtype=tensor.dtype, layout=tensor.layout,
                                 pin_memory=pinnable)
            packed.copy_(tensor, non_blocking=pinnable)
            return tensor.device, packed

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Entering ``saved_tensors_hooks`` inside the block raises RuntimeError(error_message);
    so does entering this block while hooks are active."""
    previous = getattr(_tls, "disabled", None)
    if current() is not None:
        raise RuntimeError(error_message)
    try:
        _tls.disabled = error_message
        yield
    finally:
        _tls.disabled = previous
