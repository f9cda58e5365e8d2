"""ember against PyTorch's ModuleInfo and OptimizerInfo databases (module_db, optim_db).

The default run checks each ModuleInfo's first input in float64 (forward, buffers, gradients of
inputs and parameters; train and eval) and each OptimizerInfo's inputs with the default
implementation, on the cpu (opencl for every third entry: ``torch_oracle.sweep``).
``pytest -m slow`` checks every input in float32 and float64 on every device for every sixth
ModuleInfo, and every optim_input with every implementation torch lists for the CPU.
A failure fails the test unless tests/torch_oracle/exclusions.py lists it, with its reason.
"""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")           # torch.testing._internal imports it

import ember  # noqa: E402
from test_torch_opinfo import assert_no_failures  # noqa: E402
from torch_oracle import exclusions, modules, opinfo, optimizers, sweep  # noqa: E402

DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
MODULE_SHARDS = 2


@pytest.mark.parametrize("shard", range(MODULE_SHARDS))
def test_moduleinfo_quick(shard):
    outcomes = []
    for i, info in list(enumerate(modules.module_db()))[shard::MODULE_SHARDS]:
        outcomes += modules.check_module(info, sweep.quick_devices(i, DEVICES), quick=True)
    assert outcomes
    assert_no_failures(outcomes)


def test_optimizerinfo_quick():
    outcomes = []
    for i, info in enumerate(optimizers.optim_db()):
        outcomes += optimizers.check_optimizer(info, sweep.quick_devices(i, DEVICES), quick=True)
    assert {o.subject for o in outcomes} == {i.optim_cls.__name__ for i in optimizers.optim_db()}
    assert_no_failures(outcomes)


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(MODULE_SHARDS))
def test_moduleinfo_full_on_a_representative_subset(shard):
    subset = sweep.slow_subset(modules.module_db(), sweep.SLOW_MODULE_EVERY, modules.info_key)
    outcomes = []
    for _, info in subset[shard::MODULE_SHARDS]:
        outcomes += modules.check_module(info, DEVICES)
    assert_no_failures(outcomes, strict=True)


@pytest.mark.slow
def test_optimizerinfo_full():
    outcomes = []
    for info in optimizers.optim_db():
        outcomes += optimizers.check_optimizer(info, DEVICES)
    assert_no_failures(outcomes, strict=True)


def test_every_module_and_optimizer_exclusion_names_an_entry_and_gives_a_reason():
    names = {modules.info_key(i) for i in modules.module_db()}
    for name, rule in exclusions.MODULES.items():
        assert name in names and rule.kind in ("skip", "xfail", "distribution"), name
        assert len(rule.reason) > 15, name
    ops = {opinfo.key(op) for op in opinfo.op_db()}
    assert sweep.SLOW_HEAVY <= ops | {modules.info_key(i) for i in modules.module_db()}
    names = {i.optim_cls.__name__ for i in optimizers.optim_db()}
    for name, rule in exclusions.OPTIMIZERS.items():
        assert name in names and rule.kind in ("skip", "xfail"), name
        assert len(rule.reason) > 15, name


def test_a_wrong_module_or_optimizer_fails(monkeypatch):
    """The checks can fail: ember's Linear computing x W^T without its bias, and ember's SGD
    stepping twice as far, are caught."""
    info = next(i for i in modules.module_db() if i.name == "nn.Linear")
    real = ember.nn.functional.linear
    monkeypatch.setattr(ember.nn.functional, "linear", lambda x, w, b=None: real(x, w))
    got = modules.check_module(info, ["cpu"], quick=True)
    assert got and all(o.status == "fail" for o in got), got
    monkeypatch.undo()
    info = next(i for i in optimizers.optim_db() if i.optim_cls.__name__ == "SGD")
    real_init = ember.optim.SGD.__init__

    def doubled(self, params, lr=1e-3, *a, **kw):
        real_init(self, params, lr * 2, *a, **kw)
    monkeypatch.setattr(ember.optim.SGD, "__init__", doubled)
    got = optimizers.check_optimizer(info, ["cpu"], quick=True)
    assert got and any(o.status == "fail" and o.category == "mismatch" for o in got), got
