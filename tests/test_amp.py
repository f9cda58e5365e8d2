"""Autocast (the AUTOCAST dispatch layer and its op lists) and GradScaler, against torch's CPU
autocast and CPU GradScaler when torch is installed."""
from __future__ import annotations

import json
import threading
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.amp import policy

from helpers_plugins import add_repo_plugin, run

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 4)).astype(np.float32)
IX = np.array([0, 1, 2, 3])

# name -> f(lib, F, x, ix); x is float32 or bfloat16
CASES = {
    "mm": lambda t, F, x, ix: x @ x,
    "bmm": lambda t, F, x, ix: t.bmm(x[None], x[None]),
    "addmm": lambda t, F, x, ix: t.addmm(x, x, x),
    "baddbmm": lambda t, F, x, ix: t.baddbmm(x[None], x[None], x[None]),
    "matmul": lambda t, F, x, ix: t.matmul(x, x),
    "linear": lambda t, F, x, ix: F.linear(x, x, x[0]),
    "linear 3d": lambda t, F, x, ix: F.linear(x[None], x, x[0]),
    "addmv": lambda t, F, x, ix: t.addmv(x[0], x, x[0]),
    "einsum": lambda t, F, x, ix: t.einsum("ij,jk->ik", x, x),
    "conv2d": lambda t, F, x, ix: F.conv2d(x[None, None], x[None, None, :2, :2], x[0, :1]),
    "softmax": lambda t, F, x, ix: t.softmax(x, 0),
    "log_softmax": lambda t, F, x, ix: t.log_softmax(x, 0),
    "sum": lambda t, F, x, ix: x.sum(),
    "prod": lambda t, F, x, ix: x.prod(),
    "cumsum": lambda t, F, x, ix: x.cumsum(0),
    "layer_norm": lambda t, F, x, ix: F.layer_norm(x, (4,)),
    "mse_loss": lambda t, F, x, ix: F.mse_loss(x, x * 2),
    "cross_entropy": lambda t, F, x, ix: F.cross_entropy(x, ix),
    "nll_loss": lambda t, F, x, ix: F.nll_loss(x, ix),
    "l1_loss": lambda t, F, x, ix: F.l1_loss(x, x * 0.5),
    "bce_logits": lambda t, F, x, ix: F.binary_cross_entropy_with_logits(x, x.sigmoid()),
    "bce": lambda t, F, x, ix: F.binary_cross_entropy(x.sigmoid(), x.sigmoid() * 0.5),
    "smooth_l1": lambda t, F, x, ix: F.smooth_l1_loss(x, x * 0.5),
    "huber": lambda t, F, x, ix: F.huber_loss(x, x * 0.5),
    "exp": lambda t, F, x, ix: x.exp(),
    "tanh": lambda t, F, x, ix: x.tanh(),
    "add": lambda t, F, x, ix: x + x,
    "relu": lambda t, F, x, ix: x.relu(),
    "cat": lambda t, F, x, ix: t.cat([x, x.float()]),
    "stack": lambda t, F, x, ix: t.stack([x, x.float()]),
    "prelu": lambda t, F, x, ix: F.prelu(x, x[0, :1]),
}


def _dt(d):
    return str(d).split(".")[-1]


def _run(lib, fn, x_np, dtype, autocast_dtype):
    Fm = lib.nn.functional
    x = lib.tensor(x_np)
    if dtype == "bfloat16":
        x = x.bfloat16()
    with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
        return fn(lib, Fm, x, lib.tensor(IX))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
def test_output_dtypes_match_torch_cpu_autocast(case, in_dtype):
    torch = pytest.importorskip("torch")
    want = _run(torch, CASES[case], X, in_dtype, "bfloat16")
    got = _run(ember, CASES[case], X, in_dtype, "bfloat16")
    assert _dt(got.dtype) == _dt(want.dtype), case
    tol = 3e-2 if "bfloat16" in (_dt(got.dtype), in_dtype) else 1e-5
    np.testing.assert_allclose(got.float().detach().numpy(), want.float().detach().numpy(),
                               rtol=tol, atol=tol * max(1.0, float(want.float().abs().max())))


