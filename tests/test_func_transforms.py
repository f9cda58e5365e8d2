"""ember.func's differentiation transforms and module helpers: grad, grad_and_value, vjp, jvp,
linearize, jacrev, jacfwd, hessian, their nesting, functional_call, stack_module_state and
replace_all_batch_norm_modules_. References: closed forms, finite differences in float64,
ember's reverse-mode autograd, and torch.func where torch is installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp,
                        linearize, replace_all_batch_norm_modules_, stack_module_state, vjp, vmap)

D = ember.float64


def _close(a, b, tol=1e-7):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _randn(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=D)


def _fd_jacobian(f, x, eps=1e-6):
    cols = []
    for i in range(x.numel()):
        e = ember.zeros(x.numel(), dtype=D)
        e[i] = eps
        e = e.reshape(x.shape)
        cols.append(((f(x + e) - f(x - e)) / (2 * eps)).reshape(-1))
    return ember.stack(cols, 1).reshape(*f(x).shape, *x.shape)


def f_scalar(x):
    return (x.sin() * x.exp()).sum() + (x * x).prod()


def test_grad_argnums_has_aux_and_value():
    x, y = _randn(3), _randn(3, seed=1)

    def f(a, b):
        return (a * b.exp()).sum(), {"aux": a.detach() * 2}
    gx, aux = grad(f, has_aux=True)(x, y)
    _close(gx, y.exp())
    _close(aux["aux"], x * 2)
    (ga, gb), (value, extra) = grad_and_value(f, argnums=(0, 1), has_aux=True)(x, y)
    _close(ga, y.exp())
    _close(gb, x * y.exp())
    _close(value, (x * y.exp()).sum())
    assert not value.requires_grad and not ga.requires_grad
    # a function that ignores its input has a zero gradient
    _close(grad(lambda a, b: b.sum(), argnums=0)(x, y), ember.zeros(3, dtype=D))


def test_grad_errors():
    x = _randn(3)
    with pytest.raises(RuntimeError, match=r"grad_and_value\(f\)\(\*args\): Expected f\(\*args\) "
                                           r"to return a scalar Tensor, got tensor with 1 dims"):
        grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match=r"Expected f\(\*args\) to return a Tensor, got <class "
                                           r"'float'>"):
        grad(lambda a: 1.0)(x)
    with pytest.raises(RuntimeError, match=r"output of function f should be a tuple: \(output, "
                                           r"aux\) if has_aux is True"):
        grad(lambda a: a.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match=r"Got argnum=2, but only 1 positional inputs"):
        grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match=r"argnums must be int or Tuple\[int, \.\.\.\], got: "
                                           r"<class 'float'>"):
        grad(lambda a: a.sum(), argnums=0.0)(x)
    with pytest.raises(RuntimeError, match="argnums elements must be unique"):
        grad(lambda a, b: a.sum(), argnums=(0, 0))(x, x)
    with pytest.raises(RuntimeError, match="floating point"):
        grad(lambda a: a.sum())(ember.ones(3, dtype=ember.int64))


def test_grad_respects_and_composes_with_autograd():
    x = _randn(3).requires_grad_()
    g = grad(lambda a: (a ** 3).sum())(x)        # connected to x's graph: differentiable again
    assert g.requires_grad
    (h,) = ember.autograd.grad(g.sum(), x)
    _close(h, 6 * x.detach())
    with ember.no_grad():                         # grad ignores an enclosing no_grad
        _close(grad(lambda a: (a * a).sum())(x.detach()), 2 * x.detach())
    # a closed-over tensor is not differentiated (no perturbation confusion)
    y = _randn(3, seed=2)
    _close(grad(lambda a: grad(lambda b: (a * b).sum())(a).sum())(y), ember.ones(3, dtype=D))


def test_vjp_and_its_structure_checks():
    x = _randn(2, 3)
    out, fn = vjp(lambda a: (a.sin(), a.sum()), x)
    ct = (ember.ones(2, 3, dtype=D), ember.tensor(2.0, dtype=D))
    (g,) = fn(ct)
    _close(g, x.cos() + 2)
    _close(fn(ct)[0], g)                           # vjp_fn can be called again
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents to be the "
                                           "same as pytree structure of outputs"):
        fn(ct[0])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fn((ember.ones(3, dtype=D), ct[1]))
    out, fn, aux = vjp(lambda a: (a.exp(), a.shape), x, has_aux=True)
    assert aux == x.shape
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point or complex"):
        vjp(lambda a: a.argmax(), x)


def test_jvp_linearize_and_errors():
    x, t = _randn(4), _randn(4, seed=1)
    out, jt = jvp(lambda a: a.sin() * a, (x,), (t,))
    _close(out, x.sin() * x)
    _close(jt, (x.cos() * x + x.sin()) * t)
    _, jt2, aux = jvp(lambda a: (a.exp(), a * 3), (x,), (t,), has_aux=True)
    _close(jt2, x.exp() * t)
    assert not hasattr(aux, "_fw") or not aux._fw
    _, zero = jvp(lambda a: ember.ones(2, dtype=D), (x,), (t,))
    _close(zero, ember.zeros(2, dtype=D))
    with pytest.raises(RuntimeError, match="strict=True"):
        jvp(lambda a: ember.ones(2, dtype=D), (x,), (t,), strict=True)
    with pytest.raises(RuntimeError, match=r"jvp\(f, primals, tangents\): Expected primals to be a "
                                           r"tuple"):
        jvp(lambda a: a, x, (t,))
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same "
                                           "python structure"):
        jvp(lambda a: a, (x,), (t, t))
    with pytest.raises(RuntimeError, match="different size than that of the original Tensor"):
        jvp(lambda a: a, (x,), (t[:2],))
    out, jfn = linearize(lambda a: (a * a).tanh(), x)
    _close(out, (x * x).tanh())
    _close(jfn(t), (1 - (x * x).tanh() ** 2) * 2 * x * t)
    assert not jfn(t).requires_grad


def test_jacobians_against_finite_differences():
    x = _randn(3)
    w = _randn(4, 3, seed=3)

    def f(a):
        return (w @ a).tanh() * a.sum()
    fd = _fd_jacobian(f, x)
    _close(jacrev(f)(x), fd, 1e-6)
    _close(jacfwd(f)(x), fd, 1e-6)
    _close(jacrev(f, chunk_size=1)(x), fd, 1e-6)
    _close(jacfwd(f, chunk_size=2)(x), fd, 1e-6)
    # argnums and has_aux
    ja, jb = jacrev(lambda a, b: a * b.sin(), argnums=(0, 1))(x, x)
    eye = ember.eye(3, dtype=D)
    _close(ja, eye * x.sin())
    _close(jb, eye * (x * x.cos()))
    jac, aux = jacfwd(lambda a: (a.exp(), a.sum()), has_aux=True)(x)
    _close(aux, x.sum())
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0"):
        jacrev(f, chunk_size=0)


def test_hessian_and_nestings():
    x = _randn(3)
    H = hessian(f_scalar)(x)
    fd = _fd_jacobian(grad(f_scalar), x)
    _close(H, fd, 1e-6)
    for other in (jacfwd(jacrev(f_scalar)), jacrev(jacrev(f_scalar)), jacrev(jacfwd(f_scalar)),
                  jacfwd(jacfwd(f_scalar))):
        _close(other(x), H, 1e-9)
    # hessian-vector products: forward-over-reverse and reverse-over-forward
    v = _randn(3, seed=4)
    _close(jvp(grad(f_scalar), (x,), (v,))[1], H @ v)
    _close(grad(lambda a: jvp(f_scalar, (a,), (v,))[1])(x), H @ v)
    # grad(grad): d²/dt² sin(t)·t² at t = 0.7
    t = ember.tensor(0.7, dtype=D)
    exact = -math.sin(0.7) * 0.49 + 4 * 0.7 * math.cos(0.7) + 2 * math.sin(0.7)
    _close(grad(grad(lambda s: s.sin() * s * s))(t), exact)
    # vmap(grad), vmap(jacrev), grad(vmap(grad)) against loops / finite differences
    X = _randn(5, 3, seed=5)
    _close(vmap(grad(f_scalar))(X), ember.stack([grad(f_scalar)(r) for r in X]))
    _close(vmap(hessian(f_scalar))(X), ember.stack([hessian(f_scalar)(r) for r in X]), 1e-9)

    def outer(w):
        return vmap(grad(lambda xi: (w * xi).sin().sum()))(X).sum()
    _close(grad(outer)(x), _fd_jacobian(outer, x), 1e-6)
    V = _randn(6, 3, seed=6)
    _close(vmap(lambda vv: jvp(f_scalar, (x,), (vv,))[1])(V), V @ grad(f_scalar)(x))
    _close(jvp(vmap(lambda a: a.sin()), (X,), (X * 0 + 1,))[1], X.cos())


def test_against_torch_func():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(7).standard_normal(4)

    def make(lib):
        w = lib.tensor(np.arange(16.0).reshape(4, 4) / 10, dtype=lib.float64)
        return lambda a: ((w @ a).tanh() * a).sum()
    ours = ember.func.hessian(make(ember))(ember.tensor(x, dtype=D))
    theirs = torch.func.hessian(make(torch))(torch.tensor(x, dtype=torch.float64))
    _close(ours, theirs.numpy(), 1e-10)


# -- modules ------------------------------------------------------------------------------------
class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3, bias=False)
        self.b = nn.Linear(3, 3, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("scale", ember.ones(3))

    def forward(self, x):
        return self.b(self.a(x)) * self.scale


def test_functional_call():
    m = _Tied()
    x = ember.randn(2, 3)
    w = ember.randn(3, 3)
    out = functional_call(m, {"a.weight": w}, (x,))            # tied: b.weight follows
    _close(out, x @ w.t() @ w.t())
    assert m.a.weight is m.b.weight and m.a.weight is not w    # restored
    out = functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
    _close(out, x @ w.t() @ m.b.weight.detach().t())
    out = functional_call(m, ({"a.weight": w}, {"scale": ember.full((3,), 2.0)}), x)
    _close(out, x @ w.t() @ w.t() * 2)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(m, ({"a.weight": w}, {"a.weight": w}), (x,))
    with pytest.raises(ValueError, match="which are tied. Consider using tie_weights=False"):
        functional_call(m, {"a.weight": w, "b.weight": w * 2}, (x,))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): 'scale'"):
        functional_call(m, {"a.weight": w, "b.weight": w}, (x,), strict=True)
    with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts to be a dict"):
        functional_call(m, 1, (x,))


def test_stack_module_state_and_batch_norm_replacement():
    models = [nn.Linear(3, 2) for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad
    assert buffers == {}
    x = ember.randn(5, 3)
    out = vmap(lambda p: functional_call(models[0], p, (x,)))(params)
    _close(out, ember.stack([m(x).detach() for m in models]), 1e-6)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="Expected all models to be of the same class"):
        stack_module_state([nn.Linear(3, 2), nn.ReLU()])
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    assert replace_all_batch_norm_modules_(net) is net
    bn = net[1]
    assert bn.running_mean is None and not bn.track_running_stats
    xs = ember.randn(2, 6, 3)
    out = vmap(net)(xs)
    _close(out, ember.stack([net(b) for b in xs]).detach(), 1e-5)


def test_transforms_on_opencl_match_the_cpu():
    if not ember.opencl.is_available():
        reason = ember.runtime.registry.registry.unavailable_reason("opencl")
        pytest.skip(f"opencl unavailable: {reason}")
    import ember.nn.functional as F
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))
    x, y = ember.randn(8, 6), ember.randint(0, 3, (8,))

    def per_sample(device):
        m = model.to(device) if device == "cpu" else __import__("copy").deepcopy(model).to(device)
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, xi, yi):
            return F.cross_entropy(functional_call(m, p, (xi[None],)), yi[None])
        grads = vmap(grad(loss), in_dims=(None, 0, 0))(params, x.to(device), y.to(device))
        jac = jacfwd(lambda xi: functional_call(m, params, (xi,)))(x[0].to(device))
        return {k: v.cpu() for k, v in grads.items()}, jac.cpu()
    (g_cpu, j_cpu), (g_cl, j_cl) = per_sample("cpu"), per_sample("opencl")
    for k in g_cpu:
        _close(g_cl[k], g_cpu[k], 1e-4)
    _close(j_cl, j_cpu, 1e-4)
