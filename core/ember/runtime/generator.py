"""``ember.Generator``: a device's random-number generator, over its backend's implementation.

A Generator belongs to one device; its backend supplies the state object
(``Backend.create_generator(index, seed)``, e.g. ``ember.runtime.HostGenerator``), so random
numbers are made on the device itself. Kernels read ``generator._impl``. The seed-everything
functions (``ember.manual_seed`` & co.) are in ``ember._generator``.
"""
from __future__ import annotations

import random as _pyrandom

import numpy as np

from .devices import concrete, device as _device_cls
from .registry import registry
from .tensors import is_tensor

DEFAULT_SEED = 67280421310721  # PyTorch's default_rng_seed_val

# the last ember.manual_seed(), applied to default generators of backends loaded later
_pending_seed = [None]


def set_seed_for_new_generators(seed) -> None:
    """Seed the default generators created from now on (``ember.manual_seed``)."""
    _pending_seed[0] = seed


class Generator:
    def __init__(self, device="cpu"):
        dev = device if device.__class__ is _device_cls else _device_cls(device or "cpu")
        self.device = concrete(dev)
        backend = registry.get(self.device.type)
        self._seed = DEFAULT_SEED
        self._impl = backend.create_generator(self.device.index or 0, self._seed)

    @classmethod
    def _for_device(cls, backend, index):
        """The default generator of ``backend``'s device ``index``, seeded by the last
        ``ember.manual_seed`` if there was one."""
        g = object.__new__(cls)
        g.device = _device_cls(backend.name, None if backend.name == "cpu" else index)
        g._seed = DEFAULT_SEED
        g._impl = backend.create_generator(index, g._seed)
        if _pending_seed[0] is not None:
            g.manual_seed(_pending_seed[0])
        return g

    def manual_seed(self, seed) -> "Generator":
        seed = int(seed)
        if seed < -(2 ** 63) or seed >= 2 ** 64:
            raise ValueError(f"Overflow when unpacking long long: seed {seed} is outside "
                             f"[-2**63, 2**64)")
        self._seed = seed % 2 ** 64
        self._impl.reseed(self._seed)
        return self

    def seed(self) -> int:
        s = _pyrandom.SystemRandom().getrandbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """The generator's state as a CPU uint8 tensor: the seed, then the backend's state."""
        data = self._seed.to_bytes(8, "little") + self._impl.state_bytes()
        host = np.frombuffer(data, dtype=np.uint8).copy()
        return registry.get("cpu").from_numpy(host, _device_cls("cpu"))

    def set_state(self, state) -> "Generator":
        if not is_tensor(state):
            raise TypeError(f"expected an ember uint8 tensor, but got {type(state).__name__}")
        if state.dtype.name != "uint8":
            raise TypeError(f"RNG state must be an ember uint8 tensor (from get_state()), got "
                            f"dtype {state.dtype}")
        data = registry.get(state.device.type).to_numpy(state).tobytes()
        size = 8 + getattr(self._impl, "state_size", max(len(data) - 8, 0))
        if len(data) != size:
            raise RuntimeError(f"Expected an RNG state of size {size} but found the input RNG "
                               f"state size to be {len(data)}")
        self._impl.load_state(data[8:])
        self._seed = int.from_bytes(data[:8], "little")
        return self

    def __repr__(self):
        return f"<ember.Generator device={self.device}>"


# the name users know it by (ember.Generator is re-exported by ember._generator; stubs and
# pickles use that name)
Generator.__module__ = "ember._generator"
