"""ember.optim: every optimizer and option against a numpy re-implementation of PyTorch's
documented update rules, and against torch itself when installed."""
import copy
import warnings

import numpy as np
import pytest

import ember
from ember import optim

STEPS = 5


# -- numpy references (PyTorch's documented algorithms) ---------------------------------------
def ref_sgd(p, grads, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
            maximize=False):
    p, buf = p.copy(), None
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def ref_adam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
             maximize=False, decoupled=False):
    p = p.copy()
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vhat = (vmax if amsgrad else v) / (1 - b2 ** t)
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(vhat) + eps)
    return p


def ref_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                centered=False, maximize=False):
    p = p.copy()
    sq, gavg, buf = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            gavg = alpha * gavg + (1 - alpha) * g
            avg = np.sqrt(sq - gavg * gavg) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
    return p


def ref_adagrad(p, grads, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                eps=1e-10, maximize=False):
    p = p.copy()
    s = np.full_like(p, initial_accumulator_value)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (np.sqrt(s) + eps)
    return p


CASES = [
    ("SGD", {"lr": 0.1}, ref_sgd),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, ref_sgd),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}, ref_sgd),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}, ref_sgd),
    ("Adam", {"lr": 0.05}, ref_adam),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.1}, ref_adam),
    ("Adam", {"lr": 0.05, "amsgrad": True, "maximize": True}, ref_adam),
    ("AdamW", {"lr": 0.05}, lambda p, g, **k: ref_adam(p, g, weight_decay=1e-2, decoupled=True,
                                                       **k)),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": True},
     lambda p, g, **k: ref_adam(p, g, decoupled=True, **k)),
    ("RMSprop", {"lr": 0.01}, ref_rmsprop),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "weight_decay": 0.1, "momentum": 0.5}, ref_rmsprop),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.3, "maximize": True}, ref_rmsprop),
    ("Adagrad", {"lr": 0.1}, ref_adagrad),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1,
                 "initial_accumulator_value": 0.2, "eps": 1e-6, "maximize": True}, ref_adagrad),
]
IDS = [f"{n}-{'-'.join(map(str, k.items()))}" for n, k, _ in CASES]


def _data(shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(STEPS)]
    return p0, grads


def _run_ember(name, kwargs, p0, grads, dtype=ember.float64, device="cpu"):
    p = ember.tensor(p0, dtype=dtype, device=device, requires_grad=True)
    opt = getattr(optim, name)([p], **kwargs)
    for g in grads:
        p.grad = ember.tensor(g, dtype=dtype, device=device)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=IDS)
def test_matches_numpy_reference(name, kwargs, ref):
    p0, grads = _data()
    p, _ = _run_ember(name, kwargs, p0, grads)
    np.testing.assert_allclose(p.detach().numpy(), ref(p0, grads, **kwargs), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=IDS)
