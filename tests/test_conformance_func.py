"""The conformance suite's ember.func rows: vmap against a loop and jvp against finite
differences pass for correct rules, fail (naming the sample and the in_dims) for a wrong batching
rule or a wrong forward formula, and the ops without a batching rule are listed in the reports."""
import json

import pytest

import ember
from ember.dispatch.dispatcher import get_op
from ember_conformance.cli import main
from ember_conformance.func_checks import check_jvp, check_vmap
from ember_conformance.opdb import all_opinfos
from ember_conformance.runner import execute
from ember_conformance.selection import select

CPU = ember.device("cpu")


def _entry(name):
    return next(i for i in all_opinfos() if i.name == name)


def test_rows_pass_and_the_fallback_ops_are_listed(tmp_path):
    out = execute(select("cpu", "neg,nonzero,sum", suites="vmap,jvp"))
    rows = {(r.suite, r.name): r for r in out.results}
    assert rows[("vmap", "neg")].status == "pass" and rows[("vmap", "neg")].checks > 0
    assert rows[("jvp", "neg")].status == "pass"
    assert rows[("jvp", "nonzero")].status == "skip"       # not differentiable
    assert "nonzero" in out.vmap_fallback_ops and "neg" not in out.vmap_fallback_ops
    path = tmp_path / "run.json"
    assert main(["--backend", "cpu", "--ops", "neg,nonzero", "--suites", "vmap",
                 "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["vmap_fallback_ops"] == ["nonzero"]
    assert data["summary"]["vmap"] == {"pass": 2}


@pytest.fixture
def broken(monkeypatch):
    """Replace an op's facet for one test."""
    def breaking(op_name, facet, value):
        op = get_op(op_name)
        monkeypatch.setattr(op, facet, value)
        op._cache.clear()
        monkeypatch.setattr(op, "_cache", {})
    return breaking


def test_a_wrong_batching_rule_fails_with_the_sample(broken):
    def wrong(args, bdims):   # drops the last example's values: a rule that mixes up the batch
        x = args[0]
        return get_op("neg")(x.roll(1, 0), args[1]), 0
    broken("neg", "batch_rule", wrong)
    r = check_vmap(_entry("neg"), "float32", CPU)
    assert r.status == "fail" and "in_dims=(0,)" in r.message


def test_a_wrong_forward_formula_fails(broken):
    broken("sin", "jvp", lambda ctx, tangents, x, compute: tangents[0] * x.sin())
    r = check_jvp(_entry("sin"), CPU)
    assert r.status == "fail" and "central differences" in r.message
