"""Generator states for host-side RNGs (numpy's counter-based Philox)."""
from __future__ import annotations

import json

import numpy as np


class HostGenerator:
    """A backend generator implementation: ``impl`` is a numpy ``Generator`` (Philox, so the
    stream is reproducible and cheap to jump); the state round-trips through bytes."""

    def __init__(self, seed: int):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.impl = np.random.Generator(np.random.Philox(seed & (2 ** 64 - 1)))

    def state_bytes(self) -> bytes:
        return json.dumps(self.impl.bit_generator.state, default=_jsonable).encode()

    def load_state(self, data: bytes) -> None:
        try:
            st = json.loads(bytes(data).decode())
            st["state"]["counter"] = np.array(st["state"]["counter"], dtype=np.uint64)
        except (ValueError, KeyError, TypeError) as e:
            raise RuntimeError(f"set_rng_state: not a state saved by get_rng_state ({e})") from None
        st["state"]["key"] = np.array(st["state"]["key"], dtype=np.uint64)
        st["buffer"] = np.array(st["buffer"], dtype=np.uint64)
        self.impl.bit_generator.state = st


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return [int(v) for v in x.tolist()]
    if isinstance(x, np.integer):
        return int(x)
    raise TypeError(type(x))