def test_matches_torch(name, kwargs, ref):
    torch = pytest.importorskip("torch")
    p0, grads = _data(seed=1)
    p, opt = _run_ember(name, kwargs, p0, grads, dtype=ember.float32)
    tp = torch.tensor(p0, dtype=torch.float32, requires_grad=True)
    topt = getattr(torch.optim, name)([tp], **kwargs)
    for g in grads:
        tp.grad = torch.tensor(g, dtype=torch.float32)
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)
    # same param groups (options and implementation flags), same state keys and values
    assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    ts = topt.state_dict()["state"]
    es = opt.state_dict()["state"]
    assert set(es) == set(ts)
    if not ts:
        return  # plain SGD keeps no state
    ts, es = ts[0], es[0]
    assert set(es) == set(ts)
    for k in ts:
        np.testing.assert_allclose(es[k].numpy(), ts[k].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adagrad", "SGD"])
def test_complex_params_as_real_pairs(name):
    # PyTorch updates complex parameters as (real, imag) pairs: compare with a real run
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    grads = [rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)) for _ in range(3)]
    kw = {"lr": 0.1, "momentum": 0.5} if name in ("SGD", "RMSprop") else {"lr": 0.1}
    pc, _ = _run_ember(name, kw, p0, grads, dtype=ember.complex128)
    as_pairs = lambda z: np.stack([z.real, z.imag], -1)  # noqa: E731
    pr, _ = _run_ember(name, kw, as_pairs(p0), [as_pairs(g) for g in grads])
    got = pc.detach().numpy()
    np.testing.assert_allclose(as_pairs(got), pr.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_float32_and_multiple_groups():
    p0, grads = _data()
    a = ember.tensor(p0, dtype=ember.float32, requires_grad=True)
    b = ember.tensor(p0[0], dtype=ember.float32, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[0]["momentum"] == 0
    for g in grads:
        a.grad = ember.tensor(g, dtype=ember.float32)
        b.grad = ember.tensor(g[0], dtype=ember.float32)
        opt.step()
    np.testing.assert_allclose(a.detach().numpy(), ref_sgd(p0, grads, lr=0.1), rtol=1e-5)
    np.testing.assert_allclose(b.detach().numpy(),
                               ref_sgd(p0[0], [g[0] for g in grads], lr=0.5, momentum=0.9),
                               rtol=1e-5)


def test_params_without_grad_are_skipped_and_step_is_no_grad():
    p = ember.ones(3, requires_grad=True)
    q = ember.ones(3, requires_grad=True)
    opt = optim.Adam([p, q], lr=0.1)
    p.grad = ember.ones(3)
    opt.step()
    assert q.tolist() == [1.0, 1.0, 1.0] and q not in opt.state
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_closure_runs_with_grad_and_returns_loss():
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([x], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(x.detach().numpy(), [0.5, -1.0])


def test_zero_grad():
    p = ember.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = ember.ones(2)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_format_and_round_trip():
    p0, grads = _data()
    a = ember.tensor(p0, requires_grad=True)
    b = ember.tensor(p0 * 2, requires_grad=True)
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.01}], lr=0.1, amsgrad=True)
    for g in grads[:3]:
        a.grad, b.grad = ember.tensor(g), ember.tensor(-g)
        opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert float(sd["state"][0]["step"]) == 3.0
    # a fresh optimizer on copies continues exactly like the original
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    opt2 = optim.Adam([{"params": [a2]}, {"params": [b2]}], lr=0.5)
    opt2.load_state_dict(copy.deepcopy(sd))
    assert opt2.param_groups[1]["lr"] == 0.01 and opt2.param_groups[0]["params"][0] is a2
    for g in grads[3:]:
        a.grad, b.grad = ember.tensor(g), ember.tensor(-g)
        a2.grad, b2.grad = ember.tensor(g), ember.tensor(-g)
        opt.step()
        opt2.step()
    np.testing.assert_array_equal(a.detach().numpy(), a2.detach().numpy())
    np.testing.assert_array_equal(b.detach().numpy(), b2.detach().numpy())
    # loaded state does not alias the dict it came from
    assert opt2.state[a2]["exp_avg"] is not sd["state"][0]["exp_avg"]


