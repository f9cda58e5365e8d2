"""ember.optim: Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and SparseAdam against numpy
re-implementations of PyTorch's documented algorithms, and step by step against torch (optional);
the implementation flags (foreach/fused/differentiable/capturable) of every optimizer."""
import copy

import numpy as np
import pytest

import ember
from ember import optim

STEPS = 6


# -- numpy references (the algorithms of PyTorch's documentation) -----------------------------
def ref_adadelta(p, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    p = p.copy()
    v, u = np.zeros_like(p), np.zeros_like(p)
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
    return p


def ref_adamax(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    p = p.copy()
    m, u = np.zeros_like(p), np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** t) * m / u
    return p


def ref_nadam(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
              momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    p = p.copy()
    m, v = np.zeros_like(p), np.zeros_like(p)
    b1, b2 = betas
    mu_prod = 1.0
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        # the product is a float32 host scalar of the state (PyTorch's, with float32 default)
        mu_prod = float(np.float32(mu_prod) * np.float32(mu))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vhat = v / (1 - b2 ** t)
        p = p - lr * (1 - mu) / (1 - mu_prod) * g / (np.sqrt(vhat) + eps) \
            - lr * mu_next / (1 - mu_prod * mu_next) * m / (np.sqrt(vhat) + eps)
    return p


def ref_radam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
              decoupled_weight_decay=False, maximize=False):
    p = p.copy()
    m, v = np.zeros_like(p), np.zeros_like(p)
    b1, b2 = betas
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            ell = np.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
            r = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                        ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * mhat * ell * r
        else:
            p = p - lr * mhat
    return p


def ref_asgd(p, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
             maximize=False):
    f32 = lambda x: float(np.float32(x))  # noqa: E731 - eta, mu: float32 host scalars
    p = p.copy()
    ax, eta, mu = np.zeros_like(p), f32(lr), 1.0
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = ax + mu * (p - ax) if mu != 1 else p.copy()
        eta = f32(lr / (1 + lambd * lr * t) ** alpha)
        mu = f32(1 / max(1, t - t0))
    return p, ax


def ref_rprop(p, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    p = p.copy()
    prev, size = np.zeros_like(p), np.full_like(p, lr)
    for g in grads:
        g = -g if maximize else g
        s = np.sign(g * prev)
        size = np.clip(size * np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0)),
                       *step_sizes)
        g = np.where(s < 0, 0.0, g)
        p = p - np.sign(g) * size
        prev = g
    return p


CASES = [
    ("Adadelta", {}, ref_adadelta),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1, "maximize": True},
     ref_adadelta),
    ("Adamax", {"lr": 0.05}, ref_adamax),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True},
     ref_adamax),
    ("NAdam", {"lr": 0.05}, ref_nadam),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01}, ref_nadam),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "maximize": True}, ref_nadam),
    ("RAdam", {"lr": 0.05}, ref_radam),
    # small betas make the rectified (rho_t > 5) branch start at step 2
    ("RAdam", {"lr": 0.05, "betas": (0.5, 0.6), "weight_decay": 0.1}, ref_radam),
    ("RAdam", {"lr": 0.05, "betas": (0.5, 0.6), "weight_decay": 0.1,
               "decoupled_weight_decay": True, "maximize": True}, ref_radam),
    ("ASGD", {"lr": 0.05}, lambda p, g, **k: ref_asgd(p, g, **k)[0]),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 2, "weight_decay": 0.1,
              "maximize": True}, lambda p, g, **k: ref_asgd(p, g, **k)[0]),
    ("Rprop", {}, ref_rprop),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True},
     ref_rprop),
]
IDS = [f"{n}-{'-'.join(map(str, k.items()))}" for n, k, _ in CASES]


def _data(shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(STEPS)]
    grads[2] = grads[1] * 0.5  # same signs twice in a row (Rprop grows its steps)
    return p0, grads