@pytest.mark.parametrize("case", ["mm", "linear 3d", "conv2d", "softmax", "cross_entropy"])
def test_float16_autocast_matches_torch(case):
    torch = pytest.importorskip("torch")
    want = _run(torch, CASES[case], X, "float32", "float16")
    got = _run(ember, CASES[case], X, "float32", "float16")
    assert _dt(got.dtype) == _dt(want.dtype)
    np.testing.assert_allclose(got.float().detach().numpy(), want.float().detach().numpy(),
                               rtol=2e-3, atol=2e-3)


def test_lower_precision_result_is_the_cast_computation():
    """Without torch: an autocast mm equals an mm of the bfloat16-rounded inputs."""
    a, b = ember.tensor(X), ember.tensor(X.T.copy())
    with ember.autocast("cpu"):
        out = a @ b
    assert out.dtype is ember.bfloat16
    assert ember.equal(out, a.bfloat16() @ b.bfloat16())
    with ember.autocast("cpu"):
        s = ember.softmax(a.bfloat16(), 0)      # not listed on the CPU: input dtype
        loss = F.cross_entropy(a.bfloat16(), ember.tensor(IX))  # listed: float32
    assert s.dtype is ember.bfloat16 and loss.dtype is ember.float32
    assert ember.allclose(loss, F.cross_entropy(a.bfloat16().float(), ember.tensor(IX)))


def test_gradients_flow_back_in_the_parameters_dtype():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x = ember.tensor(X)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = model(x)
        assert out.dtype is ember.bfloat16
        loss = F.cross_entropy(out, ember.tensor([0, 1, 2, 0]))
    assert loss.dtype is ember.float32
    loss.backward()
    for p in model.parameters():
        assert p.grad.dtype is ember.float32 and bool(p.grad.isfinite().all())


def test_training_step_matches_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    em = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    y = IX % 3
    for lib, m in ((torch, tm), (ember, em)):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(X)), lib.tensor(y))
        loss.backward()
    for (name, tp), ep in zip(tm.named_parameters(), em.parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=3e-2, atol=3e-3,
                                   err_msg=name)


def _casts(*outs):
    """The ToCopyBackward0 nodes (casts) in the graphs of ``outs``."""
    seen, stack = set(), [o.grad_fn for o in outs]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        if type(n).__name__ == "ToCopyBackward0":
            seen.add(id(n))
        stack.extend(m for m, _ in n.next_functions)
    return seen


def test_weight_cache():
    w = nn.Parameter(ember.tensor(X))
    x = ember.tensor(X)
    with ember.autocast("cpu"):
        a, b = F.linear(x, w), F.linear(x, w)
        assert len(_casts(a, b)) == 1  # the leaf weight is cast once per region
    with ember.autocast("cpu", cache_enabled=False):
        a, b = F.linear(x, w), F.linear(x, w)
        assert len(_casts(a, b)) == 2
    from ember.amp import state
    assert state.state.cache == {}  # dropped when the outermost region exits
    a.sum().backward()
    assert w.grad.dtype is ember.float32


def test_nesting_disable_decorator_and_threads():
    a = ember.tensor(X)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu")
        with ember.autocast("cpu", enabled=False):
            assert (a @ a).dtype is ember.float32
            assert not ember.is_autocast_enabled("cpu")
        assert (a @ a).dtype is ember.bfloat16
        with ember.autocast("cpu", dtype=ember.float16):
            assert (a @ a).dtype is ember.float16 and ember.get_autocast_dtype("cpu") is \
                ember.float16
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        seen = []
        th = threading.Thread(target=lambda: seen.append((a @ a).dtype))
        th.start()
        th.join()
        assert seen == [ember.float32]  # autocast state is per thread
    assert not ember.is_autocast_enabled("cpu") and (a @ a).dtype is ember.float32

    @ember.autocast("cpu")
    def f(t):
        return t @ t
    assert f(a).dtype is ember.bfloat16 and (a @ a).dtype is ember.float32
    with ember.amp.autocast("cpu"):
        assert (a @ a).dtype is ember.bfloat16
    with ember.autocast("cpu"), ember.no_grad():
        assert (a @ a).dtype is ember.bfloat16


