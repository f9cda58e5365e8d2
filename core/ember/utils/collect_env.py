"""``python -m ember.utils.collect_env``: the environment, for a bug report (torch's command).

Prints ember's version and install location, Python and the OS, the CPU, numpy/scipy and the
BLAS they run on (threadpoolctl: library, version, CPU kernel, threads) with the variables
that steer it, each backend ember knows (available or why not, its devices), the OpenCL
platforms (PoCL's version and LLVM), cupy and the CUDA driver, mpi4py and the MPI library, the
installed backend plug-ins (distribution and version), torch when installed, and the ``EMBER_*``
variables. Every probe that fails says why instead of stopping the report.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
import numpy
import ember

from ..runtime.registry import registry

__all__ = ["get_env_info", "main"]

_ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
             "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "POCL_DEVICES", "PYOPENCL_CTX")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _probe(fn):
    try:
        return fn()
    except Exception as e:   # a report must not stop at one broken probe
        return f"unavailable ({type(e).__name__}: {e})"


def _cpu() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model} ({count} CPUs usable, {os.cpu_count()} online)"


def _blas() -> list:
    # optional: reported when installed
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info
    rows = []
    for pool in threadpool_info():
        extra = f", {pool['architecture']}" if pool.get("architecture") else ""
        rows.append(f"{pool.get('internal_api')} {pool.get('version')}{extra}, "
                    f"{pool.get('num_threads')} threads ({pool.get('filepath')})")
    return rows or ["none found"]


def _opencl() -> list:
    import pyopencl as cl  # optional: reported when installed
    rows = []
    for p in cl.get_platforms():
        devices = _probe(lambda: ", ".join(d.name for d in p.get_devices()))
        rows.append(f"{p.name}: {p.version} — {devices}")
    return rows or ["no platforms"]


def _cuda() -> str:
    if _version("cupy-cuda12x") == "not installed" and _version("cupy") == "not installed":
        return "cupy not installed"
    import cupy  # optional: reported when installed
    runtime = _probe(lambda: cupy.cuda.runtime.runtimeGetVersion())
    driver = _probe(lambda: cupy.cuda.runtime.driverGetVersion())
    count = _probe(lambda: cupy.cuda.runtime.getDeviceCount())
    return f"cupy {cupy.__version__}; CUDA runtime {runtime}, driver {driver}, devices {count}"


def _mpi() -> str:
    if _version("mpi4py") == "not installed":
        return "mpi4py not installed"
    import mpi4py  # optional: reported when installed
    mpi4py.rc.initialize = False   # report the library without starting MPI
    from mpi4py import MPI  # optional: reported when installed
    library = " ".join(MPI.Get_library_version().splitlines()[0].split())
    return f"mpi4py {mpi4py.__version__}; {library}"


def _backends() -> list:
    rows = []
    for name in registry.names():
        reason = registry.unavailable_reason(name)
        if reason is not None:
            rows.append(f"{name}: unavailable — {reason}")
            continue
        backend = registry.get(name)
        devices = ", ".join(f"{name}:{i} ({backend.device_name(i)})"
                            for i in range(backend.device_count()))
        rows.append(f"{name}: available — {devices or 'no devices'}")
    return rows


def _plugins() -> list:
    rows = []
    for ep in importlib.metadata.entry_points(group="ember.backends"):
        dist = getattr(ep, "dist", None)
        where = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "?"
        rows.append(f"{ep.name} = {ep.value} ({where})")
    return rows


def get_env_info() -> list:
    """(section, [lines]) pairs: the report's content."""
    return [
        ("ember", [f"{ember.__version__} at {os.path.dirname(ember.__file__)}"]),
        ("Python", [f"{sys.version.split()[0]} ({sys.executable})"]),
        ("OS", [platform.platform()]),
        ("CPU", [_probe(_cpu)]),
        ("numpy / scipy", [f"numpy {_version('numpy')}, scipy {_version('scipy')}, "
                           f"ml_dtypes {_version('ml_dtypes')}"]),
        ("BLAS", _probe(_blas)),
        ("environment", [f"{k}={os.environ[k]}" for k in _ENV_VARS if k in os.environ] +
         [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("EMBER_")]
         or ["(none of the variables ember or its BLAS read are set)"]),
        ("backends", _probe(_backends)),
        ("backend entry points", _probe(_plugins)),
        ("OpenCL", [f"pyopencl {_version('pyopencl')}, pocl-binary-distribution "
                    f"{_version('pocl-binary-distribution')}"] +
         (_probe(_opencl) if _version("pyopencl") != "not installed" else [])),
        ("CUDA", [_probe(_cuda)]),
        ("MPI", [_probe(_mpi)]),
        ("torch", [_version("torch")]),
        ("other", [f"rich {_version('rich')}, pluggy {_version('pluggy')}, safetensors "
                   f"{_version('safetensors')}, threadpoolctl {_version('threadpoolctl')}, "
                   f"onnx {_version('onnx')}, scikit-learn {_version('scikit-learn')}"]),
    ]


def main() -> int:
    for section, lines in get_env_info():
        if isinstance(lines, str):   # a probe that failed as a whole
            lines = [lines]
        print(f"{section}:")
        for line in lines:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
