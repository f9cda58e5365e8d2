"""The backend's CUDA C compiled as host C++ with g++ (a few defines stand in for the CUDA
qualifiers and thread indices; every kernel loops grid-stride, so one "thread" covers all
elements) and called through ctypes as cupy calls a RawKernel. With a simulator, a launch is
work on the current stream: it reads its ``const`` pointer arguments as that stream sees them
and writes the others (their parameters are read from the kernel's C signature)."""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from .arrays import DeviceArray

HOST_SHIM = r"""
#include <math.h>
#include <cmath>
struct ember_dim3 { unsigned int x, y, z; };
static const ember_dim3 threadIdx = {0u, 0u, 0u}, blockIdx = {0u, 0u, 0u};
static const ember_dim3 blockDim = {1u, 1u, 1u}, gridDim = {1u, 1u, 1u};
#define __global__
#define __device__
#define __forceinline__ inline
static inline float cospif(float x) { return cosf((float)M_PI * x); }
static inline double cospi(double x) { return cos(M_PI * x); }
"""


def have_compiler() -> bool:
    return shutil.which("g++") is not None


_CT = {np.int64: ctypes.c_longlong, np.uint64: ctypes.c_ulonglong, np.int32: ctypes.c_int,
       np.float32: ctypes.c_float, np.float64: ctypes.c_double}
_BUILD_DIR = None
_BUILD_LOCK = threading.Lock()


def _written_params(source, name):
    """For each parameter of kernel ``name``: True when it is a pointer the kernel may write
    (not ``const``)."""
    m = re.search(r"void\s+" + re.escape(name) + r"\s*\(([^)]*)\)", source)
    if m is None:
        return None
    return ["*" in p and "const" not in p for p in m.group(1).split(",")]


class HostFunction:
    def __init__(self, fn, name, writes=None, sim=None):
        self._fn, self.name, self._writes, self._sim = fn, name, writes, sim
        self.launches = 0

    def __call__(self, grid, block, args):
        sim = self._sim
        stream = stamp = None
        unreadable = False
        if sim is not None:
            stream = sim.current_stream()
            stamp = stream.issue()
        cargs, outputs = [], []
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                if isinstance(a, DeviceArray) and sim is not None:
                    writes = self._writes is None or self._writes[k]
                    unreadable |= not sim.arrays.check_readable(a, stream)
                    if writes:
                        sim.arrays.writable(a, stream, stamp)
                        outputs.append(a)
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            else:
                cargs.append(_CT[type(a)](a))
        self.launches += 1
        self._fn(*cargs)
        if unreadable:   # the kernel read memory its stream could not know: its results too
            for a in outputs:
                a._blk.poisoned = True


class HostModule:
    """A CUDA C program compiled with g++ as host code (see the module docstring)."""

    def __init__(self, source, options=(), sim=None):
        global _BUILD_DIR
        with _BUILD_LOCK:
            if _BUILD_DIR is None:
                _BUILD_DIR = tempfile.mkdtemp(prefix="ember-cuda-host-")
            digest = hashlib.sha1(source.encode()).hexdigest()[:16]
            lib = os.path.join(_BUILD_DIR, f"k{digest}.so")
            if not os.path.exists(lib):
                src = os.path.join(_BUILD_DIR, f"k{digest}.cpp")
                with open(src, "w") as f:
                    f.write(HOST_SHIM + source)
                flags = ["-ffp-contract=off"] if "--fmad=false" in options else []
                r = subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-std=c++14", *flags,
                                    "-o", lib, src], capture_output=True, text=True)
                if r.returncode:
                    raise RuntimeError(f"g++ failed on the CUDA source:\n{r.stderr[:4000]}")
        self._lib = ctypes.CDLL(lib)
        self._source, self._sim = source, sim
        self.functions = {}

    def compile(self):
        """cupy.RawModule.compile: built already (by g++, when made)."""

    def get_function(self, name):
        fn = getattr(self._lib, name)
        fn.restype = None
        return self.functions.setdefault(
            name, HostFunction(fn, name, _written_params(self._source, name), self._sim))
