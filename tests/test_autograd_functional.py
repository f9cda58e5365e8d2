"""ember.autograd.functional against torch.autograd.functional: the same functions on the same
inputs give the same values, gradients (create_graph), tuple structure and errors."""
import numpy as np
import pytest

import ember
import ember.autograd.functional as EF

torch = pytest.importorskip("torch")
TF = torch.autograd.functional

rng = np.random.default_rng(0)
X = rng.standard_normal((2, 3))
Y = rng.standard_normal(3)
V_OUT = rng.standard_normal(2)
V_X = rng.standard_normal((2, 3))
V_Y = rng.standard_normal(3)


def lib(mod):
    return ember if mod is EF else torch


def to(mod, a, requires_grad=False):
    t = lib(mod).tensor(a, dtype=lib(mod).float64)
    return t.requires_grad_() if requires_grad else t


def reducer(x):  # (2, 3) -> (2,)
    return x.exp().sum(dim=1)


def two_in_two_out(x, y):
    return (x * y).sin(), (x ** 2).sum() * y


def scalar_fn(x, y):
    return (x.sin() * y).sum() + (y ** 3).sum()


def unused_second(x, y):
    return x.cos().sum()


def linear(x):
    return 3 * x


def flat(r):
    """Results (tensors in nested tuples or lists) as numpy arrays in the same structure."""
    if isinstance(r, (tuple, list)):
        return (type(r).__name__, [flat(e) for e in r])
    return r.detach().numpy() if hasattr(r, "detach") else r


def assert_same(e, t):
    fe, ft = flat(e), flat(t)

    def cmp(a, b):
        if isinstance(b, tuple):
            assert isinstance(a, tuple) and a[0] == b[0] and len(a[1]) == len(b[1])
            for x, y in zip(a[1], b[1]):
                cmp(x, y)
        else:
            assert not isinstance(a, tuple)
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    cmp(fe, ft)


CASES = [
    ("vjp", reducer, lambda m: to(m, X), lambda m: to(m, V_OUT), {}),
    ("vjp", two_in_two_out, lambda m: (to(m, X), to(m, Y)),
     lambda m: (to(m, V_X), to(m, V_Y)), {}),
    ("vjp", unused_second, lambda m: (to(m, X), to(m, Y)), None, {}),
    ("jvp", reducer, lambda m: to(m, X), lambda m: to(m, V_X), {}),
    ("jvp", two_in_two_out, lambda m: (to(m, X), to(m, Y)),
     lambda m: (to(m, V_X), to(m, V_Y)), {}),
    ("vhp", scalar_fn, lambda m: (to(m, X), to(m, Y)), lambda m: (to(m, V_X), to(m, V_Y)), {}),
    ("hvp", scalar_fn, lambda m: (to(m, X), to(m, Y)), lambda m: (to(m, V_X), to(m, V_Y)), {}),
    ("hvp", unused_second, lambda m: (to(m, X), to(m, Y)), lambda m: (to(m, V_X), to(m, V_Y)),
     {}),
]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_products_match_torch(case, create_graph):
    name, fn, inp, v, kw = CASES[case]
    results = []
    for mod in (EF, TF):
        args = inp(mod)
        vv = v(mod) if v is not None else None
        results.append(getattr(mod, name)(fn, args, vv, create_graph=create_graph, **kw))
    assert_same(*results)


@pytest.mark.parametrize("vectorize,strategy", [(False, "reverse-mode"), (True, "reverse-mode"),
                                                (True, "forward-mode")])
@pytest.mark.parametrize("fn,inp", [
    (reducer, lambda m: to(m, X)),
    (two_in_two_out, lambda m: (to(m, X), to(m, Y))),
    (unused_second, lambda m: (to(m, X), to(m, Y))),
    (lambda x: (x.tanh(),), lambda m: to(m, Y)),
])
def test_jacobian_matches_torch(fn, inp, vectorize, strategy):
    e = EF.jacobian(fn, inp(EF), vectorize=vectorize, strategy=strategy)
    t = TF.jacobian(fn, inp(TF), vectorize=vectorize, strategy=strategy)
    assert_same(e, t)


@pytest.mark.parametrize("vectorize,outer", [(False, "reverse-mode"), (True, "reverse-mode"),
                                             (True, "forward-mode")])
