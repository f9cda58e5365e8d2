"""Multi-tensor optimizer paths (issue #20): ``_foreach_*`` ops against their single-tensor
composites, and SGD/Adam/AdamW with the default (foreach), ``fused=True`` and ``foreach=False``
giving the same parameters step after step (and torch's, when installed)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.ops import foreach as fe

rng = np.random.default_rng(4)
SHAPES = [(3, 4), (5,), (2, 3, 2), ()]


def _lists(k, dtype=ember.float64, positive=False):
    out = []
    for _ in range(k):
        xs = []
        for s in SHAPES:
            v = rng.standard_normal(s)
            xs.append(ember.tensor(np.abs(v) + 0.5 if positive else v, dtype=dtype))
        out.append(xs)
    return out


def _clone(xs):
    return [x.clone() for x in xs]


@pytest.mark.parametrize("name,k,scalar", [
    ("_foreach_add_", 2, -0.5), ("_foreach_mul_", 1, 0.9), ("_foreach_div_", 1, 3.0),
    ("_foreach_lerp_", 2, 0.2), ("_foreach_lerp_", 2, 0.7), ("_foreach_addcmul_", 3, 0.3),
    ("_foreach_addcdiv_", 3, -0.3), ("_foreach_maximum_", 2, None)])
def test_foreach_op_matches_its_composite(name, k, scalar):
    lists = _lists(k, positive=name == "_foreach_addcdiv_")
    got = _clone(lists[0])
    want = _clone(lists[0])
    args = [got] + lists[1:]
    fn = getattr(ember, name)
    if scalar is None:
        fn(*args)
    elif name == "_foreach_add_":
        fn(*args, alpha=scalar)
    else:
        fn(*args, scalar)
    composite = {"_foreach_add_": fe._add_list, "_foreach_mul_": fe._mul_scalar,
                 "_foreach_div_": fe._div_scalar, "_foreach_lerp_": fe._lerp,
                 "_foreach_addcmul_": fe._addcmul, "_foreach_addcdiv_": fe._addcdiv,
                 "_foreach_maximum_": fe._maximum}[name]
    composite(*([want] + lists[1:] + ([scalar] if scalar is not None else [])))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name,composite", [("_foreach_mul_", fe._mul_list),
                                            ("_foreach_div_", fe._div_list)])
def test_foreach_list_overloads_match_their_composites(name, composite):
    selfs, others = _lists(2, positive=True)
    got, want = _clone(selfs), _clone(selfs)
    getattr(ember, name)(got, others)          # torch's .List overload: self[i] op= other[i]
    composite(want, others)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14, atol=1e-15)
    with pytest.raises(RuntimeError, match=name):
        getattr(ember, name)(got, others[:2])


def test_foreach_bumps_versions_and_checks_lists():
    a, b = _lists(2)
    v = [t._version for t in a]
    ember._foreach_add_(a, b)
    assert [t._version for t in a] == [x + 1 for x in v]
    with pytest.raises(RuntimeError, match="same number"):
        ember._foreach_add_(a, b[:2])
    with pytest.raises(RuntimeError, match="do not match"):
        ember._foreach_add_(a, list(reversed(b)))
    with pytest.raises(TypeError, match="list of Tensors"):
        ember._foreach_mul_([1.0], 2.0)


def test_foreach_records_autograd_when_needed():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = [x * 1]
    ember._foreach_mul_(y, 3.0)
    y[0].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def _model(seed, lib):
    lib.manual_seed(seed)
    m = lib.nn.Sequential(lib.nn.Linear(5, 4), lib.nn.Tanh(), lib.nn.Linear(4, 3))
    return m.double()


def _run(opt_cls, flags, steps=4, lib=ember, **hp):
    m = _model(0, ember)
    if lib is not ember:
        m2 = _model(0, lib)
        with lib.no_grad():
            for p, q in zip(m2.parameters(), m.parameters()):
                p.copy_(lib.tensor(q.detach().numpy()))
        m = m2
    opt = getattr(lib.optim, opt_cls)(m.parameters(), **hp, **flags)
    x = lib.tensor(np.linspace(-1, 1, 30).reshape(6, 5))
    for i in range(steps):
        opt.zero_grad()
        loss = (m(x) ** 2).sum() + (i == 2) * m[0].weight.sum()
        loss.backward()
        if i == 1:  # a parameter without a gradient this step: left alone
            m[2].bias.grad = None
        opt.step()
    return [p.detach().numpy().copy() for p in m.parameters()]


CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.05)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), maximize=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
]


@pytest.mark.parametrize("opt_cls,hp", CASES)
def test_multi_tensor_paths_match_the_single_tensor_path(opt_cls, hp):
    single = _run(opt_cls, dict(foreach=False), **hp)
    for flags in (dict(), dict(foreach=True), dict(fused=True)):
        got = _run(opt_cls, flags, **hp)
        for a, b in zip(got, single):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("opt_cls,hp", CASES)
def test_multi_tensor_paths_match_torch(opt_cls, hp):
    torch = pytest.importorskip("torch")
    want = _run(opt_cls, dict(foreach=False), lib=torch, **hp)
    for flags in (dict(), dict(fused=True)):
        got = _run(opt_cls, flags, **hp)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


ADADELTA = [dict(lr=1.0), dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1),
            dict(lr=1.0, maximize=True)]


@pytest.mark.parametrize("hp", ADADELTA)
def test_adadelta_foreach_matches_single_tensor_and_torch(hp):
    single = _run("Adadelta", dict(foreach=False), **hp)
    got = _run("Adadelta", dict(), **hp)
    for a, b in zip(got, single):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    torch = pytest.importorskip("torch")
    want = _run("Adadelta", dict(foreach=False), lib=torch, **hp)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _ops_dispatched(fn):
    """{op name: calls} while ``fn()`` runs (every Op call, nested ones included)."""
    import collections
    from ember.dispatch import dispatcher
    counts = collections.Counter()
    call = dispatcher.Op.__call__

    def counted(self, *args, **kwargs):
        counts[self.name] += 1
        return call(self, *args, **kwargs)
    dispatcher.Op.__call__ = counted
    try:
        fn()
    finally:
        dispatcher.Op.__call__ = call
    return counts


def test_adadelta_default_runs_multi_tensor_ops():
    m = _model(0, ember)
    opt = ember.optim.Adadelta(m.parameters())
    (m(ember.ones(2, 5, dtype=ember.float64)) ** 2).sum().backward()
    counts = _ops_dispatched(opt.step)
    assert counts["_foreach_div_list_"] == 1 and counts["_foreach_mul_list_"] == 1
    assert not {"div", "sqrt", "mul", "addcmul"} & set(counts)


def test_fused_sgd_is_one_op_per_group():
    m = _model(0, ember)
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, fused=True)
    (m(ember.ones(2, 5, dtype=ember.float64)) ** 2).sum().backward()
    opt.step()  # first step: buffers made
    assert _ops_dispatched(opt.step) == {"_fused_sgd_": 1}


@pytest.mark.parametrize("fused", [False, True])
def test_opencl_optimizer_matches_cpu(fused):
    if not ember.opencl.is_available():
        pytest.skip(f"OpenCL unavailable: {ember.opencl.unavailable_reason()}")
    results = []
    for dev in ("cpu", "opencl"):
        ember.manual_seed(1)
        m = ember.nn.Linear(6, 3).to(dev)
        opt = ember.optim.Adam(m.parameters(), lr=0.05, weight_decay=0.1, fused=fused)
        x = ember.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6), device=dev)
        for _ in range(3):
            opt.zero_grad()
            (m(x) ** 2).sum().backward()
            opt.step()
        results.append([p.detach().cpu().numpy() for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_set_num_threads():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(2)
        assert ember.get_num_threads() == 2
        a = ember.tensor(rng.standard_normal(1 << 19).astype(np.float32))
        b = ember.tensor(rng.standard_normal(1 << 19).astype(np.float32))
        want = a.numpy() * b.numpy() + np.tanh(a.numpy())
        got = (a * b + a.tanh()).numpy()   # large enough to run on two threads
        np.testing.assert_array_equal(got, want)
        ember.set_num_threads(1)
        np.testing.assert_array_equal((a * b + a.tanh()).numpy(), want)
        for bad in (0, -1, 1.5, True):
            with pytest.raises(RuntimeError, match="positive integer"):
                ember.set_num_threads(bad)
    finally:
        ember.set_num_threads(before)
