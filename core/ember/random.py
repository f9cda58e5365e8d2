"""``ember.random``: torch.random — the default generator's seeding and state, ``fork_rng`` and
``thread_safe_generator``."""
from __future__ import annotations

import contextlib

from ._generator import device_default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from . import accelerator
from .accelerator import get_device_module
from .utils.data import get_worker_info

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state",
           "thread_safe_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Run the block with the CPU generator's state (and that of ``devices`` of the
    accelerator, all of them by default) restored afterwards."""
    if device_type == "meta" or not enabled:
        yield
        return
    if device_type is None:
        current = accelerator.current_accelerator()
        device_type = current.type if current is not None else "cuda"
    module = get_device_module(device_type)
    if devices is None:
        devices = list(range(module.device_count()))
    cpu_state = get_rng_state()
    device_states = [module.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            module.set_rng_state(state, d)


def thread_safe_generator():
    """The generator of the DataLoader thread worker running this code, or None (the default
    generator) anywhere else."""
    info = get_worker_info()
    return getattr(info, "generator", None) if info is not None else None


def __getattr__(name):
    if name == "default_generator":  # torch.random.default_generator is torch.default_generator
        return device_default_generator("cpu")
    raise AttributeError(f"module 'ember.random' has no attribute '{name}'")