def _run(name, kwargs, p0, grads, dtype=ember.float64):
    p = ember.tensor(p0, dtype=dtype, requires_grad=True)
    opt = getattr(optim, name)([p], **kwargs)
    for g in grads:
        p.grad = ember.tensor(g, dtype=dtype)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=IDS)
def test_matches_numpy_reference(name, kwargs, ref):
    p0, grads = _data()
    p, _ = _run(name, kwargs, p0, grads)
    np.testing.assert_allclose(p.detach().numpy(), ref(p0, grads, **kwargs), rtol=1e-10,
                               atol=1e-12)


def test_asgd_average_matches_reference():
    p0, grads = _data()
    kw = {"lr": 0.05, "t0": 2}
    _, opt = _run("ASGD", kw, p0, grads)
    ax = next(iter(opt.state.values()))["ax"]
    np.testing.assert_allclose(ax.numpy(), ref_asgd(p0, grads, **kw)[1], rtol=1e-10)


def _torch_steps(torch, name, kwargs, p0, grads, tdtype):
    tp = torch.tensor(p0, dtype=tdtype, requires_grad=True)
    topt = getattr(torch.optim, name)([tp], **kwargs)
    after = []
    for g in grads:
        tp.grad = torch.tensor(g, dtype=tdtype)
        topt.step()
        after.append(tp.detach().numpy().copy())
    return topt, after


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs,ref", CASES, ids=IDS)
def test_matches_torch_step_by_step(name, kwargs, ref, dtype):
    torch = pytest.importorskip("torch")
    p0, grads = _data(seed=1)
    edt, tdt = getattr(ember, dtype), getattr(torch, dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    topt, want = _torch_steps(torch, name, kwargs, p0, grads, tdt)
    p = ember.tensor(p0, dtype=edt, requires_grad=True)
    opt = getattr(optim, name)([p], **kwargs)
    for g, w in zip(grads, want):
        p.grad = ember.tensor(g, dtype=edt)
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), w, **tol)
    es, ts = opt.state_dict(), topt.state_dict()
    assert set(es["state"][0]) == set(ts["state"][0])
    for k, v in ts["state"][0].items():
        np.testing.assert_allclose(np.asarray(es["state"][0][k].numpy(), dtype=float),
                                   v.numpy(), **tol)
        assert es["state"][0][k].dtype.name == str(v.dtype).removeprefix("torch.")
    # the param groups carry the same options (PyTorch's keys, implementation flags included)
    assert es["param_groups"] == ts["param_groups"]