def test_load_state_dict_casts_to_param_dtype():
    p = ember.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = ember.ones(3)
    opt.step()
    sd = opt.state_dict()
    q = ember.ones(3, dtype=ember.float64, requires_grad=True)
    opt2 = optim.SGD([q], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.state[q]["momentum_buffer"].dtype is ember.float64


def test_load_state_dict_mismatch_errors():
    a, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        optim.SGD([a], lr=0.1).load_state_dict({"state": {}})


def test_adagrad_state_exists_before_first_step():
    p = ember.ones(2, requires_grad=True)
    opt = optim.Adagrad([p], initial_accumulator_value=0.5)
    st = opt.state_dict()["state"][0]
    assert float(st["step"]) == 0.0 and st["sum"].tolist() == [0.5, 0.5]
    q = ember.ones(2, requires_grad=True)
    opt.add_param_group({"params": [q]})
    assert "sum" in opt.state[q]


@pytest.mark.parametrize("make,match", [
    (lambda p: optim.SGD([p], lr=-1), "Invalid learning rate: -1"),
    (lambda p: optim.SGD([p], momentum=-0.1), "Invalid momentum value"),
    (lambda p: optim.SGD([p], weight_decay=-1), "Invalid weight_decay value"),
    (lambda p: optim.SGD([p], nesterov=True), "Nesterov momentum requires"),
    (lambda p: optim.Adam([p], betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
    (lambda p: optim.Adam([p], betas=(0.9, -0.1)), "Invalid beta parameter at index 1"),
    (lambda p: optim.Adam([p], eps=-1), "Invalid epsilon value"),
    (lambda p: optim.RMSprop([p], alpha=-1), "Invalid alpha value"),
    (lambda p: optim.Adagrad([p], lr_decay=-1), "Invalid lr_decay value"),
    (lambda p: optim.Adagrad([p], initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value"),
    (lambda p: optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda p: optim.SGD([{"params": [p]}, {"params": [p]}]), "more than one parameter group"),
    (lambda p: optim.SGD([p * 2]), "non-leaf"),
])
def test_argument_errors(make, match):
    p = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=match):
        make(p)


def test_type_errors():
    p = ember.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(p)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {p}}])
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([p, 3.0])
    with pytest.raises(TypeError, match="Python number"):
        optim.Adadelta([p], lr=ember.tensor(0.1))   # SGD/Adam/AdamW/RMSprop/Adagrad take one
    with pytest.raises(ValueError, match="1-element"):
        optim.SGD([p], lr=ember.tensor([0.1, 0.2]))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        optim.SGD([p, p])
    assert any("duplicate parameters" in str(x.message) for x in w)


def test_required_default_and_repr():
    p = ember.ones(2, requires_grad=True)

    class Plain(optim.Optimizer):
        def __init__(self, params, lr=optim.required):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            for g in self.param_groups:
                for q in g["params"]:
                    q.sub_(q.grad * g["lr"])

    with pytest.raises(ValueError, match="required optimization parameter lr"):
        Plain([p])
    opt = Plain([p], lr=0.5)
    p.grad = ember.ones(2)
    opt.step()  # runs under no_grad although p requires grad
    assert p.tolist() == [0.5, 0.5]
    assert repr(optim.SGD([p], lr=0.1)).startswith("SGD (\nParameter Group 0\n    dampening: 0")


def test_step_hooks():
    p = ember.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    g = optim.register_optimizer_step_post_hook(lambda o, a, k: calls.append(("global", True)))
    p.grad = ember.ones(2)
    opt.step()
    assert calls == [("pre", True), ("post", True), ("global", True)]
    h1.remove(), h2.remove(), g.remove()
    opt.step()
    assert len(calls) == 3


def test_param_names():
    p = ember.ones(2, requires_grad=True)
    opt = optim.SGD([("w", p)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w"]
    assert opt.param_groups[0]["params"][0] is p


def _train(device, make_opt, steps=20):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((32, 3)).astype(np.float32)
    y = (X @ np.array([1.5, -2.0, 0.5], np.float32) + 0.3).astype(np.float32)
    Xt, yt = ember.tensor(X, device=device), ember.tensor(y, device=device)
    w = ember.zeros(3, device=device, requires_grad=True)
    b = ember.zeros(1, device=device, requires_grad=True)
    opt = make_opt([w, b])
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((Xt @ w + b - yt) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("make_opt", [lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9),
                                      lambda ps: optim.Adam(ps, lr=0.1)], ids=["sgd", "adam"])
def test_training_on_opencl_matches_cpu(make_opt):
    if not ember.opencl.is_available():
        pytest.skip(f"opencl unavailable: {ember.opencl.unavailable_reason()}")
    cpu = _train("cpu", make_opt)
    dev = _train("opencl", make_opt)
    assert cpu[-1] < cpu[0] * 0.5  # it trains
    np.testing.assert_allclose(dev, cpu, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adadelta", "RMSprop", "Adagrad"])
def test_step_counter_stays_on_the_cpu_under_another_default_device(name):
    """The step count is read back every step (bias corrections): it lives on the CPU even
    when set_default_device names an accelerator, so an OpenCL step does not block on it."""
    if not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    ember.set_default_device("opencl")
    try:
        p = ember.nn.Parameter(ember.ones(3))
        assert p.device.type == "opencl"
        opt = getattr(ember.optim, name)([p], lr=0.1)
        p.grad = ember.ones(3)
        opt.step()
        assert opt.state[p]["step"].device.type == "cpu"
        assert float(opt.state[p]["step"]) == 1.0
    finally:
        ember.set_default_device(None)


def test_an_optimizer_without_step_or_group_update_says_so():
    class Bare(ember.optim.Optimizer):
        pass

    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    with pytest.raises(NotImplementedError, match="Bare does not define step"):
        Bare([p], {"lr": 0.1}).step()


def test_a_pytorch_style_optimizer_with_its_own_step_is_hooked_like_the_built_in_ones():
    class SignSGD(ember.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.sub_(p.grad.sign() * group["lr"])

    p = ember.tensor([1.0, -2.0], requires_grad=True)
    p.grad = ember.tensor([3.0, -0.5])
    seen = []
    for opt in (SignSGD([p]), ember.optim.Adamax([p])):
        opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(type(o).__name__))
        opt.step()
    assert seen == ["SignSGD", "Adamax"]
    assert not p.requires_grad or p.grad_fn is None     # steps run under no_grad
