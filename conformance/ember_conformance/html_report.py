"""The HTML report: one self-contained file (inline CSS, JS and data; nothing fetched).

Top to bottom: the environment, the counts (units stated), failures with their errors and
reproducing commands, the contracts, what to implement next (the ops on the CPU fallback ranked
by the cells each would turn native, grouped by family, each with the command rerunning its
cells), the double-backward skip list, and the op × dtype grid grouped by family, with a filter
box, status toggles and per-cell details on click. A vmap/jvp cell of an entry whose ops ran on
the CPU fallback is marked fallback, not pass: its check ran those ops on the CPU too.
"""
from __future__ import annotations

import html
import json

from .ranking import by_family, entry_families, fallback_ranking, rerun_command
from .report import SYMBOLS, _failure_lines, _row
from .selection import FD_SUITES, FUNC_SUITES, OP_SUITES, ROW_SUITES
from .summary import (STATUS_ORDER, UNITS, cell_status, cells, error_text,
                      failed_units, failures, tally)

FAILURES_SHOWN = 10   # the rest fold under a "more failures" toggle, keeping the contracts near
#                       the top
COLORS = {  # (background, text): a distinct colour and symbol for each status
    "pass": ("#2e7d32", "#fff"), "fail": ("#c62828", "#fff"), "fallback": ("#f9a825", "#222"),
    "unsupported": ("#5c6bc0", "#fff"), "skip": ("#e0e0e0", "#555"),
}
MEANING = {
    "pass": "agrees with the CPU reference, on the backend's own kernels",
    "fail": "disagrees, raised where the CPU did not (or the reverse), or crashed",
    "fallback": "agrees, but some of its ops ran on the CPU fallback",
    "unsupported": "the backend declares the dtype (or derivative) unsupported, and says so",
    "skip": "not applicable (e.g. no gradient for integer dtypes)",
}

