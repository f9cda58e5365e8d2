"""Generator states for host-side RNGs (numpy's counter-based Philox)."""
from __future__ import annotations

import numpy as np

# The complete Philox state numpy keeps, as fixed-size little-endian words: the Generator draws
# nothing from anywhere else (no cached normals), so these bytes reproduce the stream exactly.
_PHILOX_STATE = np.dtype([("counter", "<u8", 4), ("key", "<u8", 2), ("buffer", "<u8", 4),
                          ("buffer_pos", "<u8"), ("has_uint32", "<u8"), ("uinteger", "<u8")])


class HostGenerator:
    """A backend generator implementation: ``impl`` is a numpy ``Generator`` (Philox, so the
    stream is reproducible and cheap to jump); the state round-trips through bytes."""

    state_size = _PHILOX_STATE.itemsize

    def __init__(self, seed: int):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.impl = np.random.Generator(np.random.Philox(seed & (2 ** 64 - 1)))

    def state_bytes(self) -> bytes:
        st = self.impl.bit_generator.state
        rec = np.zeros((), _PHILOX_STATE)
        rec["counter"] = st["state"]["counter"]
        rec["key"] = st["state"]["key"]
        rec["buffer"] = st["buffer"]
        for field in ("buffer_pos", "has_uint32", "uinteger"):
            rec[field] = st[field]
        return rec.tobytes()

    def load_state(self, data: bytes) -> None:
        data = bytes(data)
        if len(data) != self.state_size:
            raise RuntimeError(f"Expected a Philox generator state of size {self.state_size} but "
                               f"found the input RNG state size to be {len(data)}")
        rec = np.frombuffer(data, _PHILOX_STATE)[0]
        if not 0 <= int(rec["buffer_pos"]) <= 4 or int(rec["has_uint32"]) > 1:
            raise RuntimeError("set_state: the bytes are not a Philox state from get_state()")
        self.impl.bit_generator.state = {
            "bit_generator": "Philox",
            "state": {"counter": rec["counter"].copy(), "key": rec["key"].copy()},
            "buffer": rec["buffer"].copy(),
            "buffer_pos": int(rec["buffer_pos"]),
            "has_uint32": int(rec["has_uint32"]),
            "uinteger": int(rec["uinteger"]),
        }
