"""``ember.backends.cpu``: what the CPU backend runs on."""
from __future__ import annotations

import platform


def get_cpu_capability() -> str:
    """The widest SIMD instruction set numpy dispatches to on this CPU, in PyTorch's words:
    "AVX512", "AVX2", "ZVECTOR", "VSX", "SVE256" or "DEFAULT" (PyTorch's "NO AVX")."""
    features = _numpy_cpu_features()
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        if all(features.get(f) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
            return "AVX512"
        if features.get("AVX2") and features.get("FMA3"):
            return "AVX2"
        return "DEFAULT"
    if machine == "s390x":
        return "ZVECTOR" if features.get("VX") else "DEFAULT"
    if machine.startswith("ppc64"):
        return "VSX" if features.get("VSX") else "DEFAULT"
    if machine in ("aarch64", "arm64") and features.get("SVE"):
        return "SVE256"
    return "DEFAULT"


def _numpy_cpu_features() -> dict:
    try:
        # probe: numpy 2's private module, else numpy 1's
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__  # probe: numpy 1's
        except ImportError:
            return {}
    return dict(__cpu_features__)