@pytest.mark.parametrize("name,kwargs,ref", CASES[::2], ids=IDS[::2])
def test_state_dict_round_trip_continues_identically(name, kwargs, ref, tmp_path):
    p0, grads = _data()
    a = ember.tensor(p0, requires_grad=True)
    opt = getattr(optim, name)([a], **kwargs)
    for g in grads[:3]:
        a.grad = ember.tensor(g)
        opt.step()
    path = tmp_path / "opt.ember"
    ember.save({"p": a, "opt": opt.state_dict()}, path)
    ck = ember.load(path)
    b = ck["p"]
    opt2 = getattr(optim, name)([b], lr=123.0)
    opt2.load_state_dict(ck["opt"])
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for g in grads[3:]:
        for t, o in ((a, opt), (b, opt2)):
            t.grad = ember.tensor(g)
            o.step()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_host_scalars_of_the_state_stay_on_the_host():
    p = ember.ones(3, dtype=ember.float64, requires_grad=True)
    for name, keys in (("ASGD", ("step", "eta", "mu")), ("NAdam", ("step", "mu_product"))):
        opt = getattr(optim, name)([p])
        p.grad = ember.ones(3, dtype=ember.float64)
        opt.step()
        sd = copy.deepcopy(opt.state_dict())
        q = ember.ones(3, dtype=ember.float16, requires_grad=True)
        opt2 = getattr(optim, name)([q])
        opt2.load_state_dict(sd)
        for k in keys:  # not cast to the parameter's dtype (PyTorch keeps them as saved)
            assert opt2.state[q][k].dtype is sd["state"][0][k].dtype
            assert opt2.state[q][k].device == ember.device("cpu")
        assert all(opt2.state[q][k].dtype is ember.float16 for k in opt2.state[q]
                   if k not in keys)


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_complex_params_as_real_pairs(name):
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    grads = [rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)) for _ in range(3)]
    pc, _ = _run(name, {"lr": 0.1}, p0, grads, dtype=ember.complex128)
    as_pairs = lambda z: np.stack([z.real, z.imag], -1)  # noqa: E731
    pr, _ = _run(name, {"lr": 0.1}, as_pairs(p0), [as_pairs(g) for g in grads])
    np.testing.assert_allclose(as_pairs(pc.detach().numpy()), pr.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("make,exc,match", [
    (lambda p: optim.Adadelta([p], rho=1.5), ValueError, "Invalid rho value: 1.5"),
    (lambda p: optim.Adadelta([p], lr=-1), ValueError, "Invalid learning rate: -1"),
    (lambda p: optim.Adamax([p], betas=(0.9, 1.0)), ValueError, "beta parameter at index 1"),
    (lambda p: optim.Adamax([p], eps=-1), ValueError, "Invalid epsilon value: -1"),
    (lambda p: optim.NAdam([p], momentum_decay=-1), ValueError,
     "Invalid momentum_decay value: -1"),
    (lambda p: optim.RAdam([p], weight_decay=-1), ValueError, "Invalid weight_decay value"),
    (lambda p: optim.ASGD([p], weight_decay=-0.5), ValueError, "Invalid weight_decay value"),
    (lambda p: optim.Rprop([p], etas=(1.5, 1.2)), ValueError, "Invalid eta values: 1.5, 1.2"),
    (lambda p: optim.SparseAdam([p], lr=0), ValueError, "Invalid learning rate: 0"),
    (lambda p: optim.SparseAdam([p], eps=0), ValueError, "Invalid epsilon value: 0"),
    (lambda p: optim.SparseAdam([ember.ones(2, dtype=ember.complex64, requires_grad=True)]),
     ValueError, r"Complex params at indices \[\[0, 0\]\]"),
    (lambda p: optim.Adam([p], foreach=True, fused=True), RuntimeError,
     "`fused` and `foreach` cannot be `True` together."),
    (lambda p: optim.SGD([p], fused=True, differentiable=True), RuntimeError,
     "`fused` does not support `differentiable`"),
    (lambda p: optim.Adagrad([p], fused=True, foreach=True), RuntimeError, "cannot be `True`"),
])
def test_argument_errors(make, exc, match):
    p = ember.ones(2, requires_grad=True)
    with pytest.raises(exc, match=match):
        make(p)


def test_sparse_adam_explains_that_ember_backward_gives_dense_gradients():
    p = ember.ones(4, 3, requires_grad=True)
    opt = optim.SparseAdam([p], lr=0.1)
    opt.step()  # nothing to do without gradients
    p.grad = ember.ones(4, 3)
    with pytest.raises(RuntimeError, match=r"SparseAdam does not support dense gradients, "
                                           r"please consider Adam instead \(ember's backward "
                                           r"gives dense gradients.*shape \[4, 3\]"):
        opt.step()
    assert p.tolist() == [[1.0] * 3] * 4


def test_sparse_adam_updates_only_the_rows_of_a_sparse_gradient():
    """Lazy Adam against numpy: rows 0 and 2 (2 given twice: summed) move, the others keep
    their values and zero moments."""
    p = ember.ones(4, 3, requires_grad=True)
    opt = optim.SparseAdam([p], lr=0.1, betas=(0.8, 0.9), eps=1e-6)
    values = np.array([[1.0, -2.0, 3.0], [0.5, 0.5, 0.5], [0.25, 0.0, -1.0]], np.float32)
    for step in (1, 2):
        p.grad = ember.sparse_coo_tensor(ember.tensor([[0, 2, 2]]), ember.tensor(values), (4, 3))
        opt.step()
    g = np.zeros((4, 3), np.float64)
    g[0], g[2] = values[0], values[1] + values[2]
    m = v = np.zeros((4, 3))
    want = np.ones((4, 3))
    for step in (1, 2):
        m, v = 0.8 * m + 0.2 * g, 0.9 * v + 0.1 * g * g
        rows = [0, 2]
        size = 0.1 * np.sqrt(1 - 0.9 ** step) / (1 - 0.8 ** step)
        want[rows] -= size * m[rows] / (np.sqrt(v[rows]) + 1e-6)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5)
    assert p[1].tolist() == [1.0] * 3 and opt.state[p]["exp_avg"][3].tolist() == [0.0] * 3