def test_autocast_errors_and_warnings():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'nosuch'"):
        ember.autocast("nosuch")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(0)
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                         "supported. Disabling autocast"):
        ac = ember.autocast("cpu", dtype=ember.float32)
    with ac:
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype is ember.float32
    with pytest.warns(UserWarning, match=r"device type 'xpu' is not available \(.*not installed"):
        ac = ember.autocast("xpu")
    with ac:
        assert not ember.is_autocast_enabled("xpu")
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match=r"device type 'cuda' is not available \(.+\)\. "
                                             r"Disabling autocast"):
            ac = ember.autocast("cuda")
        with ac:
            assert not ember.is_autocast_enabled("cuda")
    with pytest.raises(TypeError, match="requires a callable"):
        ember.autocast("cpu")(3)
    assert ember.amp.is_autocast_available("cpu") and ember.amp.is_autocast_available("cuda")
    assert not ember.amp.is_autocast_available("nosuch")


def test_deprecated_device_spellings():
    with pytest.warns(FutureWarning, match=r"ember.cpu.amp.autocast\(args...\)` is deprecated"):
        ac = ember.cpu.amp.autocast()
    with ac:
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype is ember.bfloat16
    from ember.cuda.amp import GradScaler  # noqa: F401 - importable, as torch.cuda.amp
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        scaler = ember.cuda.amp.GradScaler()
    messages = [str(x.message) for x in w]
    assert any("ember.cuda.amp.GradScaler(args...)` is deprecated" in m for m in messages)
    assert any("not available.  Disabling" in m for m in messages)
    assert scaler.is_enabled() is False
    loss = ember.tensor(2.0)
    assert scaler.scale(loss) is loss


