"""Dispatch keys, key sets and the per-thread include/exclude state.

A key set is an int bitmask. Functionality keys take the low bits, in priority order (the lowest
set bit is handled first); each concrete device (``cpu``, ``opencl:0``, ``opencl:1``…) gets its
own bit from ``FIRST_DEVICE_BIT`` up when its first tensor is made. A tensor's key set is its
device's bit, plus ``AUTOGRAD`` when it requires grad. Giving each device (not each backend) a
bit makes "two devices in one op" a property of the key set itself.
"""
from __future__ import annotations

import threading

PYTHON = 1 << 0      # Python modes: profiler, user TorchDispatchMode-like modes
TRACER = 1 << 1      # ember.compile graph capture
BATCHED = 1 << 2     # ember.func.vmap
AUTOGRAD = 1 << 3    # records the graph, then redispatches below itself
FUNCTIONALITY_MASK = (1 << 8) - 1
FIRST_DEVICE_BIT = 8

NAMES = {PYTHON: "Python", TRACER: "Tracer", BATCHED: "Batched", AUTOGRAD: "Autograd"}

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


class _DispatchState(threading.local):
    """Per-thread: keys forced on (``include``) and the mask of keys left on (``keep``)."""

    def __init__(self):
        self.include = 0
        self.keep = -1           # ~exclude; all keys kept
        self.grad_enabled = True
        self.inference_mode = False


state = _DispatchState()


class ExcludeKeys:
    """Context manager: handle the op below the given keys (redispatch)."""

    __slots__ = ("mask", "_prev")

    def __init__(self, mask: int):
        self.mask = mask

    def __enter__(self):
        self._prev = state.keep
        state.keep = self._prev & ~self.mask

    def __exit__(self, *exc):
        state.keep = self._prev


class IncludeKeys:
    __slots__ = ("mask", "_prev")

    def __init__(self, mask: int):
        self.mask = mask

    def __enter__(self):
        self._prev = state.include
        state.include = self._prev | self.mask

    def __exit__(self, *exc):
        state.include = self._prev
