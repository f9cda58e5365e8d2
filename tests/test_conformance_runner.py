"""The ember-conformance runner as a backend author meets it: argument validation, failures
first with their errors and a command reproducing each, the CPU fallback reported once, counts
that agree across the console, JSON and JUnit, and --compare."""
import ast
import json
import os
import shlex
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import ember
from ember.runtime import Backend, CPUFallbackWarning
from ember.runtime.registry import registry
from ember_conformance import contracts
from ember_conformance.cli import main

import helpers_conformance

HELPER = Path(helpers_conformance.__file__)
OPS = "add,mul,sum"


def _script(*args, mul_error=None, cwd=None):
    env = dict(os.environ, COLUMNS="160")
    if mul_error is not None:
        env["BUGGYDEV_MUL_ERROR"] = str(mul_error)
    return subprocess.run([sys.executable, str(HELPER), *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def buggy_run(tmp_path_factory):
    """One run of the buggy backend on a few entries, with every output format."""
    d = tmp_path_factory.mktemp("buggy")
    out = _script("--backend", "buggydev", "--ops", OPS, "--json", str(d / "run.json"),
                  "--junit", str(d / "run.xml"), "--report", str(d / "run.html"))
    return out, d


# -- argument validation ------------------------------------------------------------------------
def _error(capsys, *argv):
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember-conformance: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def test_unknown_backend_is_a_one_line_error_listing_the_installed_ones(capsys):
    line = _error(capsys, "--backend", "nosuchdev")
    assert "unknown backend 'nosuchdev'" in line and "cpu" in line


class _UnavailableBackend(Backend):
    name = "nodriver"

    def is_available(self):
        return False

    def unavailable_reason(self):
        return "libnodriver.so not found"


def test_unavailable_backend_error_gives_the_backends_reason(capsys):
    registry.add(_UnavailableBackend())
    try:
        line = _error(capsys, "--backend", "nodriver")
    finally:
        registry.remove("nodriver")
    assert "backend 'nodriver' is not available: libnodriver.so not found" in line


@pytest.mark.parametrize("argv, expected", [
    (["--ops", "nonsense*"], "'nonsense*' matches no op entry"),
    (["--ops", "add,nonsense"], "'nonsense' matches no op entry"),
    (["--suites", "nonsense"], "unknown suite 'nonsense'; suites: forward, gradient"),
    (["--suites", "streams.nope"], "suite 'streams' has no case 'nope'"),
    (["--dtypes", "float33"], "unknown dtype 'float33'"),
    (["--ops", "add", "--dtypes", "bool"], "none of the selected op entries runs at that dtype"),
    (["--ops", "add", "--sample", "999"], "no selected op entry has that many samples"),
    (["--backend", "cpu:5"], "backend 'cpu' has 1 device(s)"),
])
def test_choices_that_select_nothing_are_errors(capsys, argv, expected):
    if "--backend" not in argv:
        argv = ["--backend", "cpu"] + argv
    assert expected in _error(capsys, *argv)


def test_missing_backend_is_an_error(capsys):
    assert "--backend is required" in _error(capsys)


def test_help_is_plain_text_with_suites_and_examples(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":func:" not in text
    for suite in ("forward", "gradient", "gradgradcheck", "coverage", *contracts.SUITES):
        assert f"\n  {suite} " in text, suite
    assert "examples:" in text and "--compare old.json new.json" in text
    assert "--sample 3 --suites forward" in text


def test_list_prints_suites_cases_and_entries(capsys):
    assert main(["--list", "--ops", "add*"]) == 0
    text = capsys.readouterr().out
    assert "streams.stream_ordering_with_wait_event" in text and "gradgradcheck" in text
    assert "\n  add — " in text and "\n  add_ — " in text and "\n  mul — " not in text


# -- a run with a bug: failures first, errors with units, reproducing commands ------------------
def test_failures_come_first_with_errors_tolerance_and_a_reproducing_command(buggy_run):
    out, _ = buggy_run
    assert out.returncode == 1, out.stderr
    text = out.stdout
    assert text.index("FAILURES") < text.index("CPU fallback") < text.index("op entries →")
    block = text[text.index("✗ forward mul [float32] sample"):].split("\n✗")[0]
    assert "elements outside the tolerance" in block and "expected" in block
    assert "max abs error" in block and "max rel error 0.001" in block
    assert "allowed atol 1e-05 + rtol 1.3e-06·|expected|" in block and "× its tolerance" in block
    assert "reproduce: ember-conformance --backend buggydev --ops mul --dtypes float32 " \
           "--sample " in block
    assert "add" not in [line.split()[2] for line in text.splitlines()
                         if line.startswith("✗ forward")], "the correct add was reported failing"
    assert text.rstrip().splitlines()[-1].startswith("FAILED: ")


def test_the_reproducing_command_reruns_exactly_that_case(buggy_run, tmp_path):
    out, _ = buggy_run
    line = next(x for x in out.stdout.splitlines() if "reproduce:" in x and "--ops mul" in x)
    argv = shlex.split(line.split("reproduce: ", 1)[1])
    assert argv[0] == "ember-conformance"
    again = _script(*argv[1:], "--json", str(tmp_path / "one.json"))
    assert again.returncode == 1
    data = json.loads((tmp_path / "one.json").read_text())
    assert [(r["suite"], r["name"], r["dtype"]) for r in data["results"]] == \
        [(argv[argv.index("--suites") + 1], "mul", argv[argv.index("--dtypes") + 1])]
    only = data["results"][0]
    assert only["status"] == "fail" and only["checks"] == 1
    assert only["sample_index"] == int(argv[argv.index("--sample") + 1])


def test_cpu_fallback_is_reported_once_not_warned_per_op(buggy_run):
    out, _ = buggy_run
    assert "has no kernel" not in out.stderr + out.stdout
    assert out.stdout.count("CPU fallback:") == 1
    listing = out.stdout.split("CPU fallback:")[1].split("\n")[1]
    assert "sum" in listing.split(", ") and "mul" not in listing.split(", ")


def test_console_json_and_junit_counts_agree(buggy_run):
    out, d = buggy_run
    data = json.loads((d / "run.json").read_text())
    summary = data["summary"]
    assert data["format"] == "ember-conformance/2" and data["units"]["cell"]
    cells = summary["cells"]
    console = f"3 op entries → {sum(cells.values())} cells: " + ", ".join(
        f"{n} {s}" for s, n in cells.items())
    assert console in out.stdout
    assert f"\n{summary['checks']} checks\n" in out.stdout
    assert f"contracts: {sum(summary['contracts'].values())} cases" in out.stdout
    suites = {s.get("name"): s for s in ET.parse(d / "run.xml").getroot()}
    assert int(suites["buggydev.cells"].get("tests")) == sum(cells.values())
    assert int(suites["buggydev.cells"].get("failures")) == cells.get("fail", 0)
    assert int(suites["buggydev.contracts"].get("tests")) == sum(summary["contracts"].values())
    # the JSON's failures are its failing rows, each with the command that reruns it
    failing = [r for r in data["results"] if r["status"] == "fail"]
    assert len(data["failures"]) == len(failing) > 0
    assert all(f["repro"].startswith("ember-conformance --backend buggydev ")
               for f in data["failures"])
    assert "sum" in data["fallback_ops"]


def test_fallback_warning_has_a_category_users_can_filter():
    assert issubclass(CPUFallbackWarning, UserWarning)
    helpers_conformance.register("filterdev")
    try:
        x = ember.ones(3, device="filterdev")
        with pytest.warns(CPUFallbackWarning, match="op 'exp' has no kernel for backend "
                                                    "'filterdev'"):
            x.exp()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", category=CPUFallbackWarning)
            x.sin()                                 # filtered: no error
    finally:
        registry.remove("filterdev")


# -- contracts say what they expected -----------------------------------------------------------
def test_contract_cases_have_no_bare_asserts():
    tree = ast.parse(Path(contracts.__file__).read_text())
    bare = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    assert not bare, f"contracts.py has assert statements at lines {bare}; use expect()"


def test_a_contract_failure_says_what_was_expected_and_what_happened(buggy_run):
    out, d = buggy_run
    data = json.loads((d / "run.json").read_text())
    row = next(r for r in data["results"] if r["name"] == "stream_ordering_with_wait_event")
    assert row["status"] == "fail"
    assert "expected" in row["message"] and "to sum to 2000.0, got 2002" in row["message"]
    assert row["repro"] == ("ember-conformance --backend buggydev --suites "
                            "streams.stream_ordering_with_wait_event")


# -- --compare ----------------------------------------------------------------------------------
def test_compare_reports_regressions_improvements_and_moves_off_the_fallback(buggy_run, tmp_path,
                                                                             capsys):
    _, d = buggy_run
    fixed = _script("--backend", "buggydev", "--ops", OPS, "--json", str(tmp_path / "fixed.json"),
                    mul_error=1.0)
    assert fixed.returncode == 0, fixed.stdout[-3000:]
    buggy = str(d / "run.json")
    assert main(["--compare", buggy, str(tmp_path / "fixed.json")]) == 0
    text = capsys.readouterr().out
    assert "✗ regressions (0)" in text and "cell mul [float32]: fail → pass" in text

    assert main(["--compare", str(tmp_path / "fixed.json"), buggy]) == 1
    text = capsys.readouterr().out
    assert "cell mul [float32]: pass → fail" in text
    assert "reproduce: ember-conformance --backend buggydev --ops mul" in text
    assert text.rstrip().splitlines()[-1].startswith("FAILED: ")

    # a kernel added for sum: its cells move off the fallback
    data = json.loads((tmp_path / "fixed.json").read_text())
    moved = set()
    for r in data["results"]:
        if r["name"] == "sum" and r["status"] == "fallback":
            r["status"] = "pass"
            moved.add(r["dtype"])
    (tmp_path / "native_sum.json").write_text(json.dumps(data))
    assert main(["--compare", str(tmp_path / "fixed.json"),
                 str(tmp_path / "native_sum.json")]) == 0
    text = capsys.readouterr().out
    assert f"moved off the CPU fallback ({len(moved)})" in text and "sum [float32]" in text
    assert "✗ regressions (0)" in text


def test_compare_rejects_files_that_are_not_runs(tmp_path, capsys):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    assert main(["--compare", str(tmp_path / "x.json"), str(tmp_path / "x.json")]) == 2
    assert "is not an ember-conformance --json file" in capsys.readouterr().err


def test_a_piped_run_reports_progress_lines_on_stderr(buggy_run):
    out, _ = buggy_run
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("[ember-conformance] ")]
    assert lines[0].startswith("[ember-conformance] buggydev: 0/")
    assert lines[-1].endswith(" done") and "(100%)" in lines[-1]
    assert "[ember-conformance]" not in out.stdout      # the summary stays clean
