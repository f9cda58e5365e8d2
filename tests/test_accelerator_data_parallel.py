"""nn.DataParallel over the devices of one backend: the openreg plug-in's two devices (in a
subprocess, through its entry point), the one OpenCL device, and no accelerator at all."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.parallel import gather, parallel_apply, replicate, scatter

from helpers_plugins import add_repo_plugin, run

TWO_DEVICES = '''
import json, numpy as np, ember, ember.nn as nn
ember.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
ref = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
ref.load_state_dict(model.state_dict())
x = ember.randn(7, 4)
model.to("openreg:0")
dp = nn.DataParallel(model)
out = dp(x)
out.pow(2).sum().backward()
want = ref(x)
want.pow(2).sum().backward()
grads = [(p.grad.cpu().numpy() - q.grad.numpy()).__abs__().max().item()
         for p, q in zip(model.parameters(), ref.parameters())]
# a dict output and keyword arguments go through scatter/gather too
class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
    def forward(self, a, scale=1.0, extra=None):
        return {"y": self.lin(a) * scale, "n": a.shape[0] + 0 * a.sum()}
two = nn.DataParallel(Two().to("openreg:0"))
d = two(x, scale=2.0)
bad = None
try:
    nn.DataParallel(nn.Linear(4, 2))(x)
except RuntimeError as e:
    bad = str(e)
print(json.dumps([dp.device_ids, str(out.device), out.shape[0],
                  float((out.cpu() - want).abs().max()), max(grads),
                  str(d["y"].device), d["y"].shape[0], d["n"].tolist(), bad]))
'''


def test_data_parallel_over_two_openreg_devices(tmp_path):
    src = add_repo_plugin(tmp_path, "openreg")
    out = run(TWO_DEVICES, tmp_path, extra_paths=[src], EMBER_BACKENDS="cpu,openreg")
    assert out.returncode == 0, out.stderr
    ids, dev, n, err, grad_err, ydev, yn, counts, bad = json.loads(
        out.stdout.strip().splitlines()[-1])
    assert ids == [0, 1] and dev == "openreg:0" and n == 7
    assert err < 1e-6 and grad_err < 1e-6  # the two halves' gradients summed
    assert ydev == "openreg:0" and yn == 7 and counts == [4.0, 3.0]  # chunks of 4 and 3
    assert "module must have its parameters and buffers on device openreg:0" in bad


def test_single_device_runs_the_module_directly():
    if not ember.accelerator.is_available():
        pytest.skip("no accelerator")
    acc = ember.accelerator.current_accelerator()
    if ember.accelerator.device_count() != 1:
        pytest.skip("more than one device")
    model = nn.Linear(3, 2)
    dp = nn.DataParallel(model)
    assert next(model.parameters()).device.type == acc.type  # moved, as torch on one GPU
    y = dp(ember.randn(5, 3))  # a CPU input is moved to the device
    assert y.device.type == acc.type
    y.sum().backward()
    assert model.weight.grad is not None
    assert sorted(dp.state_dict()) == ["module.bias", "module.weight"]


def test_no_accelerator_runs_as_is(tmp_path):
    out = run('''
        import json, ember, ember.nn as nn
        m = nn.Linear(3, 2)
        dp = nn.DataParallel(m)
        y = dp(ember.ones(4, 3))
        print(json.dumps([dp.device_ids, str(y.device), dp.module is m]))
    ''', tmp_path, EMBER_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[], "cpu", True]


def test_scatter_replicate_apply_gather_on_cpu():
    """The building blocks on any devices (here the CPU twice): chunking, replicas that share
    gradients with the original, nested outputs."""
    ember.manual_seed(1)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    x = ember.randn(5, 3)
    pieces = scatter((x, {"k": 1}), ["cpu", "cpu"])
    assert len(pieces) == 2 and pieces[0][0].shape == (3, 3) and pieces[1][0].shape == (2, 3)
    assert pieces[0][1] == {"k": 1}
    reps = replicate(m, ["cpu", "cpu"])
    assert reps[0][0].weight is m[0].weight          # the first replica keeps the originals
    assert reps[1][0].weight is not m[0].weight
    assert list(reps[1].parameters()) == []           # replicas' parameters are not leaves
    outs = parallel_apply(reps, [(p[0],) for p in pieces])
    y = gather(outs, "cpu")
    assert y.shape == (5, 4)
    y.sum().backward()
    assert m[0].weight.grad is not None
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v = gather([ember.tensor(1.0), ember.tensor(2.0)], "cpu")
    assert v.tolist() == [1.0, 2.0] and "all input tensors were scalars" in str(w[0].message)
    with pytest.raises(ValueError, match="Caught ValueError in replica 1"):
        class Boom(nn.Module):
            def forward(self, a):
                if a.shape[0] == 2:
                    raise ValueError("boom")
                return a
        parallel_apply([Boom(), Boom()], [(ember.ones(3),), (ember.ones(2),)], None,
                       ["cpu", "cpu"])


def test_data_parallel_matches_torch_on_one_device():
    """With torch on the CPU DataParallel runs the module itself: same numbers as ember's run
    over its accelerator's devices (or the CPU). As in torch with several GPUs, the module must
    be on device_ids[0] first (only a single device moves it there itself)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Linear(4, 3)
    em = nn.Linear(4, 3)
    with ember.no_grad():
        em.weight.copy_(ember.tensor(tm.weight.detach().numpy()))
        em.bias.copy_(ember.tensor(tm.bias.detach().numpy()))
    acc = ember.accelerator.current_accelerator(check_available=True)
    if acc is not None:
        em.to(f"{acc.type}:0")
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    ty = torch.nn.DataParallel(tm)(torch.tensor(x))
    ey = nn.DataParallel(em)(ember.tensor(x))
    np.testing.assert_allclose(ey.cpu().detach().numpy(), ty.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
