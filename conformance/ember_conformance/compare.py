"""``ember-conformance --compare old.json new.json``: what regressed, what improved, what moved
off (or onto) the CPU fallback between two ``--json`` files, so a backend's CI can gate on "no
regressions". Compared by the summary's units: cells (op entry × dtype), gradcheck and
gradgradcheck rows, contract cases.

A regression: a unit that did not fail and now fails, or one that passed (natively or on the
fallback) and is now unsupported. An improvement: a failure that no longer fails, or an
unsupported or skipped unit that now passes. Units present in only one file are counted, not
judged (a run of a subset is not a regression).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

from .selection import OP_SUITES, ROW_SUITES
from .summary import cell_status


class CompareError(ValueError):
    """A file that is not an ember-conformance --json output (one line)."""


@dataclass
class Change:
    unit: str        # "cell", "gradcheck", "gradgradcheck", "contract"
    name: str        # "mul [float32]", "streams.events_and_timing", ...
    old: str
    new: str
    detail: str = ""   # the new run's message for the unit
    repro: str = ""    # the new run's reproducing command, when it fails


@dataclass
class Comparison:
    old_backend: str
    new_backend: str
    regressions: list = field(default_factory=list)
    improvements: list = field(default_factory=list)
    off_fallback: list = field(default_factory=list)
    onto_fallback: list = field(default_factory=list)
    only_old: list = field(default_factory=list)
    only_new: list = field(default_factory=list)
    common: int = 0


def load(path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise CompareError(f"--compare: cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise CompareError(f"--compare: {path} is not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise CompareError(f"--compare: {path} is not an ember-conformance --json file (it has "
                           f"no 'results' list)")
    return data


def units(data) -> dict:
    """(unit, name) -> (status, message, repro) for every unit of a --json file."""
    rows = [SimpleNamespace(**{"message": "", "repro": "", **r}) for r in data["results"]]
    out, grouped = {}, {}
    for r in rows:
        if r.suite in OP_SUITES:
            grouped.setdefault(f"{r.name} [{r.dtype}]", []).append(r)
        elif r.suite in ROW_SUITES:
            out[(r.suite, r.name)] = (r.status, r.message, r.repro)
        else:
            out[("contract", f"{r.suite}.{r.name}")] = (r.status, r.message, r.repro)
    for name, cell_rows in grouped.items():
        status = cell_status(cell_rows)
        worst = next((r for r in cell_rows if r.status == status), cell_rows[0])
        out[("cell", name)] = (status, worst.message, worst.repro)
    return out


def compare(old: dict, new: dict) -> Comparison:
    before, after = units(old), units(new)
    result = Comparison(old.get("backend", "?"), new.get("backend", "?"))
    for key in before.keys() | after.keys():
        if key not in after:
            result.only_old.append(key)
            continue
        if key not in before:
            result.only_new.append(key)
            continue
        result.common += 1
        was, now = before[key][0], after[key][0]
        change = Change(key[0], key[1], was, now, after[key][1], after[key][2])
        if now == "fail" and was != "fail" or was in ("pass", "fallback") and now == "unsupported":
            result.regressions.append(change)
        elif was == "fail" and now != "fail" or \
                was in ("unsupported", "skip") and now in ("pass", "fallback"):
            result.improvements.append(change)
        elif was == "fallback" and now == "pass":
            result.off_fallback.append(change)
        elif was == "pass" and now == "fallback":
            result.onto_fallback.append(change)
    for items in (result.regressions, result.improvements, result.off_fallback,
                  result.onto_fallback):
        items.sort(key=lambda c: (c.unit, c.name))
    return result


def _names(changes, limit=60) -> str:
    names = [c.name for c in changes]
    more = f" … and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def print_comparison(cmp: Comparison, old_path, new_path, out=print) -> None:
    out(f"ember-conformance --compare: {old_path} ({cmp.old_backend}) → {new_path} "
        f"({cmp.new_backend}); {cmp.common} units in both (cells, gradcheck/gradgradcheck rows, "
        f"contract cases)")
    if cmp.old_backend != cmp.new_backend:
        out(f"note: the files are for different backends ({cmp.old_backend}, {cmp.new_backend})")
    out(f"\n✗ regressions ({len(cmp.regressions)})")
    for c in cmp.regressions:
        out(f"  {c.unit} {c.name}: {c.old} → {c.new}" + (f": {c.detail}" if c.detail else ""))
        if c.repro:
            out(f"      reproduce: {c.repro}")
    out(f"\n✓ improvements ({len(cmp.improvements)})")
    for c in cmp.improvements:
        out(f"  {c.unit} {c.name}: {c.old} → {c.new}")
    out(f"\n↑ moved off the CPU fallback ({len(cmp.off_fallback)}): now native")
    if cmp.off_fallback:
        out("  " + _names(cmp.off_fallback))
    if cmp.onto_fallback:
        out(f"\n↺ moved onto the CPU fallback ({len(cmp.onto_fallback)}): still passing")
        out("  " + _names(cmp.onto_fallback))
    if cmp.only_old or cmp.only_new:
        out(f"\nnot compared: {len(cmp.only_old)} units only in {old_path}, "
            f"{len(cmp.only_new)} only in {new_path}")
    out(f"\n{'FAILED' if cmp.regressions else 'OK'}: {len(cmp.regressions)} regressions, "
        f"{len(cmp.improvements)} improvements, {len(cmp.off_fallback)} moved off the fallback")
