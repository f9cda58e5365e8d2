"""Reports: a terminal summary, an HTML op × dtype matrix, JSON and JUnit XML."""
from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict

STATUS_ORDER = ["fail", "fallback", "pass", "unsupported", "skip"]
OP_SUITES = ("forward", "gradient", "gradcheck")  # per op entry; the rest are contracts
COLORS = {"pass": "#2e7d32", "fallback": "#f9a825", "fail": "#c62828", "unsupported": "#757575",
          "skip": "#bdbdbd"}


def _cell_status(rows):
    """One status for an op × dtype cell from its forward and gradient rows (worst wins)."""
    statuses = {r.status for r in rows if r.status != "skip"} or {"skip"}
    return next(s for s in STATUS_ORDER if s in statuses)


def summary_counts(results) -> Counter:
    return Counter(r.status for r in results)


def print_summary(results, backend, console=None):
    from rich.console import Console
    from rich.table import Table
    console = console or Console()
    ops = defaultdict(list)
    for r in results:
        if r.suite in OP_SUITES:
            ops[r.name].append(r)
    table = Table(title=f"ember-conformance: {backend} — ops × dtypes")
    for col in ("op", "dtypes", "pass", "fallback", "fail", "unsupported", "worst error"):
        table.add_column(col, justify="left" if col in ("op", "dtypes") else "right")
    for name, rows in ops.items():
        by_dtype = defaultdict(list)
        for r in rows:
            by_dtype[r.dtype].append(r)
        cells = Counter(_cell_status(rs) for rs in by_dtype.values())
        worst = max((r.worst for r in rows), default=0.0)
        if cells["fail"] or cells["fallback"]:
            table.add_row(name, ", ".join(by_dtype), str(cells["pass"]), str(cells["fallback"]),
                          f"[red]{cells['fail']}[/red]" if cells["fail"] else "0",
                          str(cells["unsupported"]), f"{worst:.2g}")
    counts = Counter()
    for rows in ops.values():
        by_dtype = defaultdict(list)
        for r in rows:
            by_dtype[r.dtype].append(r)
        counts.update(_cell_status(rs) for rs in by_dtype.values())
    if table.row_count:
        console.print(table)
    console.print(f"[bold]{len(ops)} op entries[/bold]: " + ", ".join(
        f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]) + " (op × dtype cells)")
    contract = [r for r in results if r.suite not in OP_SUITES]
    ctable = Table(title="contracts")
    for col in ("suite", "case", "status", "message"):
        ctable.add_column(col, overflow="fold")
    for r in contract:
        color = {"pass": "green", "fail": "red", "skip": "dim"}.get(r.status, "yellow")
        ctable.add_row(r.suite, r.name, f"[{color}]{r.status}[/{color}]", r.message[:160])
    console.print(ctable)
    for r in results:
        if r.status == "fail":
            console.print(f"[red]FAIL[/red] {r.suite} {r.name} [{r.dtype}]: {r.message}")


def write_json(results, path, backend):
    data = {"backend": backend,
            "summary": dict(summary_counts(results)),
            "results": [r.__dict__ | {"worst": (None if r.worst == float("inf") else r.worst)}
                        for r in results]}
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def write_junit(results, path, backend):
    suite = ET.Element("testsuite", name=f"ember-conformance.{backend}",
                       tests=str(len(results)),
                       failures=str(sum(r.status == "fail" for r in results)),
                       skipped=str(sum(r.status in ("skip", "unsupported") for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=f"{backend}.{r.suite}",
                             name=f"{r.name}[{r.dtype}]")
        if r.status == "fail":
            ET.SubElement(case, "failure", message=r.message[:500]).text = r.message
        elif r.status in ("skip", "unsupported"):
            ET.SubElement(case, "skipped", message=r.message[:500] or r.status)
        elif r.status == "fallback":
            ET.SubElement(case, "system-out").text = "ran on the CPU fallback"
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def write_html(results, path, backend):
    ops = defaultdict(lambda: defaultdict(list))
    dtypes = []
    for r in results:
        if r.suite in OP_SUITES:
            ops[r.name][r.dtype].append(r)
            if r.dtype not in dtypes:
                dtypes.append(r.dtype)
    counts = Counter()
    rows_html = []
    for name, cells in ops.items():
        tds = []
        for dt in dtypes:
            rs = cells.get(dt)
            if not rs:
                tds.append('<td class="na"></td>')
                continue
            st = _cell_status(rs)
            counts[st] += 1
            tip = "; ".join(f"{r.suite}: {r.status}" + (f" — {r.message}" if r.message else "")
                            + (f" (worst {r.worst:.2g}× tol)" if r.worst and r.worst != float(
                                "inf") else "") for r in rs)
            tds.append(f'<td class="{st}" title="{html.escape(tip)}">{st[0].upper()}</td>')
        rows_html.append(f"<tr><th>{html.escape(name)}</th>{''.join(tds)}</tr>")
    contract_rows = "".join(
        f'<tr><td>{html.escape(r.suite)}</td><td>{html.escape(r.name)}</td>'
        f'<td class="{r.status}">{r.status}</td><td>{html.escape(r.message)}</td></tr>'
        for r in results if r.suite not in OP_SUITES)
    legend = " ".join(f'<span class="{s} chip">{s}: {counts[s]}</span>' for s in STATUS_ORDER)
    styles = "".join(f".{s}{{background:{c};color:white}}" for s, c in COLORS.items())
    doc = f"""<!doctype html><html><head><meta charset="utf-8">
<title>ember-conformance: {html.escape(backend)}</title><style>
body{{font-family:system-ui,sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ddd;padding:2px 6px;font-size:12px;text-align:center}}
th{{text-align:left;font-weight:normal}} .na{{background:#fafafa}}
.chip{{padding:3px 8px;border-radius:4px;margin-right:6px}} {styles}
</style></head><body>
<h1>ember-conformance — backend <code>{html.escape(backend)}</code></h1>
<p>{legend}</p><p>Each cell combines the forward check (values vs the CPU reference) and the
gradient check; hover a cell for details. P = pass, F = fail or CPU-fallback, U = unsupported,
S = skipped.</p>
<table><tr><th>op</th>{''.join(f'<th>{html.escape(d)}</th>' for d in dtypes)}</tr>
{''.join(rows_html)}</table>
<h2>Contracts</h2><table><tr><th>suite</th><th>case</th><th>status</th><th>message</th></tr>
{contract_rows}</table></body></html>"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)
