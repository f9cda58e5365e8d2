"""``ember.Generator`` and the global seeding functions.

A Generator belongs to one device; its backend supplies the implementation
(``Backend.create_generator``), so random numbers are made on the device itself.
"""
from __future__ import annotations

import random as _pyrandom

from ._device import as_device

_DEFAULT_SEED = 67280421310721  # PyTorch's default_rng_seed_val


class Generator:
    def __init__(self, device="cpu"):
        self.device = as_device(device)
        from .runtime.registry import registry
        backend = registry.get(self.device.type)
        self._seed = _DEFAULT_SEED
        self._impl = backend.create_generator(self.device.index or 0, self._seed)

    @classmethod
    def _for_device(cls, backend, index):
        g = object.__new__(cls)
        from ._device import device
        g.device = device(backend.name, None if backend.name == "cpu" else index)
        g._seed = _DEFAULT_SEED
        g._impl = backend.create_generator(index, g._seed)
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
        import numpy as np
        from .ops.factories import from_numpy
        data = self._seed.to_bytes(8, "little") + self._impl.state_bytes()
        return from_numpy(np.frombuffer(data, dtype=np.uint8).copy())

    def set_state(self, state) -> "Generator":
        from ._tensor import Tensor
        if not isinstance(state, Tensor):
            raise TypeError(f"expected an ember uint8 tensor, but got {type(state).__name__}")
        if state.dtype.name != "uint8":
            raise TypeError(f"RNG state must be an ember uint8 tensor (from get_state()), got "
                            f"dtype {state.dtype}")
        data = state.cpu()._host().tobytes()
        size = 8 + getattr(self._impl, "state_size", max(len(data) - 8, 0))
        if len(data) != size:
            raise RuntimeError(f"Expected an RNG state of size {size} but found the input RNG "
                               f"state size to be {len(data)}")
        self._impl.load_state(data[8:])
        self._seed = int.from_bytes(data[:8], "little")
        return self

    def __repr__(self):
        return f"<ember.Generator device={self.device}>"


def default_generator(device=None):
    dev = as_device(device if device is not None else "cpu")
    from .runtime.registry import registry
    return registry.get(dev.type).default_generator(dev.index or 0)


def manual_seed(seed) -> Generator:
    """Seed the default generator of every device of every loaded backend (and the CPU)."""
    from .runtime.registry import registry
    cpu = default_generator("cpu").manual_seed(seed)
    for name in registry.names():
        backend = registry._backends.get(name)
        if backend is None or name == "cpu" or not backend.is_available():
            continue
        for i in range(backend.device_count()):
            backend.default_generator(i).manual_seed(seed)
    _pending_seed[0] = seed
    return cpu


_pending_seed = [None]


def seed() -> int:
    s = _pyrandom.SystemRandom().getrandbits(63)
    manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator("cpu").initial_seed()


def get_rng_state():
    return default_generator("cpu").get_state()


def set_rng_state(state) -> None:
    default_generator("cpu").set_state(state)