def test_sparse_adam_error_matches_torch():
    torch = pytest.importorskip("torch")
    tp = torch.ones(2, requires_grad=True)
    tp.grad = torch.ones(2)
    with pytest.raises(RuntimeError) as want:
        torch.optim.SparseAdam([tp]).step()
    p = ember.ones(2, requires_grad=True)
    p.grad = ember.ones(2)
    with pytest.raises(RuntimeError) as got:
        optim.SparseAdam([p]).step()
    assert str(got.value).startswith(str(want.value))


# -- implementation flags -----------------------------------------------------------------------
ALL = ["SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam", "RMSprop",
       "ASGD", "Rprop"]
FUSED = {"SGD", "Adam", "AdamW", "Adagrad"}


@pytest.mark.parametrize("name", ALL)
def test_flags_are_accepted_and_change_nothing_but_maximize(name):
    p0, grads = _data()
    lr = {"lr": 0.05}
    plain, _ = _run(name, lr, p0, grads)
    flags = [{"foreach": True}, {"foreach": False}, {"differentiable": False}]
    if name in FUSED:
        flags.append({"fused": True})
    if name not in ("SGD", "Adagrad"):
        flags.append({"capturable": True})
    for kw in flags:
        got, opt = _run(name, {**lr, **kw}, p0, grads)
        # foreach/fused run multi-tensor kernels: the same update, up to rounding order
        np.testing.assert_allclose(got.detach().numpy(), plain.detach().numpy(), rtol=1e-12,
                                   atol=1e-15)
        assert all(opt.param_groups[0][k] == v for k, v in kw.items())
    # maximize ascends: the same as descending with negated gradients
    up, _ = _run(name, {**lr, "maximize": True}, p0, grads)
    down, _ = _run(name, lr, p0, [-g for g in grads])
    np.testing.assert_allclose(up.detach().numpy(), down.detach().numpy(), rtol=1e-12)


def test_fused_requires_floating_point_params():
    p = ember.ones(3, dtype=ember.complex64, requires_grad=True)
    opt = optim.Adam([p], fused=True)
    p.grad = ember.ones(3, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="`fused=True` requires all the params to be floating "
                                           "point Tensors, but Adam got one of dtype complex64"):
        opt.step()


@pytest.mark.parametrize("name", ["SGD", "Adam", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
                                  "Rprop", "RMSprop", "Adagrad"])
def test_flag_signatures_match_torch(name):
    torch = pytest.importorskip("torch")
    import inspect
    want = inspect.signature(getattr(torch.optim, name).__init__).parameters
    got = inspect.signature(getattr(optim, name).__init__).parameters
    assert list(got) == list(want)
    for k in want:
        assert got[k].kind == want[k].kind, k
        assert got[k].default == want[k].default, k


def test_differentiable_requires_grad_through_the_update():
    # d/dp0 of sum(p1**2) with p1 = p0 - lr * g (plain SGD) is 2 * p1
    p0 = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    g = ember.tensor([0.1, 0.2, -0.3], dtype=ember.float64, requires_grad=True)
    p = p0.clone()
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p], lr=0.1)
    opt = optim.SGD([p], lr=0.1, differentiable=True)
    p.grad = g * 1.0
    opt.step()
    assert p.grad_fn is not None
    (p * p).sum().backward()
    p1 = (p0 - 0.1 * g).detach().numpy()
    np.testing.assert_allclose(p0.grad.numpy(), 2 * p1)
    np.testing.assert_allclose(g.grad.numpy(), -0.2 * p1)


