"""Whole-database sweeps (the report script and the slow tests run these) and their two sizes.

``QUICK`` is the default test run's slice: float64 only (where the OpInfo has no float64, its first
supported dtype of ``FORWARD_DTYPES``) and the first ``QUICK_SAMPLES`` samples of each OpInfo.
``FULL`` is every sample in every dtype of ``FORWARD_DTYPES``.
"""
from __future__ import annotations

import fnmatch
import time

import torch

from . import opinfo

QUICK_SAMPLES = 2


def quick_dtypes(op):
    supported = op.supported_dtypes("cpu")
    for d in (torch.float64,) + opinfo.FORWARD_DTYPES:
        if d in supported:
            return (d,)
    return ()


def opinfo_outcomes(op, devices, quick=False, areas=("forward", "method", "inplace", "backward")):
    limit = QUICK_SAMPLES if quick else None
    dtypes = quick_dtypes(op) if quick else opinfo.FORWARD_DTYPES
    fwd = tuple(a for a in areas if a != "backward")
    out = opinfo.check_forward(op, devices, dtypes, fwd, limit) if fwd else []
    if "backward" in areas:
        out += opinfo.check_backward(op, devices, limit)
    return out


def sweep_opinfos(devices, quick=False, pattern="*", areas=("forward", "method", "inplace",
                                                             "backward"), progress=None):
    outcomes, timings = [], {}
    for op in opinfo.op_db():
        k = opinfo.key(op)
        if not fnmatch.fnmatch(k, pattern):
            continue
        t0 = time.perf_counter()
        got = opinfo_outcomes(op, devices, quick, areas)
        timings[k] = time.perf_counter() - t0
        outcomes += got
        if progress:
            progress(k, got, timings[k])
    return outcomes, timings
