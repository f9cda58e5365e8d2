"""Run a selection on one backend and collect ``Result`` rows, recording which registry ops ran
on the CPU fallback (from their ``CPUFallbackWarning``) instead of printing each warning."""
from __future__ import annotations

import re
import time
import traceback
import warnings
from dataclasses import dataclass, field

import ember
from ember.func import VmapFallbackWarning
from ember.func import _handler as _func_handler
from ember.runtime.fallback_warning import CPUFallbackWarning

from .checks import Result, check_forward, check_gradient, holds_values, reads_values
from .finite_differences import check_gradcheck, check_gradgradcheck
from .func_checks import check_jvp, check_vmap
from .opdb import uncovered_ops
from .selection import Selection, select

_FALLBACK_OP = re.compile(r"op '([^']+)' has no kernel for backend '([^']+)'")


@dataclass
class RunOutput:
    selection: Selection
    results: list
    fallback_ops: list = field(default_factory=list)   # registry ops run on the CPU fallback
    seconds: float = 0.0
    vmap_fallback_ops: list = field(default_factory=list)   # ops without a batching rule


class FallbackRecorder:
    """Inside ``with``: CPUFallbackWarning is recorded (op names in ``ops``), not shown; every
    other warning is shown as usual."""

    def __init__(self):
        self.ops = set()
        self.vmap_ops = set()

    def __enter__(self):
        self._saved = warnings.catch_warnings()
        self._saved.__enter__()
        warnings.simplefilter("always", CPUFallbackWarning)
        warnings.simplefilter("always", VmapFallbackWarning)
        show = warnings.showwarning

        def record(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, VmapFallbackWarning):
                return   # the handler reports these ops to vmap_ops (even once warned)
            if issubclass(category, CPUFallbackWarning):
                found = _FALLBACK_OP.search(str(message))
                self.ops.add(found.group(1) if found else str(message))
            else:
                show(message, category, filename, lineno, file, line)
        warnings.showwarning = record
        _func_handler.recorders.append(self.vmap_ops)
        return self

    def __exit__(self, *exc):
        _func_handler.recorders.remove(self.vmap_ops)
        return self._saved.__exit__(*exc)


def total_steps(selection: Selection) -> int:
    return (sum(len(selection.entry_dtypes(i)) for i in selection.infos) + len(selection.cases)
            + int(selection.coverage))


def execute(selection: Selection, progress=None) -> RunOutput:
    """Every selected (op entry × dtype) forward and gradient check, the CPU's derivatives
    against finite differences (cpu only), the coverage check, then the contract cases."""
    advance = progress or (lambda n=1, desc="": None)
    device, suites, only = selection.device, selection.op_suites, selection.sample
    from ember.runtime.registry import registry
    device_dtypes = registry.get(device.type).dtypes
    results = []
    t0 = time.perf_counter()
    with FallbackRecorder() as fallbacks:
        if selection.coverage:
            missing = uncovered_ops()
            results.append(Result("coverage", "op database covers the registry", "-",
                                  "pass" if not missing else "fail", message="" if not missing
                                  else "no entry for: " + ", ".join(missing)))
            advance(1, "coverage")
        for info in selection.infos:
            forwards = []
            for dtype in selection.entry_dtypes(info):
                if "forward" in suites:
                    forwards.append(_guarded("forward", info.name, dtype,
                                             lambda: check_forward(info, dtype, device, only)))
                    results.append(forwards[-1])
                if "gradient" in suites:
                    results.append(_guarded("gradient", info.name, dtype,
                                            lambda: check_gradient(info, dtype, device, only)))
                advance(1, info.name)
            if forwards and all(r.status == "pass" and r.compared == 0 for r in forwards) and \
                    only is None and selection.dtypes is None:
                # every sample raised on the reference, at every dtype: errors agreed, but the
                # entry compares no values, so it would pass a backend that computes nothing
                results.append(Result("forward", info.name, "-", "fail", float("inf"),
                                      "every sample of every dtype raised on the CPU "
                                      "reference; first: " + forwards[0].message))
            # vmap runs at the entry's first dtype the backend has
            dtypes = [d for d in selection.entry_dtypes(info)
                      if ember._dtype.as_dtype(d) in device_dtypes] or \
                selection.entry_dtypes(info)
            if "vmap" in suites and dtypes:
                results.append(_guarded("vmap", info.name, dtypes[0],
                                        lambda: check_vmap(info, dtypes[0], device, only),
                                        device))
            if "jvp" in suites and (selection.dtypes is None or device.type != "cpu" or
                                    "float64" in selection.dtypes):
                results.append(_guarded("jvp", info.name, "-",
                                        lambda: check_jvp(info, device, only_sample=only),
                                        device))
            if selection.runs_finite_differences:
                if "gradcheck" in suites:
                    results.append(_guarded("gradcheck", info.name, "float64",
                                            lambda: check_gradcheck(info, device,
                                                                    only_sample=only)))
                if "gradgradcheck" in suites:
                    results.append(_guarded("gradgradcheck", info.name, "float64",
                                            lambda: check_gradgradcheck(info, device,
                                                                        only_sample=only)))
        for suite, case in selection.cases:
            results.append(_run_case(suite, case, device))
            advance(1, case.__name__)
    seen = set(fallbacks.ops)
    for r in results:
        seen.update(r.fallback_ops)
    return RunOutput(selection, results, sorted(seen), time.perf_counter() - t0,
                     sorted(fallbacks.vmap_ops))


def _run_case(suite, case, device) -> Result:
    t0 = time.perf_counter()
    try:
        outcome = case(device)
        status = "skip" if isinstance(outcome, str) else "pass"
        msg = outcome[len("skip: "):] if isinstance(outcome, str) else ""
    except Exception as e:  # a contract violation is a result, not a crash
        status, msg = "fail", f"{type(e).__name__}: {e}" if str(e) else \
            f"{type(e).__name__} (no message) at {_where(e)}"
    return Result(suite, case.__name__, "-", status, 0.0, msg,
                  int((time.perf_counter() - t0) * 1e3))


def _where(error) -> str:
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}: {frame.line}"


def _guarded(suite, name, dtype, fn, device=None):
    try:
        return fn()
    except Exception as e:  # a crash inside a check is a failure of that check
        tb = traceback.format_exception_only(type(e), e)[-1].strip()
        if device is not None and not holds_values(device) and reads_values(e, device):
            # a data-less device: the check (or the op) needs values it cannot have
            return Result(suite, name, dtype, "unsupported", 0.0, f"needs values: {tb}")
        return Result(suite, name, dtype, "fail", float("inf"), f"check crashed: {tb}")


def run(backend: str, ops_pattern: str | None = None, *, suites=None, progress=None,
        include_contracts=True, check_fd=True) -> list:
    """The results of a run (the Python form of the command line): ``suites`` as ``--suites``
    (a list or a comma-separated string); ``check_fd=False`` leaves out gradcheck and
    gradgradcheck."""
    if isinstance(suites, (list, tuple)):
        suites = ",".join(suites)
    selection = select(backend, ops_pattern, suites=suites, no_contracts=not include_contracts)
    if not check_fd:
        selection.op_suites = tuple(s for s in selection.op_suites
                                    if s not in ("gradcheck", "gradgradcheck"))
    return execute(selection, progress).results
