"""The conformance suite's double-backward rows: gradgradcheck on the CPU, float64, for every
differentiable op entry, with a reviewed list of entries whose second derivative is missing."""
import json

import pytest

import ember
from ember.autograd import Function
from ember_conformance import finite_differences as fd
from ember_conformance.cli import main
from ember_conformance.opdb import OpInfo, SampleInput, all_opinfos, make_tensor

CPU = ember.device("cpu")
ENTRIES = {i.name: i for i in all_opinfos()}


@pytest.mark.parametrize("name", ["exp", "mul", "matmul", "cat", "nn.layer_norm", "softmax",
                                  "sum"])
def test_second_derivatives_of_representative_entries_pass(name):
    r = fd.check_gradgradcheck(ENTRIES[name], CPU)
    assert r.status == "pass" and 1 <= r.checks <= fd.MAX_SAMPLES, r


def test_listed_entries_are_unsupported_with_their_reason(monkeypatch):
    for name, reason in fd.GRADGRAD_UNSUPPORTED.items():
        assert name in ENTRIES, f"GRADGRAD_UNSUPPORTED names {name!r}, which is no entry"
        r = fd.check_gradgradcheck(ENTRIES[name], CPU)
        assert r.status == "unsupported" and reason in r.message, r
    # the list is empty since digamma got its derivative: the machinery, on a listed entry
    # whose second derivative is wrong
    monkeypatch.setitem(fd.GRADGRAD_UNSUPPORTED, "cube", "a flat backward")
    r = fd.check_gradgradcheck(_entry(CubeWithFlatBackward.apply), CPU)
    assert r.status == "unsupported" and "a flat backward" in r.message, r


def test_an_entry_without_a_first_derivative_is_skipped_with_the_reason():
    # zeta has no derivative with respect to its exponent (nor has PyTorch's)
    entry = _entry(lambda x: ember.special.zeta(x + 4.0, 2.0), "zeta exponent")
    r = fd.check_gradgradcheck(entry, CPU)
    assert r.status == "skip" and "no first derivative" in r.message


def test_a_listed_entry_that_passes_fails_so_the_list_stays_true(monkeypatch):
    monkeypatch.setitem(fd.GRADGRAD_UNSUPPORTED, "exp", "pretend")
    r = fd.check_gradgradcheck(ENTRIES["exp"], CPU)
    assert r.status == "fail" and "remove it from the list" in r.message


class CubeWithFlatBackward(Function):
    """x³ whose backward is right but built from a detached x: its own derivative (the second
    derivative of x³) comes out 0 instead of 6x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


def _entry(fn, name="cube"):
    return OpInfo(name, fn, lambda dtype: [SampleInput(
        f"{dtype}[4]", lambda dev, dt=dtype: ((make_tensor(5, (4,), dt, dev),), {}))],
        covers=())


def test_a_wrong_second_derivative_fails_while_the_first_passes():
    entry = _entry(CubeWithFlatBackward.apply)
    assert fd.check_gradcheck(entry, CPU).status == "pass"
    r = fd.check_gradgradcheck(entry, CPU)
    assert r.status == "fail" and r.sample_index == 0 and "float64[4]" in r.message, r


def test_expanded_samples_are_differenced_as_contiguous_leaves():
    # the expanded layout repeats one row in memory: differencing it in place would perturb
    # every row at once, so the check copies inputs into fresh contiguous leaves first
    entry = OpInfo("expanded sin", ember.sin, lambda dtype: [SampleInput(
        f"{dtype}[3, 4] expanded", lambda dev, dt=dtype: (
            (make_tensor(7, (3, 4), dt, dev, layout="expanded"),), {}))], covers=())
    assert fd.check_gradgradcheck(entry, CPU).status == "pass"


def test_the_cpu_run_has_gradgradcheck_rows_and_shows_the_skip_list(tmp_path, capsys):
    path = tmp_path / "gg.json"
    assert main(["--backend", "cpu", "--ops", "exp,lgamma,digamma,eq", "--suites",
                 "gradgradcheck", "--json", str(path)]) == 0
    capsys.readouterr()
    rows = {r["name"]: r for r in json.loads(path.read_text())["results"]}
    assert {r["suite"] for r in rows.values()} == {"gradgradcheck"}
    # lgamma's second derivative is trigamma (digamma's derivative, polygamma(1, x))
    assert rows["exp"]["status"] == "pass" and rows["lgamma"]["status"] == "pass"
    assert rows["digamma"]["status"] == "pass" and rows["eq"]["message"] == "not differentiable"
