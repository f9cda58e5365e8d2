"""Dispatch keys, key sets and the per-thread include/exclude state.

A key set is an int bitmask. Functionality keys take the low bits, in priority order (the lowest
set bit is handled first); each concrete device (``cpu``, ``opencl:0``, ``opencl:1``…) gets its
own bit from ``FIRST_DEVICE_BIT`` up when its first tensor is made. A tensor's key set is its
device's bit, plus ``AUTOGRAD`` when it requires grad. Giving each device (not each backend) a
bit makes "two devices in one op" a property of the key set itself.
"""
from __future__ import annotations

import threading

from .. import _fastpath

PYTHON = 1 << 0      # Python modes: profiler, user TorchDispatchMode-like modes
TRACER = 1 << 1      # ember.compile graph capture
SPARSE = 1 << 2      # a sparse COO tensor among the arguments: the op's COO form or an error
                     # naming the layout (ember/sparse/dispatch.py). Above the transforms and
                     # autograd: a COO form is written in dense ops on the indices and values,
                     # and those are what vmap/jvp/autograd then see
BATCHED = 1 << 3     # ember.func: vmap's BatchedTensors and forward-AD dual tensors
AUTOCAST = 1 << 4    # ember.autocast: casts arguments per op, above autograd (PyTorch's
                     # AutocastCPU/CUDA), so the casts are recorded; on in the thread's include
                     # mask while an autocast region is enabled
AUTOGRAD = 1 << 5    # records the graph, then redispatches below itself
INFERENCE = 1 << 6   # inference_mode(): marks the tensors ops make (autograd/inference.py)
FUNCTIONALITY_MASK = (1 << 8) - 1
FIRST_DEVICE_BIT = 8

NAMES = {PYTHON: "Python", TRACER: "Tracer", BATCHED: "Batched", AUTOCAST: "Autocast",
         SPARSE: "Sparse", AUTOGRAD: "Autograd", INFERENCE: "Inference"}

_device_by_bit: dict = {}
_next_bit = [FIRST_DEVICE_BIT]
_lock = threading.Lock()


def device_key(dev) -> int:
    """The key bit of a concrete device, allocated on first use."""
    k = dev._key
    if k:
        return k
    with _lock:
        if not dev._key:
            bit = 1 << _next_bit[0]
            _next_bit[0] += 1
            _device_by_bit[bit] = dev
            dev._key = bit
    return dev._key


def device_of_key(bit: int):
    return _device_by_bit[bit]


def devices_in(keyset: int):
    """The devices whose bits are set in ``keyset``, lowest bit first."""
    rest = keyset & ~FUNCTIONALITY_MASK
    out = []
    while rest:
        low = rest & -rest
        out.append(_device_by_bit[low])
        rest ^= low
    return out


def describe(keyset: int) -> str:
    """``Autograd|cpu`` (for logs): the functionality keys, then the devices."""
    names = [name for bit, name in sorted(NAMES.items()) if keyset & bit]
    return "|".join(names + [str(d) for d in devices_in(keyset)]) or "none"


class _DispatchState(threading.local):
    """Per thread: ``masks = (include, keep)`` — keys forced on, and the mask of keys left on
    (``keep = ~exclude``). One tuple, because the dispatcher reads both on every op."""

    def __init__(self):
        self.masks = (0, -1)
        self.grad_enabled = True
        self.inference_mode = False

    @property
    def include(self) -> int:
        return self.masks[0]

    @include.setter
    def include(self, value: int) -> None:
        self.masks = (value, self.masks[1])

    @property
    def keep(self) -> int:
        return self.masks[1]

    @keep.setter
    def keep(self, value: int) -> None:
        self.masks = (self.masks[0], value)


state = _DispatchState()

if _fastpath.C is not None:
    # the masks move into C thread-locals (csrc/module.c) read by the compiled dispatcher;
    # `state.masks` reads and writes them through a data descriptor on the class
    _DispatchState.masks = _fastpath.C.masks_descriptor


class ExcludeKeys:
    """Context manager: handle the op below the given keys (redispatch)."""

    __slots__ = ("mask", "_prev")

    def __init__(self, mask: int):
        self.mask = mask

    def __enter__(self):
        self._prev = prev = state.masks
        state.masks = (prev[0], prev[1] & ~self.mask)

    def __exit__(self, *exc):
        state.masks = self._prev


class IncludeKeys:
    __slots__ = ("mask", "_prev")

    def __init__(self, mask: int):
        self.mask = mask

    def __enter__(self):
        self._prev = prev = state.masks
        state.masks = (prev[0] | self.mask, prev[1])

    def __exit__(self, *exc):
        state.masks = self._prev
