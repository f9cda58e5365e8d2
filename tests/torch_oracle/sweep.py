"""Whole-database sweeps (the report script and the tests run these) and their sizes.

* ``QUICK`` — the default test run's slice: for each OpInfo one dtype (float64 where the OpInfo
  has it, else its first of ``FORWARD_DTYPES``) and its first ``QUICK_SAMPLES`` samples, on the
  cpu; on opencl only for every ``QUICK_OPENCL_EVERY``-th OpInfo (OpenCL's kernels compile on
  first use, the slice's largest cost). ModuleInfos: the first input, float64, train and eval;
  OptimizerInfos: each optim_input with the default implementation.
* full — every sample in every dtype of ``FORWARD_DTYPES`` on every device, every ModuleInfo
  input in float32 and float64, every OptimizerInfo input and implementation: ~190,000 outcomes,
  about 8 minutes of CPU time (7.3 min wall on an idle machine with a cold OpenCL kernel cache;
  several times that on a loaded one), too much beside the rest of CI, so
  ``bench/torch_oracle_report.py`` runs it; ``pytest -m slow`` runs it for the representative
  subset ``slow_subset`` (every ``SLOW_EVERY``-th OpInfo and every
  ``SLOW_MODULE_EVERY``-th ModuleInfo, in full, but for the few that alone take minutes:
  ``SLOW_HEAVY``) and for every OptimizerInfo.
"""
from __future__ import annotations

import fnmatch
import time

import torch

from . import opinfo

QUICK_SAMPLES = 1
QUICK_OPENCL_EVERY = 3
SLOW_EVERY = 8
SLOW_MODULE_EVERY = 6
# entries of the slow subset whose full sweep alone costs over 30 s of CPU time (measured with
# bench/torch_oracle_report.py -v); the report still sweeps them
SLOW_HEAVY = {"nn.functional.max_pool1d", "igamma", "nn.LinearCrossEntropyLoss"}


def quick_dtypes(op):
    supported = op.supported_dtypes("cpu")
    for d in (torch.float64,) + opinfo.FORWARD_DTYPES:
        if d in supported:
            return (d,)
    return ()


def quick_devices(index, devices):
    """The devices the quick slice checks the ``index``-th entry of a database on."""
    return [d for d in devices if d == "cpu" or index % QUICK_OPENCL_EVERY == 0]


def slow_subset(entries, every, key):
    """(index, entry) of the representative subset the slow tests sweep in full."""
    return [(i, e) for i, e in enumerate(entries) if i % every == 0 and key(e) not in SLOW_HEAVY]


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
    for i, op in enumerate(opinfo.op_db()):
        k = opinfo.key(op)
        if not fnmatch.fnmatch(k, pattern):
            continue
        t0 = time.perf_counter()
        got = opinfo_outcomes(op, quick_devices(i, devices) if quick else devices, quick, areas)
        timings[k] = time.perf_counter() - t0
        outcomes += got
        if progress:
            progress(k, got, timings[k])
    return outcomes, timings