DIFF_CASES = [("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1}),
              ("Adam", {"lr": 0.1, "amsgrad": True}), ("AdamW", {"lr": 0.1}),
              ("RMSprop", {"lr": 0.1, "centered": True, "momentum": 0.5}),
              ("Adagrad", {"lr": 0.1}), ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}),
              ("RAdam", {"lr": 0.1}), ("ASGD", {"t0": 1}), ("Rprop", {})]


@pytest.mark.parametrize("name,kw", DIFF_CASES, ids=[c[0] for c in DIFF_CASES])
def test_differentiable_step_gradients_match_torch(name, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    p0, g0 = rng.standard_normal(4), rng.standard_normal(4)
    out = []
    default = torch.get_default_dtype()
    # host scalars (step counters, NAdam's mu_product) follow the default dtype in both
    torch.set_default_dtype(torch.float64)
    ember.set_default_dtype(ember.float64)
    try:
        for lib, mod in ((ember, optim), (torch, torch.optim)):
            a = lib.tensor(p0, dtype=lib.float64, requires_grad=True)
            g = lib.tensor(g0, dtype=lib.float64, requires_grad=True)
            p = a.clone()
            opt = getattr(mod, name)([p], differentiable=True, **kw)
            p.grad = g * 1.0
            opt.step()
            (p * p).sum().backward()
            out.append((a.grad.numpy().copy(), None if g.grad is None else g.grad.numpy().copy()))
    finally:
        torch.set_default_dtype(default)
        ember.set_default_dtype(ember.float32)
    (ea, eg), (ta, tg) = out
    np.testing.assert_allclose(ea, ta, rtol=1e-10, atol=1e-14)
    assert (eg is None) == (tg is None)
    if tg is not None:
        np.testing.assert_allclose(eg, tg, rtol=1e-8, atol=1e-14)


@pytest.mark.parametrize("name,kwargs", [("Adadelta", {}), ("Adamax", {}),
                                         ("NAdam", {"weight_decay": 0.1}),
                                         ("RAdam", {"betas": (0.5, 0.6)}), ("ASGD", {"t0": 1}),
                                         ("Rprop", {})], ids=lambda x: str(x))
def test_opencl_matches_cpu(name, kwargs):
    if not ember.opencl.is_available():
        pytest.skip(f"opencl unavailable: {ember.opencl.unavailable_reason()}")
    p0, grads = _data()
    res = []
    for dev in ("cpu", "opencl"):
        p = ember.tensor(p0, dtype=ember.float32, device=dev, requires_grad=True)
        opt = getattr(optim, name)([p], **kwargs)
        for g in grads:
            p.grad = ember.tensor(g, dtype=ember.float32, device=dev)
            opt.step()
        assert all(v.device.type == "cpu" for k, v in opt.state[p].items()
                   if k in type(opt)._host_state_keys)
        res.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_state_dicts_without_the_newer_options_still_load(name):
    # a state dict from before the implementation flags (or from an older torch) lacks them
    p0, grads = _data()
    a, opt = _run(name, {"lr": 0.05}, p0, grads[:2])
    sd = copy.deepcopy(opt.state_dict())
    for group in sd["param_groups"]:
        for key in ("foreach", "fused", "differentiable", "capturable", "maximize",
                    "decoupled_weight_decay"):
            group.pop(key, None)
    b = ember.tensor(a.detach().numpy(), requires_grad=True)
    opt2 = getattr(optim, name)([b], lr=0.05)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["maximize"] is False
    for g in grads[2:]:
        for t, o in ((a, opt), (b, opt2)):
            t.grad = ember.tensor(g)
            o.step()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
