"""Reports of a run: the terminal summary, JSON and JUnit XML (the HTML page is html_report.py).

All of them state the counts of ``summary.tally`` in the units of ``summary.UNITS``, list the
failures first with their errors and a command reproducing each, and list the registry ops that
ran on the CPU fallback once.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from .environment import device_line
from .selection import FD_SUITES, FUNC_SUITES, OP_SUITES, ROW_SUITES, repro_command
from .summary import (UNITS, UNITS_LINE, cell_status, cells, counts_text, error_text, failed_units,
                      failures, tally)

FORMAT = "ember-conformance/2"
SYMBOLS = {"pass": "✓", "fail": "✗", "fallback": "↺", "unsupported": "⊘", "skip": "·"}
STYLES = {"pass": "green", "fail": "bold red", "fallback": "yellow", "unsupported": "magenta",
          "skip": "dim"}


def _failure_lines(r, backend) -> list:
    head = f"{r.suite} {r.name}" + (f" [{r.dtype}]" if r.dtype != "-" else "")
    if r.sample_index is not None:
        head += f" sample {r.sample_index}"
    lines = [head, r.message]
    if error_text(r):
        lines.append(error_text(r))
    if r.fallback_ops:
        lines.append("ran on the CPU fallback: " + ", ".join(r.fallback_ops))
    lines.append("reproduce: " + repro_command(backend, r))
    return lines


def print_summary(output, env, console=None):
    """Failures first (each with its errors and a reproducing command), then the CPU-fallback
    list, the contracts, and the counts with their units; the last line is the verdict."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    console = console or Console()
    results, backend = output.results, output.selection.backend
    summary = tally(results)
    console.print(f"[bold]ember-conformance[/bold] — backend {escape(backend)}: "
                  f"{escape(device_line(env))}")
    failed = failures(results)
    if failed:
        console.print(f"\n[bold red]FAILURES ({len(failed)})[/bold red]")
        for r in failed:
            first, *rest = _failure_lines(r, backend)
            console.print(f"[bold red]{SYMBOLS['fail']}[/bold red] [bold]{escape(first)}[/bold]")
            for line in rest:
                console.print("    " + escape(line), soft_wrap=True)
    if output.fallback_ops:
        console.print(f"\n[yellow]{SYMBOLS['fallback']} CPU fallback[/yellow]: "
                      f"{len(output.fallback_ops)} registry ops ran on the CPU instead of "
                      f"{escape(backend)} (their cells count as 'fallback'; filter the warning "
                      f"with ember.runtime.CPUFallbackWarning):")
        console.print("    " + escape(", ".join(output.fallback_ops)))
    vmap_fallback = getattr(output, "vmap_fallback_ops", None)
    if vmap_fallback:
        console.print(f"\n[yellow]{SYMBOLS['fallback']} vmap fallback[/yellow]: "
                      f"{len(vmap_fallback)} registry ops have no batching rule and ran once per "
                      f"example under ember.func.vmap (warning category "
                      f"ember.func.VmapFallbackWarning):")
        console.print("    " + escape(", ".join(vmap_fallback)))
    contract = [r for r in results if r.suite not in OP_SUITES + ROW_SUITES]
    if contract:
        table = Table(title="contracts", title_justify="left")
        for col in ("suite", "case", "status", "message"):
            table.add_column(col, overflow="fold")
        for r in contract:
            style = STYLES.get(r.status, "")
            table.add_row(r.suite, r.name, f"[{style}]{SYMBOLS[r.status]} {r.status}[/{style}]",
                          escape(r.message[:200]))
        console.print(table)
    unsupported = [r for r in results if r.suite == "gradgradcheck" and r.status == "unsupported"]
    for r in unsupported:
        console.print(f"[magenta]{SYMBOLS['unsupported']}[/magenta] gradgradcheck "
                      f"{escape(r.name)}: {escape(r.message)}")
    console.print()
    if summary["cells"]:
        console.print(f"[bold]{summary['entries']} op entries[/bold] → "
                      f"{sum(summary['cells'].values())} cells: {counts_text(summary['cells'])}")
    if summary["checks"]:
        console.print(f"{summary['checks']} checks")
    for suite in FD_SUITES:
        if summary[suite]:
            console.print(f"{suite} (cpu, float64, against finite differences): "
                          f"{sum(summary[suite].values())} rows: {counts_text(summary[suite])}")
    for suite, what in zip(FUNC_SUITES, ("against a loop over the batch",
                                         "against finite differences / the cpu")):
        if summary.get(suite):
            console.print(f"{suite} (ember.func, {what}): {sum(summary[suite].values())} rows: "
                          f"{counts_text(summary[suite])}")
    if summary["contracts"]:
        console.print(f"contracts: {sum(summary['contracts'].values())} cases: "
                      f"{counts_text(summary['contracts'])}")
    console.print(f"[dim]{escape(UNITS_LINE)}[/dim]")
    bad = failed_units(summary)
    verdict = ("[bold red]FAILED[/bold red]: " + ", ".join(f"{n} {u}" for u, n in bad.items())
               if bad else "[bold green]PASSED[/bold green]")
    console.print(f"{verdict} in {output.seconds:.1f} s")


