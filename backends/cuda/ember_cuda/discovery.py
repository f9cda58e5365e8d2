"""Is CUDA usable here, and if not, why: cupy, the driver, the devices, CUDA_VISIBLE_DEVICES.

Everything is asked in the order a user would fix it, and each answer is a sentence the user can
act on (``ember info`` shows it): cupy not installed; cupy installed but failing to import;
``CUDA_VISIBLE_DEVICES`` hiding every GPU; no NVIDIA driver (``libcuda`` cannot be loaded); a
driver too old for cupy's CUDA runtime; no device. Nothing here imports cupy at module level, and
each probe takes its dependencies as arguments so the logic is tested without cupy or a GPU.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import re

INSTALL_HINT = ("install ember's CUDA support with `pip install 'ember[cuda]'` (cupy-cuda12x) or "
                "`pip install 'ember[cuda13]'` (cupy-cuda13x)")
_LIBCUDA = ("nvcuda.dll",) if os.name == "nt" else ("libcuda.so.1", "libcuda.so")


class Unavailable(Exception):
    """CUDA cannot run here; the message says why."""


def _leading_int(text: str) -> int:
    """strtoul-like: the integer the entry starts with (``"1gpu"`` -> 1), -1 when none."""
    m = re.match(r"[+-]?\d+", text)
    return int(m.group()) if m else -1


def parse_visible_devices(value):
    """The device entries ``CUDA_VISIBLE_DEVICES`` keeps visible, read as the CUDA runtime (and
    PyTorch's ``_parse_visible_devices``) reads it: None when the variable is unset (every
    device); a list of ``GPU-``/``MIG-`` UUID prefixes when it starts with one; else ordinals
    parsed like ``strtoul`` (``"1gpu2"`` is 1), stopping at the first negative or non-numeric
    entry, and no device at all when an ordinal repeats. ``""`` and ``"-1"`` hide everything."""
    if value is None:
        return None
    value = value.strip()
    for prefix in ("GPU-", "MIG-"):
        if value.startswith(prefix):
            out = []
            for entry in value.split(","):
                entry = entry.strip()
                if not entry.startswith(prefix) or entry in out:
                    break
                out.append(entry)
            return out
    out = []
    for entry in value.split(","):
        index = _leading_int(entry.strip())
        if index in out:
            return []
        if index < 0:
            break
        out.append(index)
    return out


def visible_devices_text(env=None) -> str:
    """``CUDA_VISIBLE_DEVICES`` as it would be quoted in a message ('' when unset)."""
    env = os.environ if env is None else env
    value = env.get("CUDA_VISIBLE_DEVICES")
    return "unset" if value is None else repr(value)


def libcuda_loadable(load=ctypes.CDLL) -> str | None:
    """None when the driver library loads, else the loader's error for the first name tried."""
    err = None
    for name in _LIBCUDA:
        try:
            load(name)
            return None
        except OSError as e:
            err = err or str(e)
    return err or "not found"


def _cuda_version_text(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def probe(find_spec=importlib.util.find_spec, import_module=None, env=None,
          load_library=ctypes.CDLL) -> int:
    """The number of visible CUDA devices, or ``Unavailable`` with the reason.

    ``find_spec``, ``import_module``, ``env`` and ``load_library`` are the only ways it touches
    the machine (tests pass fakes)."""
    env = os.environ if env is None else env
    if find_spec("cupy") is None:
        raise Unavailable(f"cupy is not installed; {INSTALL_HINT}")
    if import_module is None:
        import importlib
        import_module = importlib.import_module
    try:
        cupy = import_module("cupy")
    except Exception as e:  # a broken wheel, a CUDA-version mismatch, a missing libcudart...
        raise Unavailable(f"cupy is installed but failed to import ({type(e).__name__}: {e}); "
                          f"reinstall the wheel matching your CUDA version (cupy-cuda12x for "
                          f"CUDA 12, cupy-cuda13x for CUDA 13)") from None
    visible = parse_visible_devices(env.get("CUDA_VISIBLE_DEVICES"))
    if visible is not None and not visible:
        raise Unavailable(f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')!r} hides "
                          f"every GPU; unset it or list device ordinals such as '0,1'")
    missing = libcuda_loadable(load_library)
    if missing is not None:
        raise Unavailable(f"cupy {cupy.__version__} is installed, but there is no NVIDIA driver: "
                          f"the CUDA driver library (libcuda.so.1) cannot be loaded ({missing}); "
                          f"install the NVIDIA driver on a machine with an NVIDIA GPU")
    runtime = cupy.cuda.runtime
    try:
        count = runtime.getDeviceCount()
    except Exception as e:  # cupy_backends.cuda.api.runtime.CUDARuntimeError
        text = str(e)
        if "InsufficientDriver" in text:
            try:
                driver = _cuda_version_text(runtime.driverGetVersion())
            except Exception:
                driver = "unknown"
            needed = _cuda_version_text(runtime.runtimeGetVersion())
            raise Unavailable(f"the NVIDIA driver is too old for cupy {cupy.__version__}: it "
                              f"supports CUDA {driver}, cupy's runtime needs CUDA {needed}; "
                              f"update the driver") from None
        if "NoDevice" in text:
            raise Unavailable(f"no CUDA GPU found (CUDA_VISIBLE_DEVICES "
                              f"{visible_devices_text(env)}): {text}") from None
        raise Unavailable(f"the CUDA runtime failed to start: {text}") from None
    if count <= 0:
        raise Unavailable(f"no CUDA GPU found (CUDA_VISIBLE_DEVICES "
                          f"{visible_devices_text(env)})")
    return count