_CSS = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:1.5em 2em;color:#222}
h1{font-size:1.5em;margin:.2em 0} h1 code{font-size:1em}
h2{font-size:1.15em;margin:1.4em 0 .5em;border-bottom:1px solid #ddd;padding-bottom:.2em}
code,.mono{font-family:'DejaVu Sans Mono',monospace;font-size:12px}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:2px 6px;font-size:12px}
.env th{text-align:left;background:#f5f5f5;font-weight:600;white-space:nowrap}
.env td{max-width:60em} .verdict{display:inline-block;padding:2px 10px;border-radius:4px;
font-weight:700;margin-left:.6em;vertical-align:middle}
.chip{display:inline-block;padding:3px 9px;border-radius:4px;margin:2px 6px 2px 0;font-size:13px}
.failure{border-left:5px solid #c62828;background:#fff5f5;padding:6px 10px;margin:6px 0}
.failure .head{font-weight:700} .failure div{margin:2px 0}
.repro{background:#263238;color:#eceff1;padding:2px 6px;border-radius:3px;user-select:all}
.grid td{text-align:center;width:2.2em;cursor:pointer;font-weight:700}
.grid th.op{text-align:left;font-weight:normal;white-space:nowrap}
.grid td.na{background:#fafafa;cursor:default} .grid td.sel{outline:3px solid #000}
.controls{position:sticky;top:0;background:#fff;padding:6px 0;z-index:2;border-bottom:1px solid
#eee} .controls label{margin-right:10px;font-size:13px}
#details{position:fixed;right:1em;top:4em;width:34em;max-height:80vh;overflow:auto;
background:#fff;border:1px solid #999;box-shadow:0 2px 10px rgba(0,0,0,.25);padding:8px 12px;
font-size:12px;display:none;z-index:3} #details h3{margin:.2em 0;font-size:14px}
#details .row{border-top:1px solid #eee;padding:4px 0} .muted{color:#666}
.grid tr.family th{text-align:left;background:#eceff1;font-weight:700;padding-top:6px}
.ranking td.n{text-align:right} .ranking tr.family th{text-align:left;background:#eceff1}
"""

_JS = """
const data = JSON.parse(document.getElementById('cell-data').textContent);
const symbols = %(symbols)s;
const entities = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'};
function esc(s){return String(s).replace(/[&<>"]/g, c => entities[c]);}
function show(td){
  document.querySelectorAll('td.sel').forEach(e=>e.classList.remove('sel'));
  td.classList.add('sel');
  const rows = data[td.dataset.key]; const box = document.getElementById('details');
  let h = '<a href="#" style="float:right" onclick="return hideDetails()">close ✕</a>';
  h += '<h3>'+esc(td.dataset.key)+'</h3>';
  for (const r of rows){
    h += '<div class="row"><b class="'+r.status+'-t">'+symbols[r.status]+' '+esc(r.suite)+
         ': '+esc(r.status)+'</b> <span class="muted">'+r.checks+
         (r.checks===1 ? ' check' : ' checks')+'</span>';
    const largest = r.status==='pass' || r.status==='fallback';
    if (r.sample) h += '<div>sample '+r.sample_index+': <code>'+esc(r.sample)+'</code>'+
         (largest ? ' <span class="muted">(largest error)</span>' : '')+'</div>';
    if (r.errors) h += '<div>'+esc(r.errors)+'</div>';
    if (r.message) h += '<div>'+esc(r.message)+'</div>';
    if (r.fallback_ops.length)
      h += '<div>on the CPU fallback: '+esc(r.fallback_ops.join(', '))+'</div>';
    if (r.repro) h += '<div>reproduce: <code class="repro">'+esc(r.repro)+'</code></div>';
    h += '</div>';
  }
  box.innerHTML = h; box.style.display = 'block';
  history.replaceState(null, '', '#cell=' + encodeURIComponent(td.dataset.key));
}
function hideDetails(){document.getElementById('details').style.display='none';
  document.querySelectorAll('td.sel').forEach(e=>e.classList.remove('sel')); return false;}
function applyFilter(){
  const text = document.getElementById('filter').value.trim().toLowerCase();
  const boxes = [...document.querySelectorAll('.toggle')];
  const on = new Set(boxes.filter(c=>c.checked).map(c=>c.value));
  let shown = 0;
  document.querySelectorAll('tr.op-row').forEach(tr=>{
    const statuses = tr.dataset.statuses.split(' ');
    const ok = tr.dataset.name.toLowerCase().includes(text) && statuses.some(s=>on.has(s));
    tr.style.display = ok ? '' : 'none'; if (ok) shown++;
  });
  document.querySelectorAll('.grid tr.family').forEach(tr=>{   // a family with no row shown
    const rows = [...document.querySelectorAll('tr.op-row')].filter(
      r=>r.dataset.family===tr.dataset.family);
    tr.style.display = rows.some(r=>r.style.display!=='none') ? '' : 'none';
  });
  document.getElementById('shown').textContent = shown;
}
const cellsWithData = [...document.querySelectorAll('.grid td[data-key]')];
cellsWithData.forEach(td=>td.addEventListener('click', ()=>show(td)));
document.getElementById('filter').addEventListener('input', applyFilter);
document.querySelectorAll('.toggle').forEach(c=>c.addEventListener('change', applyFilter));
applyFilter();
if (location.hash.startsWith('#cell=')) {   // a link to one cell opens its details
  const key = decodeURIComponent(location.hash.slice(6));
  const td = cellsWithData.find(t=>t.dataset.key===key);
  if (td) show(td);
}
"""


def _e(text) -> str:
    return html.escape(str(text))


def _n(count, one, many=None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def _chip(status, count, unit) -> str:
    unit = unit if count != 1 else unit[:-1]
    return (f'<span class="chip {status}" title="{_e(MEANING[status])}">{SYMBOLS[status]} '
            f'{_e(status)}: {count} {unit}</span>')


def _environment(env, output, summary) -> str:
    bad = failed_units(summary)
    verdict = (f'<span class="verdict fail">{SYMBOLS["fail"]} FAILED: '
               + _e(", ".join(f"{n} {u}" for u, n in bad.items())) + "</span>") if bad else \
        f'<span class="verdict pass">{SYMBOLS["pass"]} PASSED</span>'
    devices = "<br>".join(
        _e(d["device"] + ("" if d["name"] == d["device"] else " — " + d["name"])) + "".join(
            f' <span class="muted">· {k} {_e(d[k])}</span>' for k in ("platform", "driver",
                                                                    "platform_version")
            if d.get(k)) for d in env["devices"]) or "none"
    left_out = "<br>".join(_e(f"{d['device']}: {d['why']}") for d in env["left_out"])
    rows = [("backend", _e(env["device"]) + " " + verdict), ("devices", devices)]
    if left_out:
        rows.append(("devices left out", left_out))
    rows += [("versions", _e(f"ember {env['ember']} · Python {env['python']} · numpy "
                             f"{env['numpy']}")), ("platform", _e(env["platform"])),
             ("date", _e(env["date"]) + f' <span class="muted">· ran {output.seconds:.1f} s'
                                         f'</span>'),
             ("command", f'<code>{_e(env["command"])}</code>')]
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="env">{body}</table>'


def _counts(summary) -> str:
    cell_chips = "".join(_chip(s, n, "cells") for s, n in summary["cells"].items())
    parts = [f"<div><b>{summary['entries']} op entries → {sum(summary['cells'].values())} cells"
             f"</b> {cell_chips}</div>",
             f'<div class="muted">cell = {_e(UNITS["cell"])}</div>',
             f"<div><b>{summary['checks']} checks</b> <span class=\"muted\">(check = "
             f"{_e(UNITS['check'])})</span></div>"]
    for suite in FD_SUITES:
        if summary[suite]:
            parts.append(f"<div><b>{suite}</b> (cpu, float64, finite differences): "
                         + "".join(_chip(s, n, "rows") for s, n in summary[suite].items())
                         + "</div>")
    for suite in FUNC_SUITES:
        if summary.get(suite):
            parts.append(f"<div><b>{suite}</b> (ember.func): "
                         + "".join(_chip(s, n, "rows") for s, n in summary[suite].items())
                         + "</div>")
    parts.append("<div><b>contracts</b>: " + "".join(
        _chip(s, n, "cases") for s, n in summary["contracts"].items()) + "</div>")
    parts.append('<div class="muted">errors are stated as max abs error, max rel error, and the '
                 'worst element as a multiple of its allowed tolerance atol + rtol·|expected|'
                 '</div>')
    return "".join(parts)


def _failures(results, backend) -> str:
    failed = failures(results)
    if not failed:
        return f"<h2>Failures</h2><p>{SYMBOLS['pass']} none</p>"
    cards = []
    for r in failed:
        head, message, *rest = _failure_lines(r, backend)
        repro = rest.pop()
        cards.append(f'<div class="failure"><div class="head">{SYMBOLS["fail"]} {_e(head)}</div>'
                     f'<div>{_e(message)}</div>' + "".join(f"<div>{_e(x)}</div>" for x in rest)
                     + f'<div>reproduce: <code class="repro">'
                     f'{_e(repro[len("reproduce: "):])}</code></div></div>')
    shown, rest = cards[:FAILURES_SHOWN], cards[FAILURES_SHOWN:]
    more = (f"<details><summary>{len(rest)} more failures</summary>{''.join(rest)}</details>"
            if rest else "")
    return f"<h2>Failures ({len(failed)})</h2>" + "".join(shown) + more


def _contracts(results) -> str:
    rows = [r for r in results if r.suite not in OP_SUITES + ROW_SUITES]
    if not rows:
        return ""
    body = "".join(f'<tr><td>{_e(r.suite)}</td><td>{_e(r.name)}</td><td class="{r.status}">'
                   f'{SYMBOLS[r.status]} {r.status}</td><td>{_e(r.message)}</td></tr>'
                   for r in rows)
    return ("<h2>Contracts</h2><table><tr><th>suite</th><th>case</th><th>status</th>"
            f"<th>message</th></tr>{body}</table>")


def _fallback(output, backend) -> str:
    vmap_ops = getattr(output, "vmap_fallback_ops", None)
    vmap = (f"<h2>{SYMBOLS['fallback']} vmap fallback ({len(vmap_ops)} registry ops)</h2><p>These "
            f"ops have no batching rule: under <code>ember.func.vmap</code> they ran once per "
            f"example (warning category <code>ember.func.VmapFallbackWarning</code>):</p><p "
            f"class=\"mono\">{_e(', '.join(vmap_ops))}</p>") if vmap_ops else ""
    if not output.fallback_ops:
        return vmap
    ranked = fallback_ranking(output.results)
    rows = []
    for family, items in by_family(ranked):
        alone = sum(r.cells_alone for r in items)
        rows.append(f'<tr class="family"><th colspan="5">{_e(family)} <span class="muted">'
                    f'· {_n(len(items), "op")} · {_n(alone, "cell")} native once all are '
                    f'implemented</span></th></tr>')
        for r in items:
            rows.append(f'<tr><td><code>{_e(r.op)}</code></td><td class="n">{r.cells_alone}'
                        f'</td><td class="n">{r.cells_with_others}</td><td>'
                        f'{_e(", ".join(r.entries))}</td><td><code class="repro">'
                        f'{_e(rerun_command(backend, r))}</code></td></tr>')
    ranked_ops = {r.op for r in ranked}
    elsewhere = [op for op in output.fallback_ops if op not in ranked_ops]
    rest = (f'<p class="muted">Also on the fallback, in cells that failed or in contract cases '
            f'(so not counted above): <span class="mono">{_e(", ".join(elsewhere))}</span></p>'
            if elsewhere else "")
    return vmap + (
        f"<h2>{SYMBOLS['fallback']} CPU fallback: what to implement next "
        f"({len(output.fallback_ops)} registry ops)</h2><p>These ops ran on the CPU instead of "
        f"the backend (their cells count as 'fallback'; the warning's category is "
        f"<code>ember.runtime.CPUFallbackWarning</code>). Ranked by the cells a native kernel "
        f"would turn native — <b>alone</b>: cells that need only this op; <b>with others</b>: "
        f"cells that also need other ops — grouped by the family that defines them, the family "
        f"that frees the most cells first. The command reruns the op's cells.</p>"
        f'<table class="ranking"><tr><th>op</th><th>cells alone</th><th>cells with others</th>'
        f'<th>op entries</th><th>rerun</th></tr>{"".join(rows)}</table>{rest}')


def _double_backward_skips(results) -> str:
    rows = [r for r in results if r.suite == "gradgradcheck" and r.status == "unsupported"]
    if not rows:
        return ""
    body = "".join(f'<tr><td>{_e(r.name)}</td><td class="unsupported">{SYMBOLS["unsupported"]} '
                   f'unsupported</td><td>{_e(r.message)}</td></tr>' for r in rows)
    return ("<h2>Second derivatives not supported (reviewed list)</h2><table><tr><th>entry</th>"
            f"<th>gradgradcheck</th><th>reason</th></tr>{body}</table>")


def _grid(results, backend) -> tuple:
    """The op × dtype table (plus the finite-difference and ember.func columns), grouped by
    family, and the per-cell data the details panel shows."""
    grouped = cells(results)
    fd = {(r.suite, r.name): r for r in results if r.suite in ROW_SUITES}
    fd_cols = [s for s in ROW_SUITES if any(k[0] == s for k in fd)]
    dtypes, names = [], []
    for name, dtype in grouped:
        if dtype not in dtypes:
            dtypes.append(dtype)
        if name not in names:
            names.append(name)
    names += [n for _, n in fd if n not in names]
    # the fallback ops of each entry's forward and gradient checks: its vmap/jvp checks ran the
    # same ops on the backend, so on the fallback too
    on_fallback = {}
    for (name, _), rs in grouped.items():
        on_fallback.setdefault(name, set()).update(op for r in rs for op in r.fallback_ops)
    families = entry_families()
    order = {f: i for i, f in enumerate(dict.fromkeys(families.values()))}
    names.sort(key=lambda n: order.get(families.get(n, "other"), len(order)))
    data, rows, current = {}, [], None
    width = 1 + len(dtypes) + len(fd_cols)
    for name in names:
        family = families.get(name, "other")
        if family != current:
            current = family
            count = sum(1 for n in names if families.get(n, "other") == family)
            rows.append(f'<tr class="family" data-family="{_e(family)}"><th colspan="{width}">'
                        f'{_e(family)} <span class="muted">· {_n(count, "entry", "entries")}'
                        f'</span></th></tr>')
        tds, statuses = [], set()
        for col in dtypes + fd_cols:
            rs = grouped.get((name, col)) if col in dtypes else \
                ([fd[(col, name)]] if (col, name) in fd else None)
            if not rs:
                tds.append('<td class="na"></td>')
                continue
            status = cell_status(rs)
            details = [dict(_row(r, backend), errors=error_text(r)) for r in rs]
            if col in FUNC_SUITES and status == "pass" and on_fallback.get(name):
                status = "fallback"
                details[0]["status"] = "fallback"
                details[0]["fallback_ops"] = sorted(on_fallback[name])
                details[0]["message"] = ("passed, but this entry's ops ran on the CPU "
                                         "fallback (see its dtype cells)")
            statuses.add(status)
            key = f"{name} [{col}]"
            data[key] = details
            tip = "; ".join(f"{d['suite']}: {d['status']}" for d in details)
            tds.append(f'<td class="{status}" data-key="{_e(key)}" title="{_e(tip)} — click for '
                       f'details">{SYMBOLS[status]}</td>')
        rows.append(f'<tr class="op-row" data-name="{_e(name)}" data-family="{_e(family)}" '
                    f'data-statuses="{" ".join(sorted(statuses))}"><th class="op">{_e(name)}'
                    f'</th>{"".join(tds)}</tr>')
    head = "".join(f"<th>{_e(c)}</th>" for c in dtypes + fd_cols)
    table = (f'<table class="grid"><tr><th class="op">op entry</th>{head}</tr>{"".join(rows)}'
             f"</table>")
    return table, data, len(names)


def write_html(output, env, path):
    results, backend = output.results, output.selection.backend
    summary = tally(results)
    grid, data, n_rows = _grid(results, backend)
    # .<status> paints a cell or chip; .<status>-t colours text (grey text for skip)
    styles = "".join(f".{s}{{background:{bg};color:{fg}}} "
                     f".{s}-t{{color:{fg if s == 'skip' else bg}}}"
                     for s, (bg, fg) in COLORS.items())
    toggles = "".join(
        f'<label class="chip {s}" title="{_e(MEANING[s])}"><input type="checkbox" class="toggle"'
        f' value="{s}" checked> {SYMBOLS[s]} {s}</label>' for s in STATUS_ORDER)
    legend = " ".join(f"<span class=\"chip {s}\">{SYMBOLS[s]} {s}</span> {_e(MEANING[s])}"
                      for s in STATUS_ORDER)
    cell_json = json.dumps(data).replace("</", "<\\/")
    js = _JS % {"symbols": json.dumps(SYMBOLS)}
    doc = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>ember-conformance: {_e(backend)}</title><style>{_CSS}{styles}</style></head><body>
<h1>ember-conformance — backend <code>{_e(backend)}</code></h1>
{_environment(env, output, summary)}
<h2>Summary</h2>{_counts(summary)}
{_failures(results, backend)}
{_contracts(results)}
{_fallback(output, backend)}
{_double_backward_skips(results)}
<h2>Op entries × dtypes</h2>
<p class="muted">{legend}</p>
<p class="muted">A cell combines the forward check (values against the CPU reference) and the
gradient check; gradcheck and gradgradcheck (cpu only) check the CPU's own derivatives against
finite differences. Click a cell for its samples, errors and a command that reruns it.</p>
<div class="controls">filter: <input id="filter" type="search" placeholder="op name contains…"
 size="28"> &nbsp; rows having a cell that is: {toggles}
 <span class="muted"><span id="shown">{n_rows}</span> of {n_rows} rows shown</span></div>
{grid}
<div id="details"></div>
<script type="application/json" id="cell-data">{cell_json}</script>
<script>{js}</script>
</body></html>"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)
