"""The names issue #30 (item 8) closes, against torch: torch.masked's reductions, the window
functions, tril/triu_indices, empty_strided & co, scalar_tensor, the function forms of in-place
methods, optim.Adafactor and optim.Muon.

The op checks run torch's own OpInfo samples (``common_methods_invocations.op_db``) through
ember: same values (at the OpInfo's dtype tolerances), dtype and shape, and for float64
differentiable samples the same gradients.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# ember's callable for an OpInfo whose op is a lambda of torch's test suite
LAMBDAS = {
    "empty_strided": lambda inp, *a, **kw: ember.empty_strided(inp, *a, **kw),
    "new_empty_strided": lambda x, *a, **kw: x.new_empty_strided(*a, **kw),
    "resize_as_": lambda x, other: ember.resize_as_(x.clone(), other),
    "zero_": lambda x: ember.zero_(x.clone()),
}
UNINITIALIZED = {"empty_strided", "new_empty_strided"}  # compare layout, not values
NAMES = ["fill", "scalar_tensor", "tril_indices", "triu_indices"] + list(LAMBDAS)


def _opinfos():
    from torch.testing._internal.common_methods_invocations import op_db
    return [o for o in op_db if o.name in NAMES or o.name.startswith(("masked.", "signal."))]


@pytest.fixture(scope="module")
def opinfos():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {(o.name, o.variant_test_name): o for o in _opinfos()}


def _ember_fn(name):
    if name in LAMBDAS:
        return LAMBDAS[name]
    obj = ember
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def to_ember(x):
    if isinstance(x, torch.Tensor):
        t = ember.tensor(x.detach().cpu().numpy())
        return t.requires_grad_(x.requires_grad) if x.requires_grad else t
    if isinstance(x, torch.dtype):
        return getattr(ember, str(x).split(".")[1])
    if isinstance(x, torch.device):
        return str(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_ember(v) for v in x)
    if isinstance(x, dict):
        return {k: to_ember(v) for k, v in x.items()}
    return x


def _values(x):
    if isinstance(x, (list, tuple)):
        return [_values(v) for v in x]
    return x


def _check_same(name, e, t, atol, rtol, sample):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _check_same(name, a, b, atol, rtol, sample)
        return
    if not isinstance(t, torch.Tensor):
        assert e == t
        return
    assert tuple(e.shape) == tuple(t.shape), (name, sample)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], (name, sample)
    if name in UNINITIALIZED:
        assert tuple(e.stride()) == tuple(t.stride()), (name, sample)
        return
    if t.dtype in (torch.float32, torch.complex64):
        atol, rtol = max(atol, 1e-5), max(rtol, 1.3e-6)
    np.testing.assert_allclose(e.detach().numpy().astype(np.float64),
                               t.detach().numpy().astype(np.float64), atol=atol, rtol=rtol,
                               equal_nan=True, err_msg=f"{name} {sample}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_opinfo_samples_like_torch(opinfos, dtype):
    tdt = getattr(torch, dtype)
    compared, covered = 0, set()
    for (name, variant), info in sorted(opinfos.items()):
        if tdt not in info.dtypes:
            continue
        fn = _ember_fn(name)
        atol, rtol = (1e-5, 1.3e-6) if dtype == "float32" else (1e-7, 1e-7)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samples = list(info.sample_inputs("cpu", tdt, requires_grad=False))
        for s in samples:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = info.op(s.input, *s.args, **s.kwargs)
                got = fn(to_ember(s.input), *to_ember(s.args), **to_ember(s.kwargs))
            _check_same(name, got, expected, atol, rtol, s)
            compared += 1
        covered.add(name)
    assert compared > (100 if dtype != "int64" else 10)
    assert covered == {n for (n, _), info in opinfos.items() if tdt in info.dtypes}


def test_opinfo_gradients_like_torch(opinfos):
    compared = 0
    for (name, variant), info in sorted(opinfos.items()):
        if not info.supports_autograd or torch.float64 not in info.dtypes:
            continue
        fn = _ember_fn(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samples = list(info.sample_inputs("cpu", torch.float64, requires_grad=True))
        for s in samples[:12]:
            if not isinstance(s.input, torch.Tensor) or not s.input.requires_grad:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t_out = info.op(s.input, *s.args, **s.kwargs)
                if not isinstance(t_out, torch.Tensor) or not t_out.requires_grad:
                    continue
                x = to_ember(s.input)
                e_out = fn(x, *to_ember(s.args), **to_ember(s.kwargs))
                (t_grad,) = torch.autograd.grad(t_out.nan_to_num(0, 0, 0).sum(), s.input)
                (e_grad,) = ember.autograd.grad(e_out.nan_to_num(0, 0, 0).sum(), x)
            np.testing.assert_allclose(e_grad.numpy(), t_grad.numpy(), rtol=1e-7, atol=1e-9,
                                       err_msg=f"{name} {s}")
            compared += 1
    assert compared > 50


# -- names without an OpInfo ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bartlett_window", "blackman_window", "hamming_window",
                                  "hann_window", "kaiser_window"])
def test_window_factories_like_torch(name):
    for n in (0, 1, 2, 5, 16):
        for periodic in (True, False):
            for dt in ("float32", "float64"):
                e = getattr(ember, name)(n, periodic, dtype=getattr(ember, dt))
                t = getattr(torch, name)(n, periodic, dtype=getattr(torch, dt))
                assert e.dtype is getattr(ember, dt) and tuple(e.shape) == tuple(t.shape)
                np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
    assert getattr(ember, name)(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="non-negative window_length"):
        getattr(ember, name)(-1)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        getattr(ember, name)(3, dtype=ember.int64)


def test_kaiser_and_hamming_parameters_like_torch():
    for beta in (0.0, 5.0, 12.0):
        np.testing.assert_allclose(ember.kaiser_window(9, False, beta, dtype=ember.float64),
                                   torch.kaiser_window(9, False, beta, dtype=torch.float64),
                                   rtol=1e-12)
    np.testing.assert_allclose(ember.hamming_window(7, True, 0.6, 0.3, dtype=ember.float64),
                               torch.hamming_window(7, True, 0.6, 0.3, dtype=torch.float64),
                               rtol=1e-12)


def test_signal_window_errors_like_torch():
    for bad in (dict(M=-1), dict(M=3, dtype=ember.float16)):
        with pytest.raises(ValueError):
            ember.signal.windows.hann(**bad)
    with pytest.raises(ValueError, match="Tau must be positive"):
        ember.signal.windows.exponential(3, tau=0)


@pytest.mark.parametrize("name", ["abs_", "sqrt_", "sigmoid_", "zero_", "fill_", "clamp_min_",
                                  "nan_to_num_", "xlogy_", "trunc_"])
def test_inplace_function_forms_like_torch(name):
    args = {"fill_": (2.5,), "clamp_min_": (0.2,), "xlogy_": (3.0,)}.get(name, ())
    x = np.array([0.3, 1.7, 4.0, 0.0])
    e, t = ember.tensor(x), torch.tensor(x)
    assert getattr(ember, name)(e, *args) is e
    getattr(torch, name)(t, *args)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_dropout_and_renorm_native_forms():
    x = ember.ones(1000)
    assert ember.dropout_(x, 0.5, True) is x
    kept = x.ne(0)
    assert 350 < int(kept.sum()) < 650 and bool((x[kept] == 2).all())
    w = np.random.default_rng(1).standard_normal((5, 3)) * 3
    e, t = ember.tensor(w), torch.tensor(w)
    ember.embedding_renorm_(e, ember.tensor([0, 2, 2]), 1.0, 2.0)
    torch.embedding_renorm_(t, torch.tensor([0, 2, 2]), 1.0, 2.0)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


def test_fill_reaches_a_tensor_value_like_torch():
    x, v = ember.ones(3, requires_grad=True), ember.tensor(2.0, requires_grad=True)
    ember.fill(x, v).sum().backward()
    assert float(v.grad) == 3.0 and x.grad.tolist() == [0.0, 0.0, 0.0]


def test_empty_strided_and_permuted_layouts():
    assert ember.empty_permuted((2, 3, 4), (0, 2, 1)).stride() == \
        torch.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    t = ember.empty_strided((2, 3), (1, 2))
    assert t.stride() == (1, 2) and t._storage.nbytes == 6 * 4  # storage just large enough
    with pytest.raises(RuntimeError, match="must match dimensionality of strides"):
        ember.empty_strided((2, 3), (1,))


def test_range_is_inclusive_and_warns():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = ember.range(1, 2, 0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(r.numpy(), torch.range(1, 2, 0.25).numpy())


# -- optimizers ---------------------------------------------------------------------------------
def _train(lib, name, kwargs, shapes, steps=6):
    rng = np.random.default_rng(0)
    params = [lib.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    opt = getattr(lib.optim, name)(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum((p ** 2 * (j + 1)).sum() + p.sin().sum() for j, p in enumerate(params))
        loss.backward()
        opt.step()
    return [p.detach().numpy() for p in params], opt


@pytest.mark.parametrize("kwargs", [{}, dict(lr=0.05, weight_decay=0.1),
                                    dict(maximize=True, eps=(1e-30, 1e-3), d=2.0),
                                    dict(beta2_decay=-0.5)])
def test_adafactor_like_torch(kwargs):
    shapes = ((4, 3), (3,), (2, 3, 5))
    (e, eopt), (t, topt) = _train(ember, "Adafactor", kwargs, shapes), \
        _train(torch, "Adafactor", kwargs, shapes)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert sorted(eopt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])
    assert sorted(eopt.param_groups[0]) == sorted(topt.param_groups[0])


@pytest.mark.parametrize("kwargs", [{}, dict(lr=0.02, nesterov=False),
                                    dict(adjust_lr_fn="match_rms_adamw", weight_decay=0.0),
                                    dict(momentum=0.0, ns_steps=3)])
def test_muon_like_torch(kwargs):
    shapes = ((4, 3), (3, 6))
    (e, _), (t, _) = _train(ember, "Muon", kwargs, shapes), _train(torch, "Muon", kwargs, shapes)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_optimizer_argument_errors_like_torch():
    p = [ember.ones(2, 2, requires_grad=True)]
    for name, kw, exc in [("Adafactor", dict(lr=-1), ValueError),
                          ("Adafactor", dict(d=0.5), ValueError),
                          ("Muon", dict(adjust_lr_fn="x"), ValueError)]:
        with pytest.raises(exc):
            getattr(ember.optim, name)(p, **kw)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        ember.optim.Muon([ember.ones(3, requires_grad=True)])
    assert math.isclose(ember.optim.Muon(p).defaults["eps"], 1e-7)