def _row(r, backend) -> dict:
    row = dict(r.__dict__)
    row["worst"] = None if r.worst == float("inf") else r.worst
    row["fallback_ops"] = list(r.fallback_ops)
    if r.status == "fail":
        row["repro"] = repro_command(backend, r)
    return row


def to_json(output, env) -> dict:
    backend = output.selection.backend
    return {"format": FORMAT, "backend": backend, "environment": env, "units": UNITS,
            "summary": tally(output.results), "seconds": round(output.seconds, 3),
            "fallback_ops": output.fallback_ops,
            "vmap_fallback_ops": list(getattr(output, "vmap_fallback_ops", [])),
            "failures": [_row(r, backend) for r in failures(output.results)],
            "results": [_row(r, backend) for r in output.results]}


def write_json(output, env, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(output, env), f, indent=1)


_UNIT_OF = {"cells": "cell", "gradcheck": "row", "gradgradcheck": "row", "vmap": "row",
            "jvp": "row", "contracts": "case"}


def write_junit(output, env, path):
    """One <testsuite> per unit: "cells" (a testcase per op entry × dtype), "gradcheck" and
    "gradgradcheck" (a testcase per row), "contracts" (per case), so each suite's tests= is the
    console's count."""
    backend, results = output.selection.backend, output.results
    root = ET.Element("testsuites", name=f"ember-conformance.{backend}")
    groups = {"cells": [(f"{name}[{dtype}]", cell_status(rows), rows)
                        for (name, dtype), rows in cells(results).items()]}
    for suite in ROW_SUITES:
        groups[suite] = [(r.name, r.status, [r]) for r in results if r.suite == suite]
    groups["contracts"] = [(f"{r.suite}.{r.name}", r.status, [r]) for r in results
                           if r.suite not in OP_SUITES + ROW_SUITES]
    for group, cases in groups.items():
        if not cases:
            continue
        suite = ET.SubElement(root, "testsuite", name=f"{backend}.{group}", tests=str(len(cases)),
                              failures=str(sum(st == "fail" for _, st, _ in cases)),
                              skipped=str(sum(st in ("skip", "unsupported") for _, st, _ in cases)))
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="unit", value=UNITS[_UNIT_OF[group]])
        for name, status, rows in cases:
            case = ET.SubElement(suite, "testcase", classname=f"{backend}.{group}", name=name)
            if status == "fail":
                bad = [r for r in rows if r.status == "fail"]
                text = "\n\n".join("\n".join(_failure_lines(r, backend)) for r in bad)
                ET.SubElement(case, "failure", message=bad[0].message[:500]).text = text
            elif status in ("skip", "unsupported"):
                ET.SubElement(case, "skipped", message=next(
                    (r.message for r in rows if r.message), status)[:500])
            elif status == "fallback":
                ET.SubElement(case, "system-out").text = (
                    "passed on the CPU fallback: " + ", ".join(rows[0].fallback_ops))
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
