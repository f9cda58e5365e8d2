"""ember.optim.lr_scheduler: lr sequences against closed forms and against torch (optional)."""
import math
import warnings

import numpy as np
import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler as S

N = 25


def _opt(kind="SGD", lrs=(0.1,), **kw):
    groups = [{"params": [ember.ones(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return getattr(optim, kind)(groups, **kw)


def _run(make, kind="SGD", lrs=(0.1,), steps=N, **kw):
    """lr of each group after construction and after each of ``steps`` steps."""
    opt = _opt(kind, lrs, **kw)
    sched = make(opt)
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out), opt, sched


def _cos(b, lo, e, T):
    return lo + (b - lo) * (1 + math.cos(math.pi * e / T)) / 2


def _one_cycle(step, total, max_lr, pct=0.3, div=25.0, final=1e4, three=False, cos=True):
    init, low = max_lr / div, max_lr / div / final
    ann = (lambda a, b, p: b + (a - b) / 2 * (math.cos(math.pi * p) + 1)) if cos else \
        (lambda a, b, p: a + (b - a) * p)
    up = pct * total - 1
    if three:
        ends = [(up, init, max_lr), (2 * pct * total - 2, max_lr, init), (total - 1, init, low)]
    else:
        ends = [(up, init, max_lr), (total - 1, max_lr, low)]
    start = 0.0
    for i, (end, a, b) in enumerate(ends):
        if step <= end or i == len(ends) - 1:
            return ann(a, b, (step - start) / (end - start))
        start = end


CLOSED = [
    ("StepLR", lambda o: S.StepLR(o, step_size=3, gamma=0.5),
     lambda b, e: b * 0.5 ** (e // 3)),
    ("MultiStepLR", lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.1),
     lambda b, e: b * 0.1 ** sum(m <= e for m in [2, 5, 5, 9])),
    ("ExponentialLR", lambda o: S.ExponentialLR(o, gamma=0.9), lambda b, e: b * 0.9 ** e),
    ("CosineAnnealingLR", lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
     lambda b, e: _cos(b, 0.001, e, 7)),
    ("LinearLR", lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6),
     lambda b, e: b * (0.25 + 0.65 * min(e, 6) / 6)),
    ("ConstantLR", lambda o: S.ConstantLR(o, factor=0.5, total_iters=4),
     lambda b, e: b * (0.5 if e < 4 else 1.0)),
    ("PolynomialLR", lambda o: S.PolynomialLR(o, total_iters=8, power=2.0),
     lambda b, e: b * (1 - min(e, 8) / 8) ** 2),
    ("LambdaLR", lambda o: S.LambdaLR(o, lambda e: 1 / (1 + e)), lambda b, e: b / (1 + e)),
    ("MultiplicativeLR", lambda o: S.MultiplicativeLR(o, lambda e: 0.95),
     lambda b, e: b * 0.95 ** e),
    ("OneCycleLR", lambda o: S.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=N + 1),
     lambda b, e: _one_cycle(e, N + 1, 1.0 if b == 0.1 else 2.0)),
    ("OneCycleLR-linear-3", lambda o: S.OneCycleLR(o, max_lr=[1.0, 2.0], epochs=2,
                                                   steps_per_epoch=13, anneal_strategy="linear",
                                                   three_phase=True, pct_start=0.25),
     lambda b, e: _one_cycle(e, 26, 1.0 if b == 0.1 else 2.0, pct=0.25, three=True,
                             cos=False)),
]


@pytest.mark.parametrize("name,make,closed", CLOSED, ids=[c[0] for c in CLOSED])
def test_closed_forms(name, make, closed):
    got, _, _ = _run(make, lrs=(0.1, 0.3), momentum=0.9)
    want = np.array([[closed(b, e) for b in (0.1, 0.3)] for e in range(N + 1)])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def _torch_run(torch, name, make_kw, steps=N, kind="SGD", **okw):
    ps = [torch.ones(2, requires_grad=True) for _ in range(2)]
    opt = getattr(torch.optim, kind)([{"params": [ps[0]], "lr": 0.1},
                                      {"params": [ps[1]], "lr": 0.3}], **okw)
    sched = getattr(torch.optim.lr_scheduler, name.split("-")[0])(opt, **make_kw)
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out, dtype=float), opt


TORCH_CASES = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.1)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.001)),
    ("LinearLR", dict(start_factor=0.25, end_factor=0.9, total_iters=6)),
    ("ConstantLR", dict(factor=0.5, total_iters=4)),
    ("PolynomialLR", dict(total_iters=8, power=2.0)),
    ("OneCycleLR", dict(max_lr=[1.0, 2.0], total_steps=N + 1)),
    ("OneCycleLR-3", dict(max_lr=1.0, total_steps=N + 1, three_phase=True,
                          anneal_strategy="linear", base_momentum=0.8, max_momentum=0.9)),
]


