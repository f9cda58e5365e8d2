"""ember against PyTorch's OpInfo database (torch.testing._internal op_db), on cpu and opencl.

The default run checks a slice (``torch_oracle.sweep``: one dtype and the first sample of each
OpInfo on the cpu, opencl for every third OpInfo) in shards; ``pytest -m slow`` checks every
sample of every dtype on every device for a representative subset (every eighth OpInfo) and
fails on stale known-gap rules there. A sample fails the test unless
tests/torch_oracle/exclusions.py lists it, with its reason. The whole database in full is
``bench/torch_oracle_report.py`` (about 8 minutes of CPU time), which prints the pass rates.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")           # torch.testing._internal imports it

import ember  # noqa: E402
from torch_oracle import compare, convert, exclusions, opinfo, sweep  # noqa: E402
from torch_oracle.outcomes import FAIL, stale_rules  # noqa: E402

DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
SHARDS = 8


def failures(outcomes, strict):
    """Failures not listed as known gaps; with ``strict``, also known-gap rules (per subject
    and area) that no sample fails any more."""
    bad = [f"{o.subject} [{o.area} {o.device} {o.dtype} {o.sample}] {o.category}: {o.message}"
           for o in outcomes if o.status == FAIL]
    if strict:
        bad += [f"{s} [{a}]: exclusions lists it as a known gap, but every sample passes: "
                f"remove the rule" for s, a in stale_rules(outcomes)]
    return "\n".join(bad[:60]) + (f"\n... and {len(bad) - 60} more" if len(bad) > 60 else "")


def assert_no_failures(outcomes, strict=False):
    bad = failures(outcomes, strict)
    assert not bad, bad


@pytest.mark.parametrize("shard", range(SHARDS))
def test_opinfo_quick(shard):
    outcomes = []
    for i, op in list(enumerate(opinfo.op_db()))[shard::SHARDS]:
        outcomes += sweep.opinfo_outcomes(op, sweep.quick_devices(i, DEVICES), quick=True)
    assert_no_failures(outcomes)


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
def test_opinfo_full_on_a_representative_subset(shard):
    subset = sweep.slow_subset(opinfo.op_db(), sweep.SLOW_EVERY, opinfo.key)
    outcomes = []
    for _, op in subset[shard::SHARDS]:
        outcomes += sweep.opinfo_outcomes(op, DEVICES, quick=False)
    assert_no_failures(outcomes, strict=True)


def test_every_exclusion_names_an_opinfo_and_gives_a_reason():
    keys = {opinfo.key(op) for op in opinfo.op_db()}
    for name, rules in exclusions.OPINFO.items():
        assert name in keys, f"exclusions.OPINFO lists {name!r}, which op_db does not have"
        for rule in rules if isinstance(rules, tuple) else (rules,):
            assert rule.kind in exclusions.KINDS, name
            assert len(rule.reason) > 15, f"{name}: give a reason a reviewer can judge"
            assert set(rule.areas) <= set(exclusions.AREAS), name
            assert (rule.kind == "gauge") == (rule.align is not None), name
            assert (rule.kind == "reference") == (rule.reference is not None), name


# ---- the harness itself must be able to fail ------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_conversion_keeps_strides_offset_and_leaves(device):
    base = torch.arange(40, dtype=torch.float64)
    t = base.as_strided((3, 4), (1, 5), 7).detach().requires_grad_(True)
    e = convert.to_ember(t, device)
    assert tuple(e.shape) == (3, 4) and tuple(e.stride()) == (1, 5)
    assert e.storage_offset() == 7 and e.is_leaf and e.requires_grad
    np.testing.assert_array_equal(e.detach().cpu().numpy(), t.detach().numpy())
    x = torch.ones(3, 1).expand(3, 4)               # a stride-0 (expanded) sample
    assert tuple(convert.to_ember(x, device).stride()) == (1, 0)


def test_comparison_catches_dtype_shape_and_value_differences():
    t = torch.tensor([1.0, 2.0])
    compare.assert_same(ember.tensor([1.0, 2.0]), t)
    compare.assert_same(ember.tensor([1.0, 2.0 + 1e-7]), t)          # within float32's rtol
    for wrong in (ember.tensor([1.0, 2.0], dtype=ember.float64), ember.tensor([[1.0, 2.0]]),
                  ember.tensor([1.0, 2.001]), 3.0):
        with pytest.raises(compare.Mismatch):
            compare.assert_same(wrong, t)
    with pytest.raises(compare.Mismatch):
        compare.assert_same((ember.tensor(1), 2), (torch.tensor(1), 3))


def test_distribution_comparison_rejects_another_distribution():
    g = torch.Generator().manual_seed(0)
    t = torch.randn(2000, generator=g)
    compare.assert_same_distribution(ember.randn(2000), t)
    with pytest.raises(compare.Mismatch):
        compare.assert_same_distribution(ember.rand(2000), t)


def test_a_wrong_ember_op_fails_forward_and_backward(monkeypatch):
    op = opinfo.find("sin")
    monkeypatch.setattr(convert, "ember_at", lambda path: ember.cos)
    got = opinfo.check_forward(op, ["cpu"], (torch.float64,), ("forward",), max_samples=2)
    got += opinfo.check_backward(op, ["cpu"], max_samples=2)
    assert got and all(o.status == FAIL and o.category == "mismatch" for o in got), got


def test_callables_resolve_to_the_same_public_path():
    assert convert.ember_callable(torch.nn.functional.relu) is ember.nn.functional.relu
    assert convert.ember_callable(torch.linalg.svd) is ember.linalg.svd
    assert convert.ember_callable(torch.Tensor.add) is ember.Tensor.add
    f = convert.ember_callable(opinfo.find("polygamma.polygamma_n_1").op)   # an op_db lambda
    x = ember.tensor([1.5, 2.5], dtype=ember.float64)
    np.testing.assert_allclose(f(x, 1).numpy(), ember.polygamma(1, x).numpy())


def test_dropout_check_rejects_a_wrong_scale_and_an_implausible_count():
    from types import SimpleNamespace
    x = torch.randn(40, 6, 3, 3, dtype=torch.float64)
    sample = SimpleNamespace(input=x, args=(), kwargs={"p": 0.5, "training": True})
    mask = (torch.arange(40) % 2 == 0).reshape(40, 1, 1, 1)       # 20 of 40 dropped
    good = ember.tensor((x * mask * 2).numpy())
    compare.assert_dropout(good, x, sample, lead=1)
    for wrong in (ember.tensor((x * mask * 3).numpy()),          # kept units mis-scaled
                  ember.tensor((x * 0).numpy()),                   # all 40 dropped at p = 0.5
                  ember.tensor((x * (torch.rand(x.shape) > 0.5) * 2).numpy())):  # per element
        with pytest.raises(compare.Mismatch):
            compare.assert_dropout(wrong, x, sample, lead=1)


def test_eigenvector_gauge_cannot_hide_a_wrong_vector():
    a = torch.randn(4, 4, dtype=torch.float64)
    a = a + a.T
    w, v = torch.linalg.eigh(a)
    flipped = (ember.tensor(w.numpy()), ember.tensor((v * torch.tensor([1., -1, 1, -1])).numpy()))
    compare.assert_same(compare.align_eigenvectors(flipped, (w, v)), (w, v))
    swapped = (flipped[0], ember.tensor(v[:, [1, 0, 2, 3]].numpy()))
    with pytest.raises(compare.Mismatch):
        compare.assert_same(compare.align_eigenvectors(swapped, (w, v)), (w, v))


def test_finite_difference_reference_agrees_with_autograd():
    op = opinfo.find("sin")
    sample = opinfo._samples(op, torch.float64, True, limit=1)[0]
    *_, analytic, _ = opinfo._torch_gradients(op, sample)
    *_, numeric, tolerance = opinfo._torch_gradients(op, sample, numeric=True)
    for a, n in zip(analytic, numeric):
        compare.assert_same(ember.tensor(n.numpy()), a, "gradient", tolerance)


def test_reference_rule_compares_with_mpmath():
    rule = exclusions.OPINFO["special.bessel_j0"]
    sample = opinfo._samples(opinfo.find("special.bessel_j0"), torch.float64, False, limit=1)[0]
    expected = torch.special.bessel_j0(sample.input)
    opinfo._compare(rule, ember.special.bessel_j0(convert.to_ember(sample.input)), expected,
                    "output", {}, sample)
    with pytest.raises(compare.Mismatch):
        opinfo._compare(rule, ember.special.bessel_j1(convert.to_ember(sample.input)), expected,
                        "output", {}, sample)
