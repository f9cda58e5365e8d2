"""Run the suite on one backend and collect ``Result`` rows."""
from __future__ import annotations

import fnmatch
import time
import traceback

import ember

from . import contracts
from .checks import Result, check_finite_differences, check_forward, check_gradient
from .opdb import all_opinfos, uncovered_ops


def plan(ops_pattern: str | None = None, suites=None):
    """The op entries and contract cases a run would execute."""
    infos = [i for i in all_opinfos()
             if ops_pattern is None or any(fnmatch.fnmatch(i.name, p.strip())
                                           for p in ops_pattern.split(","))]
    cases = [(suite, case) for suite, fns in contracts.SUITES.items()
             if suites is None or suite in suites for case in fns]
    return infos, cases


def run(backend: str, ops_pattern: str | None = None, *, suites=None, progress=None,
        include_contracts=True, check_fd=True) -> list:
    """Every (op entry × dtype) forward and gradient check, then the contract suites. On the
    CPU — the reference itself — gradients are also checked against finite differences."""
    device = ember.device(backend) if ":" in backend else ember._device.as_device(backend)
    infos, cases = plan(ops_pattern, suites)
    if not include_contracts:
        cases = []
    results = []
    total = sum(len(i.dtypes) for i in infos) + len(cases) + 1
    advance = progress or (lambda n=1, desc="": None)

    missing = uncovered_ops()
    results.append(Result("coverage", "op database covers the registry", "-",
                          "pass" if not missing else "fail",
                          message="" if not missing else "no entry for: " + ", ".join(missing)))
    advance(1, "coverage")
    for info in infos:
        for dtype in info.dtypes:
            results.append(_guarded("forward", info.name, dtype,
                                    lambda: check_forward(info, dtype, device)))
            results.append(_guarded("gradient", info.name, dtype,
                                    lambda: check_gradient(info, dtype, device)))
            advance(1, info.name)
        forwards = [r for r in results[-2 * len(info.dtypes):] if r.suite == "forward"]
        if forwards and all(r.status == "pass" and r.compared == 0 for r in forwards):
            # every sample raised on the reference, at every dtype: errors agreed, but the entry
            # compares no values, so it would pass a backend that computes nothing
            results.append(Result("forward", info.name, "-", "fail", float("inf"),
                                  "every sample of every dtype raised on the CPU reference; "
                                  "first: " + forwards[0].message))
        if device.type == "cpu" and check_fd:
            results.append(_guarded("gradcheck", info.name, "float64",
                                    lambda: check_finite_differences(info, device)))
    for suite, case in cases:
        t0 = time.perf_counter()
        try:
            outcome = case(device)
            status = "skip" if isinstance(outcome, str) else "pass"
            msg = outcome[len("skip: "):] if isinstance(outcome, str) else ""
        except Exception as e:  # a contract violation is a result, not a crash
            status, msg = "fail", f"{type(e).__name__}: {e}"
        results.append(Result(suite, case.__name__, "-", status, 0.0, msg,
                              int((time.perf_counter() - t0) * 1e3)))
        advance(1, case.__name__)
    return results


def _guarded(suite, name, dtype, fn):
    try:
        return fn()
    except Exception as e:  # a crash inside a check is a failure of that check
        tb = traceback.format_exception_only(type(e), e)[-1].strip()
        return Result(suite, name, dtype, "fail", float("inf"), f"check crashed: {tb}")
