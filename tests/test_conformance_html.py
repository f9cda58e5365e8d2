"""The HTML report: one self-contained file with the environment, failures first, contracts near
the top, the CPU-fallback list, and an op grid with a filter, status toggles and click details.

The rendering test opens the report in headless Chromium (Debian's ``chromium``) and skips where
it is not installed; ``EMBER_REPORT_SCREENSHOT=path.png`` keeps the screenshot to look at.
"""
import html
import json
import os
import re
import shutil
import subprocess
import urllib.parse

import pytest

from test_conformance_runner import OPS, _script


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    out = _script("--backend", "buggydev", "--ops", OPS, "--report", str(d / "run.html"),
                  "--json", str(d / "run.json"))
    assert out.returncode == 1, out.stderr
    return (d / "run.html").read_text(encoding="utf-8"), json.loads((d / "run.json").read_text()), d


def test_report_is_one_self_contained_file(report):
    page, _, _ = report
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page


def test_environment_header(report):
    page, data, _ = report
    env = data["environment"]
    header = page[:page.index("<h2>Summary")]
    for value in (env["device"], env["ember"], env["python"], env["numpy"], env["date"],
                  "FAILED"):
        assert html.escape(value) in header, value
    assert "--report" in header and "buggydev:0" in header


def test_sections_in_order_failures_first_contracts_near_the_top(report):
    page, _, _ = report
    order = [page.index(s) for s in ("<h2>Summary", "<h2>Failures (", "<h2>Contracts",
                                     "CPU fallback: what to implement next (",
                                     "<h2>Op entries × dtypes")]
    assert order == sorted(order)
    failures = page[order[1]:order[2]]
    assert "max rel error 0.001" in failures and "--ops mul --dtypes float32 --sample" in failures


def test_counts_match_the_json(report):
    page, data, _ = report
    cells = data["summary"]["cells"]
    for status, n in cells.items():
        assert f"{status}: {n} cell" in page
    assert f"{data['summary']['checks']} checks" in page


def test_fail_and_fallback_have_distinct_symbols_and_colours(report):
    page, _, _ = report
    from ember_conformance.html_report import COLORS
    from ember_conformance.report import SYMBOLS
    assert len(set(SYMBOLS.values())) == len(SYMBOLS)
    assert len({bg for bg, _ in COLORS.values()}) == len(COLORS)
    assert 'class="fail" data-key="mul [float32]"' in page
    assert 'class="fallback" data-key="sum [float32]"' in page


def test_cell_details_carry_errors_and_the_reproducing_command(report):
    page, _, _ = report
    blob = page.split('<script type="application/json" id="cell-data">')[1].split("</script>")[0]
    cells = json.loads(blob.replace("<\\/", "</"))
    forward = next(r for r in cells["mul [float32]"] if r["suite"] == "forward")
    assert forward["status"] == "fail" and forward["max_rel"] == pytest.approx(0.001, rel=1e-3)
    assert forward["repro"].startswith("ember-conformance --backend buggydev --ops mul")
    assert cells["sum [float32]"][0]["fallback_ops"] == ["sum"]


def test_fallback_ops_ranked_by_cells_they_would_turn_native(report):
    page, data, d = report
    section = page[page.index("what to implement next"):page.index("<h2>Op entries")]
    # buggydev runs only add and mul natively: sum's cells need sum alone
    sum_cells = sum(1 for r in data["results"] if r["suite"] == "forward" and r["name"] == "sum")
    assert '<tr class="family"><th colspan="5">reduction' in section
    row = section.split("<code>sum</code>")[1].split("</tr>")[0]
    assert f'<td class="n">{sum_cells}</td><td class="n">0</td>' in row
    command = "ember-conformance --backend buggydev --ops sum --suites forward,gradient"
    assert html.escape(command) in row
    # the command reruns exactly those cells
    out = _script(*command.split()[1:], "--json", str(d / "rerun.json"))
    assert out.returncode == 0, out.stderr
    rerun = json.loads((d / "rerun.json").read_text())
    assert {r["name"] for r in rerun["results"] if r["suite"] in ("forward", "gradient")} == \
        {"sum"}
    assert rerun["summary"]["cells"] == {"fallback": sum_cells}


def test_grid_is_grouped_by_family(report):
    page, _, _ = report
    grid = page[page.index('<table class="grid">'):]
    families = re.findall(r'<tr class="family" data-family="(\w+)">', grid)
    assert families == ["elementwise", "reduction"]
    assert grid.index('data-name="mul"') < grid.index('data-family="reduction"') < \
        grid.index('data-name="sum"')


def test_vmap_and_jvp_cells_of_fallback_entries_are_marked(report):
    page, data, _ = report
    statuses = {(r["suite"], r["name"]): r["status"] for r in data["results"]}
    assert statuses[("vmap", "sum")] == "pass"      # the check itself passed ...
    assert 'class="fallback" data-key="sum [vmap]"' in page   # ... on the CPU fallback
    assert 'class="fallback" data-key="sum [jvp]"' in page
    assert 'class="pass" data-key="add [vmap]"' in page


def test_ranking_counts_cells_alone_and_with_others():
    from ember_conformance.checks import Result
    from ember_conformance.ranking import by_family, fallback_ranking
    rows = [Result("forward", "a", "float32", "fallback", fallback_ops=("sum",)),
            Result("forward", "a", "float64", "fallback", fallback_ops=("sum",)),
            Result("forward", "b", "float32", "fallback", fallback_ops=("sum", "exp")),
            Result("forward", "c", "float32", "fallback", fallback_ops=("exp",)),
            Result("forward", "d", "float32", "fail", fallback_ops=("cat",))]
    ranked = fallback_ranking(rows)
    assert [(r.op, r.cells_alone, r.cells_with_others, r.entries) for r in ranked] == [
        ("sum", 2, 1, ["a", "b"]), ("exp", 1, 1, ["b", "c"])]
    assert [f for f, _ in by_family(ranked)] == ["reduction", "elementwise"]


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(url, tmp_path, *args):
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--no-first-run",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
           "--virtual-time-budget=3000", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install "
                                                "chromium) so the report is not rendered")
def test_report_renders_in_a_browser_and_a_click_opens_details(report, tmp_path):
    _, _, d = report
    url = (d / "run.html").as_uri() + "#cell=" + urllib.parse.quote("mul [float32]")
    dom = _browser(url, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the script ran: the filter counted the rows, and the linked cell's details are open
    assert re.search(r'<span id="shown">3</span> of 3 rows', dom.stdout)
    details = dom.stdout.split('<div id="details"')[1].split("</div></div>")[0]
    assert 'style="display: block;"' in details[:40]
    assert "mul [float32]" in details and "max rel error 0.001" in details
    shot = os.environ.get("EMBER_REPORT_SCREENSHOT") or str(tmp_path / "report.png")
    png = _browser(url, tmp_path, "--window-size=1400,1100", f"--screenshot={shot}")
    assert png.returncode == 0, png.stderr[-2000:]
    data = open(shot, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000   # a blank page is ~5 kB
