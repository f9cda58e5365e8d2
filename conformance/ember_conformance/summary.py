"""The counts every report states, defined once so the console, JSON, JUnit and HTML agree.

Units:
- a *cell* is one op entry at one dtype; its status is the worse of its forward and gradient
  checks (fail > fallback > pass > unsupported > skip, a skipped gradient does not count);
- a *check* is one sample compared: its outputs (or the error it raised) against the CPU's, its
  gradients against the CPU's, or its derivatives differenced (gradcheck, gradgradcheck);
- a *row* of gradcheck/gradgradcheck is one op entry's float64 derivative check on the CPU; a
  *row* of vmap/jvp is one op entry's ember.func check (vmap against a loop, jvp against finite
  differences on the CPU or against the CPU elsewhere);
- a *case* is one contract case (the coverage check counts as one).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from .selection import OP_SUITES, ROW_SUITES

STATUS_ORDER = ["fail", "fallback", "pass", "unsupported", "skip"]

UNITS = {
    "cell": "one op entry at one dtype; forward and gradient checks together (the worse wins)",
    "check": "one sample compared: outputs or raised error vs the CPU, gradients vs the CPU, "
             "or derivatives vs finite differences",
    "row": "one op entry's float64 derivative check on the CPU (gradcheck, gradgradcheck)",
    "case": "one contract case",
    "worst": "largest error as a multiple of the allowed tolerance atol + rtol·|expected|",
    "max_abs": "largest |actual - expected| of the sample shown",
    "max_rel": "largest |actual - expected| / |expected| of the sample shown (nonzero expected)",
}


# the same, short enough for one console line
UNITS_LINE = ("units: cell = op entry × dtype (forward and gradient; the worse wins) · check = "
              "one sample compared with the CPU or differenced · errors: max abs, max rel, and "
              "× tolerance (atol + rtol·|expected|)")


def cell_status(rows) -> str:
    statuses = {r.status for r in rows if r.status != "skip"} or {"skip"}
    return next(s for s in STATUS_ORDER if s in statuses)


def cells(results) -> dict:
    """(entry name, dtype) -> its forward and gradient results, in run order."""
    grouped = defaultdict(list)
    for r in results:
        if r.suite in OP_SUITES:
            grouped[(r.name, r.dtype)].append(r)
    return grouped


def _ordered(counter) -> dict:
    return {s: counter[s] for s in STATUS_ORDER if counter[s]}


def tally(results) -> dict:
    """The counts, by unit (see UNITS); JSON stores this dict as its "summary"."""
    grouped = cells(results)
    out = {
        "entries": len({name for name, _ in grouped}),
        "cells": _ordered(Counter(cell_status(rows) for rows in grouped.values())),
        "checks": sum(r.checks for r in results if r.suite in OP_SUITES + ROW_SUITES),
    }
    for suite in ROW_SUITES:
        out[suite] = _ordered(Counter(r.status for r in results if r.suite == suite))
    out["contracts"] = _ordered(Counter(r.status for r in results
                                        if r.suite not in OP_SUITES + ROW_SUITES))
    return out


def failures(results) -> list:
    """Failing results, op checks first (forward, gradient, finite differences), then
    contracts."""
    order = {s: i for i, s in enumerate(OP_SUITES + ROW_SUITES)}
    return sorted((r for r in results if r.status == "fail"),
                  key=lambda r: order.get(r.suite, len(order)))


def failed_units(summary) -> dict:
    """unit -> how many failed, for the verdict line ("3 cells", "1 contract case")."""
    units = {("cell", "cells"): summary["cells"].get("fail", 0),
             ("gradcheck row", "gradcheck rows"): summary.get("gradcheck", {}).get("fail", 0),
             ("gradgradcheck row", "gradgradcheck rows"):
                 summary.get("gradgradcheck", {}).get("fail", 0),
             ("vmap row", "vmap rows"): summary.get("vmap", {}).get("fail", 0),
             ("jvp row", "jvp rows"): summary.get("jvp", {}).get("fail", 0),
             ("contract case", "contract cases"): summary["contracts"].get("fail", 0)}
    return {names[n != 1]: n for names, n in units.items() if n}


def counts_text(counter) -> str:
    return ", ".join(f"{n} {s}" for s, n in counter.items()) or "none"


def error_text(r) -> str:
    """A failure's (or worst sample's) errors against its tolerance, units stated."""
    parts = []
    if r.max_abs is not None:
        parts.append(f"max abs error {r.max_abs:.3g}")
    if r.max_rel is not None:
        parts.append(f"max rel error {r.max_rel:.3g}")
    if r.rtol is not None:
        parts.append(f"allowed atol {r.atol:.2g} + rtol {r.rtol:.2g}·|expected|")
    if r.worst and r.worst != float("inf"):
        parts.append(f"worst element {r.worst:.3g}× its tolerance")
    return "; ".join(parts)
