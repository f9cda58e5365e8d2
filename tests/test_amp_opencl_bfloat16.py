"""bfloat16 on OpenCL: emulated storage (16 bits, computed through float32 on the device),
checked against the CPU's bfloat16 (ml_dtypes), and autocast on OpenCL."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason="OpenCL is not available")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((6, 5)).astype(np.float32)
B = RNG.standard_normal((5, 4)).astype(np.float32)
ULP = 2.0 ** -7  # one bfloat16 ulp, relative

OPS = {
    "add": lambda a, b: a + a,
    "mul scalar": lambda a, b: a * 1.5,
    "exp": lambda a, b: a.exp(),
    "tanh": lambda a, b: a.tanh(),
    "relu": lambda a, b: a.relu(),
    "matmul": lambda a, b: a @ b,
    "sum": lambda a, b: a.sum(1),
    "mean": lambda a, b: a.mean(),
    "softmax": lambda a, b: ember.softmax(a, 1),
    "max": lambda a, b: a.max(0).values,
    "argmax": lambda a, b: a.argmax(1),
    "index": lambda a, b: a[[0, 3, 3]],
    "cat": lambda a, b: ember.cat([a, a * 2]),
    "where": lambda a, b: ember.where(a > 0, a, 0.0),
    "sort": lambda a, b: a.sort(1).values,
    "cumsum": lambda a, b: a.cumsum(1),
    "transpose copy": lambda a, b: a.t().contiguous(),
    "to float32": lambda a, b: a.float(),
    "gt": lambda a, b: a > 0.1,
    "linear": lambda a, b: F.linear(a, b.t()),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_the_cpu(name):
    fn = OPS[name]
    a_cpu = ember.tensor(A).bfloat16()
    b_cpu = ember.tensor(B).bfloat16()
    want = fn(a_cpu, b_cpu)
    got = fn(a_cpu.to("opencl"), b_cpu.to("opencl"))
    assert got.device.type == "opencl" and got.dtype is want.dtype
    g, w = got.cpu().float().numpy(), want.float().numpy()
    if got.dtype is ember.bfloat16:
        # each value within one bfloat16 rounding of the CPU's (sums may round differently)
        np.testing.assert_allclose(g, w, rtol=2 * ULP, atol=1e-6)
    else:
        np.testing.assert_array_equal(g, w)


def test_conversions_are_exact_and_round_like_ml_dtypes():
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 3.0e38, 1e-40, 1.00390625, 1.01171875,
                         65504.0, -2.5], dtype=np.float32)
    vals = np.concatenate([specials, RNG.standard_normal(1000).astype(np.float32) * 100])
    want = ember.tensor(vals).bfloat16()
    got = ember.tensor(vals, device="opencl").bfloat16()
    np.testing.assert_array_equal(got.cpu().view(ember.int16).numpy(),
                                  want.view(ember.int16).numpy())
    ints = ember.tensor([-3, 0, 7, 1 << 20], device="opencl")
    assert ints.bfloat16().cpu().tolist() == [-3.0, 0.0, 7.0, float(1 << 20)]


def test_factories_random_and_in_place():
    f = ember.full((3,), 1.3, dtype=ember.bfloat16, device="opencl")
    assert ember.equal(f.cpu(), ember.full((3,), 1.3, dtype=ember.bfloat16))
    z = ember.zeros(2, 3, dtype=ember.bfloat16, device="opencl")
    z.add_(ember.ones(2, 3, device="opencl", dtype=ember.bfloat16))
    z[0, 1] = 5.0
    assert z.cpu().tolist() == [[1.0, 5.0, 1.0], [1.0, 1.0, 1.0]]
    ember.manual_seed(0)
    r = ember.rand(1000, dtype=ember.bfloat16, device="opencl").cpu().float()
    assert 0.0 <= float(r.min()) and float(r.max()) <= 1.0 and 0.4 < float(r.mean()) < 0.6


def test_autograd_in_bfloat16():
    w_cpu = ember.tensor(A).bfloat16().requires_grad_()
    w_cl = ember.tensor(A, device="opencl").bfloat16().requires_grad_()
    for w in (w_cpu, w_cl):
        (w.tanh() * w).sum().backward()
    assert w_cl.grad.dtype is ember.bfloat16
    np.testing.assert_allclose(w_cl.grad.cpu().float().numpy(), w_cpu.grad.float().numpy(),
                               rtol=2 * ULP, atol=1e-6)


def test_autocast_on_opencl():
    dev = "opencl"
    expected = ember.float16 if ember.float16 in ember.backends.opencl.supported_dtypes() \
        else ember.bfloat16
    assert ember.get_autocast_dtype(dev) is expected
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)).to(dev)
    x = ember.tensor(A, device=dev)
    with ember.autocast(dev, dtype=ember.bfloat16):
        out = model(x)
        sm = ember.softmax(out, 1)          # GPU lists: softmax in float32
        loss = F.cross_entropy(out, ember.tensor([0, 1, 2, 0, 1, 2], device=dev))
    assert out.dtype is ember.bfloat16 and sm.dtype is ember.float32
    assert loss.dtype is ember.float32
    loss.backward()
    assert all(p.grad.dtype is ember.float32 for p in model.parameters())
    # the same model on the CPU under CPU autocast
    cpu_model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    cpu_model.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    with ember.autocast("cpu", dtype=ember.bfloat16):
        want = cpu_model(ember.tensor(A))
    np.testing.assert_allclose(out.detach().cpu().float().numpy(),
                               want.detach().float().numpy(), rtol=4 * ULP, atol=1e-2)
