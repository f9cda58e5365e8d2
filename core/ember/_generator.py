"""``ember.Generator`` (defined in ``ember.runtime.generator``) and the global seeding functions.

A Generator belongs to one device; its backend supplies the implementation
(``Backend.create_generator``), so random numbers are made on the device itself.
"""
from __future__ import annotations

import random as _pyrandom

from ._device import as_device
from .runtime.generator import Generator, set_seed_for_new_generators
from .runtime.registry import registry

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]


def device_default_generator(device=None) -> Generator:
    """The default Generator of ``device`` (the CPU when None): the one random ops use when
    they are given none. ``ember.default_generator`` is the CPU's, as ``torch.default_generator``
    is."""
    dev = as_device(device if device is not None else "cpu")
    return registry.get(dev.type).default_generator(dev.index or 0)


def manual_seed(seed) -> Generator:
    """Seed the default generator of every device of every loaded backend (and the CPU)."""
    cpu = device_default_generator("cpu").manual_seed(seed)
    for backend in registry.loaded_backends():
        if backend.name == "cpu":
            continue
        for i in range(backend.device_count()):
            backend.default_generator(i).manual_seed(seed)
    set_seed_for_new_generators(seed)
    return cpu


def seed() -> int:
    s = _pyrandom.SystemRandom().getrandbits(63)
    manual_seed(s)
    return s


def initial_seed() -> int:
    return device_default_generator("cpu").initial_seed()


def get_rng_state():
    return device_default_generator("cpu").get_state()


def set_rng_state(state) -> None:
    device_default_generator("cpu").set_state(state)