@pytest.mark.parametrize("name,kw", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_matches_torch(name, kw, kind):
    torch = pytest.importorskip("torch")
    okw = {"momentum": 0.9} if kind == "SGD" else {}
    want, topt = _torch_run(torch, name, kw, kind=kind, **okw)
    got, opt, _ = _run(lambda o: getattr(S, name.split("-")[0])(o, **kw), kind=kind,
                       lrs=(0.1, 0.3), **okw)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    key = "momentum" if kind == "SGD" else "betas"
    for g, tg in zip(opt.param_groups, topt.param_groups):
        np.testing.assert_allclose(np.array(g[key], float), np.array(tg[key], float), rtol=1e-9)


def test_cosine_annealing_cycles_past_t_max_and_chains():
    torch = pytest.importorskip("torch")
    got, _, _ = _run(lambda o: S.ChainedScheduler([S.CosineAnnealingLR(o, T_max=4),
                                                   S.ExponentialLR(o, gamma=0.9)]), steps=15)
    tp = torch.ones(1, requires_grad=True)
    topt = torch.optim.SGD([{"params": [tp], "lr": 0.1}])
    ts = torch.optim.lr_scheduler.ChainedScheduler(
        [torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=4),
         torch.optim.lr_scheduler.ExponentialLR(topt, gamma=0.9)])
    want = [ts.get_last_lr()]
    for _ in range(15):
        topt.step()
        ts.step()
        want.append(ts.get_last_lr())
    np.testing.assert_allclose(got, np.array(want), rtol=1e-9, atol=1e-14)


def test_sequential_lr():
    # warm-up: LinearLR for 3 epochs, then ExponentialLR from the base lr
    got, _, _ = _run(lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.5)],
        milestones=[3]), steps=8)
    want = [0.1 * (0.1 + 0.9 * min(e, 3) / 3) if e < 3 else 0.1 * 0.5 ** (e - 3)
            for e in range(9)]
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-9)


def test_sequential_lr_matches_torch():
    torch = pytest.importorskip("torch")
    got, _, _ = _run(lambda o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.5, total_iters=2), S.CosineAnnealingLR(o, T_max=5)],
        milestones=[4]), steps=12)
    tp = torch.ones(1, requires_grad=True)
    topt = torch.optim.SGD([{"params": [tp], "lr": 0.1}])
    L = torch.optim.lr_scheduler
    ts = L.SequentialLR(topt, [L.ConstantLR(topt, factor=0.5, total_iters=2),
                               L.CosineAnnealingLR(topt, T_max=5)], milestones=[4])
    want = [ts.get_last_lr()]
    for _ in range(12):
        topt.step()
        ts.step()
        want.append(ts.get_last_lr())
    np.testing.assert_allclose(got, np.array(want), rtol=1e-9, atol=1e-14)


def test_reduce_lr_on_plateau():
    opt = _opt(lrs=(1.0,))
    s = S.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, cooldown=1, min_lr=0.2)
    lrs = []
    for metric in [5, 4] + [4] * 11:
        s.step(metric)
        lrs.append(opt.param_groups[0]["lr"])
    # 2 bad epochs are tolerated; the 3rd halves the lr, then 1 epoch of cooldown; min_lr caps
    assert lrs == [1.0] * 4 + [0.5] * 4 + [0.25] * 4 + [0.2]
    assert s.get_last_lr() == [0.2]
    mx = S.ReduceLROnPlateau(_opt(lrs=(1.0,)), mode="max", threshold_mode="abs", threshold=0.5,
                             patience=0)
    mx.step(1.0)
    mx.step(1.4)  # not better by 0.5: reduce
    assert mx.get_last_lr() == [0.1]
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown"):
        S.ReduceLROnPlateau(opt, mode="avg")


def test_state_dict_round_trip_and_resume():
    _, opt, sched = _run(lambda o: S.StepLR(o, step_size=2, gamma=0.5), steps=5)
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 5 and sd["base_lrs"] == [0.1]
    opt2 = _opt()
    opt2.load_state_dict(opt.state_dict())
    s2 = S.StepLR(opt2, step_size=7, gamma=0.9, last_epoch=sd["last_epoch"])
    s2.load_state_dict(sd)
    for _ in range(4):
        opt.step(), sched.step(), opt2.step(), s2.step()
        assert s2.get_last_lr() == sched.get_last_lr()


def test_lambda_state_dict_keeps_callable_objects():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, e):
            return self.rate ** e

    fn = Decay()
    _, _, s = _run(lambda o: S.LambdaLR(o, [fn]), steps=2)
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}]
    fn2 = Decay()
    fn2.rate = 0.1
    s2 = S.LambdaLR(_opt(), [fn2])
    s2.load_state_dict(sd)
    assert fn2.rate == 0.5
    _, _, s3 = _run(lambda o: S.LambdaLR(o, lambda e: 1.0), steps=1)
    assert s3.state_dict()["lr_lambdas"] == [None]


def test_errors_and_warnings():
    opt = _opt()
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=1)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(opt, step_size=1, last_epoch=3)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        S.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    with pytest.raises(ValueError, match="between 0 and 1"):
        S.ConstantLR(opt, factor=2)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        S.OneCycleLR(optim.Adagrad([ember.ones(1, requires_grad=True)]), max_lr=1.0,
                     total_steps=5)
    with pytest.raises(ValueError, match="number of milestones"):
        S.SequentialLR(opt, [S.StepLR(opt, 1)], milestones=[1])
    s = S.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    opt.step(), s.step(), s.step()  # epochs 1 and 2 of 2
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        s.step()
    fresh = _opt()
    sched = S.ExponentialLR(fresh, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh2 = _opt()
        s2 = S.ExponentialLR(fresh2, gamma=0.5)
        fresh2.step()
        s2.step()  # the right order: no warning