def test_custom_fwd_bwd():
    class MyMM(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            ctx.dtype_seen = (a.dtype, ember.is_autocast_enabled("cpu"))
            return a @ b

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g @ b.mT, a.mT @ g

    a = ember.tensor(X, requires_grad=True)
    with ember.autocast("cpu"):
        out = MyMM.apply(a.bfloat16(), a)
    assert out.dtype is ember.float32  # ran with autocast off, inputs cast to float32
    out.sum().backward()
    assert a.grad is not None and a.grad.dtype is ember.float32


def test_policy_tables_hold_torchs_lists():
    assert policy.rule("mm", "cpu") == policy.LOWER
    assert policy.rule("softmax", "cpu") is None          # CPU: input dtype
    assert policy.rule("softmax", "opencl") == policy.FP32  # GPU lists elsewhere
    assert policy.rule("cross_entropy", "cpu") == policy.FP32
    assert policy.rule("binary_cross_entropy", "cuda") == policy.BANNED
    assert policy.rule("cat", "cpu") == policy.PROMOTE


ACCELERATOR = '''
import json, warnings, ember, ember.nn.functional as F
x = ember.randn(4, 4, device="openreg")
out = {}
with ember.autocast("openreg", dtype=ember.float16):
    out["mm"] = str((x @ x).dtype)
    out["softmax"] = str(ember.softmax(x.half(), 0).dtype)
    out["sum"] = str(x.half().sum().dtype)
    out["exp"] = str(x.half().exp().dtype)
    out["add"] = str((x.half() + x.half()).dtype)
    out["cpu_mm"] = str((x.cpu() @ x.cpu()).dtype)
    try:
        F.binary_cross_entropy(x.sigmoid(), x.sigmoid())
    except RuntimeError as e:
        out["bce"] = str(e).splitlines()[0]
print(json.dumps(out))
'''


def test_accelerator_lists_on_a_plugin_device(tmp_path):
    src = add_repo_plugin(tmp_path, "openreg")
    res = run(ACCELERATOR, tmp_path, extra_paths=[src], EMBER_BACKENDS="cpu,openreg")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["mm"] == "ember.float16"
    assert out["softmax"] == out["sum"] == out["exp"] == "ember.float32"
    assert out["add"] == "ember.float16"
    assert out["cpu_mm"] == "ember.float32"  # only the autocast device type is cast
    assert "unsafe to autocast" in out["bce"]


def test_autocast_float16_on_opencl_without_half_types_warns_and_stays_off():
    if not ember.opencl.is_available():
        pytest.skip(ember.opencl.unavailable_reason())
    if ember.float16 in ember.backends.opencl.supported_dtypes():
        pytest.skip("this OpenCL device has cl_khr_fp16")
    with pytest.warns(UserWarning, match="In OPENCL autocast, but the target dtype is not "
                                         "supported"):
        ac = ember.autocast("opencl", dtype=ember.float16)
    with ac:
        x = ember.ones(2, 2, device="opencl")
        assert (x @ x).dtype is ember.float32


# -- GradScaler ---------------------------------------------------------------------------------
def _scaler_run(lib, inject):
    """A float32 model trained with a scaler; `inject` puts an inf into the gradient at the
    given steps. Returns the scales, trackers, parameters and the state dict."""
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    with lib.no_grad():
        model.weight.copy_(lib.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        model.bias.copy_(lib.tensor([0.05, -0.05]))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
    x = lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    scales, trackers, skipped = [], [], []
    for step in range(7):
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        scaler.scale(loss).backward()
        if step in inject:
            with lib.no_grad():
                model.weight.grad[0, 0] = float("inf")
        scaler.unscale_(opt)
        before = model.weight.detach().clone()
        scaler.step(opt)
        skipped.append(bool((model.weight.detach() == before).all()))
        scaler.update()
        scales.append(scaler.get_scale())
        trackers.append(scaler._get_growth_tracker())
    return scales, trackers, skipped, model.weight.detach().numpy(), scaler.state_dict()


def test_grad_scaler_rules_without_torch():
    scales, trackers, skipped, _, state = _scaler_run(ember, inject={2, 3})
    # grow after every 2 clean steps, halve on an inf and skip the step
    assert scales == [256.0, 512.0, 256.0, 128.0, 128.0, 256.0, 256.0]
    assert trackers == [1, 0, 0, 0, 1, 0, 1]
    assert skipped == [False, False, True, True, False, False, False]
    assert state == {"scale": 256.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                     "growth_interval": 2, "_growth_tracker": 1}


def test_grad_scaler_matches_torch():
    torch = pytest.importorskip("torch")
    got = _scaler_run(ember, inject={1, 4})
    want = _scaler_run(torch, inject={1, 4})
    assert got[0] == want[0] and got[1] == want[1] and got[2] == want[2]
    np.testing.assert_allclose(got[3], want[3].numpy() if hasattr(want[3], "numpy")
                               else want[3], rtol=1e-6)
    assert got[4] == want[4]


def test_grad_scaler_api_and_errors():
    model = nn.Linear(2, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    outs = scaler.scale([ember.ones(1), (ember.ones(2),)])
    assert outs[0].item() == 65536.0 and outs[1][0].tolist() == [65536.0, 65536.0]
    scaler.scale(model(ember.ones(1, 2)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update(4.0)
    assert scaler.get_scale() == 4.0
    fresh = ember.amp.GradScaler("cpu")
    fresh.load_state_dict(scaler.state_dict())
    assert fresh.get_scale() == 4.0
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        fresh.load_state_dict({})
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
    half = nn.Linear(2, 1).half()
    hopt = ember.optim.SGD(half.parameters(), lr=0.1)
    s2 = ember.amp.GradScaler("cpu")
    s2.scale(half(ember.ones(1, 2, dtype=ember.float16)).sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        s2.unscale_(hopt)
    disabled = ember.amp.GradScaler("cpu", enabled=False)
    assert disabled.state_dict() == {} and disabled.get_scale() == 1.0