@pytest.mark.parametrize("fn,inp", [
    (scalar_fn, lambda m: (to(m, X), to(m, Y))),
    (lambda x: (x ** 3).sum() * x[0], lambda m: to(m, Y)),
    (unused_second, lambda m: (to(m, X), to(m, Y))),
])
def test_hessian_matches_torch(fn, inp, vectorize, outer):
    e = EF.hessian(fn, inp(EF), vectorize=vectorize, outer_jacobian_strategy=outer)
    t = TF.hessian(fn, inp(TF), vectorize=vectorize, outer_jacobian_strategy=outer)
    assert_same(e, t)


def test_create_graph_differentiates_through_to_the_inputs():
    grads = []
    for mod in (EF, TF):
        x = to(mod, Y, requires_grad=True)
        jac = mod.jacobian(lambda a: a.sin() * a.sum(), x, create_graph=True)
        assert jac.requires_grad
        (g,) = lib(mod).autograd.grad(jac.sum(), x)
        _, vj = mod.vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
        (g2,) = lib(mod).autograd.grad(vj.sum(), x)
        h = mod.hessian(lambda a: (a ** 4).sum(), x, create_graph=True)
        (g3,) = lib(mod).autograd.grad(h.sum(), x)
        grads.append((g, g2, g3))
    assert_same(*[tuple(g) for g in grads])


def test_results_are_detached_without_create_graph():
    x = to(EF, Y, requires_grad=True)
    out, vj = EF.vjp(lambda a: (a ** 2).sum(), x)
    assert not out.requires_grad and not vj.requires_grad
    assert not EF.jacobian(lambda a: a * 2, x).requires_grad


def _error(mod, call):
    with pytest.raises(Exception) as info:
        call(mod, lib(mod))
    return type(info.value), str(info.value)


@pytest.mark.parametrize("call", [
    lambda m, L: m.vjp(reducer, [to(m, X)], to(m, V_OUT)),            # a list is not a tuple
    lambda m, L: m.vjp(reducer, (to(m, X), 3.0), to(m, V_OUT)),
    lambda m, L: m.vjp(reducer, to(m, X)),                            # v needed
    lambda m, L: m.vjp(reducer, to(m, X), to(m, V_X)),                # v of the wrong size
    lambda m, L: m.vjp(two_in_two_out, (to(m, X), to(m, Y)), (to(m, V_X),)),
    lambda m, L: m.vjp(lambda x: x.detach(), to(m, Y), to(m, Y), strict=True),
    lambda m, L: m.vjp(unused_second, (to(m, X), to(m, Y)), strict=True),
    lambda m, L: m.jvp(reducer, to(m, X)),
    lambda m, L: m.jvp(unused_second, (to(m, X), to(m, Y)), (to(m, V_X), to(m, V_Y)),
                       strict=True),
    lambda m, L: m.jacobian(reducer, to(m, X), strategy="sideways"),
    lambda m, L: m.jacobian(reducer, to(m, X), strategy="forward-mode"),
    lambda m, L: m.jacobian(reducer, to(m, X), strategy="forward-mode", vectorize=True,
                            create_graph=True),
    lambda m, L: m.jacobian(reducer, to(m, X), strategy="forward-mode", vectorize=True,
                            strict=True),
    lambda m, L: m.jacobian(reducer, to(m, X), vectorize=True, strict=True),
    lambda m, L: m.jacobian(unused_second, (to(m, X), to(m, Y)), strict=True),
    lambda m, L: m.hessian(reducer, to(m, X)),                        # not a scalar
    lambda m, L: m.hessian(two_in_two_out, (to(m, X), to(m, Y))),     # a tuple
    lambda m, L: m.hessian(linear, to(m, Y[:1]), strict=True),
    lambda m, L: m.hessian(scalar_fn, (to(m, X), to(m, Y)), outer_jacobian_strategy="up"),
    lambda m, L: m.vhp(reducer, to(m, X), to(m, V_X)),
    lambda m, L: m.hvp(lambda x: x.sum(), to(m, X), to(m, V_X), strict=True),
    lambda m, L: m.vhp(scalar_fn, (to(m, X), to(m, Y))),
])
def test_errors_match_torch(call):
    e_type, e_msg = _error(EF, call)
    t_type, t_msg = _error(TF, call)
    assert e_type is t_type
    assert e_msg.replace("ember", "torch") == t_msg.replace("torch.Size", "torch.Size"), \
        (e_msg, t_msg)


def test_public_paths():
    assert ember.autograd.functional.jacobian is EF.jacobian
    from ember.autograd.functional import hessian, hvp, jvp, vhp, vjp  # noqa: F401
