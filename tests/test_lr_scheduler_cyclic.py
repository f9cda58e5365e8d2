"""CyclicLR and CosineAnnealingWarmRestarts against closed forms and torch (optional); the
module's public names against torch's; import paths of the scheduler package."""
import math
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler as S

N = 30


def _opt(kind="SGD", lrs=(0.1, 0.3), **kw):
    groups = [{"params": [ember.ones(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return getattr(optim, kind)(groups, **kw)


def _run(make, kind="SGD", steps=N, epochs=None, **kw):
    """(lr, momentum or beta1) of each group after construction and after each step."""
    opt = _opt(kind, **kw)
    sched = make(opt)

    def row():
        moms = [g["momentum"] if "momentum" in g else g["betas"][0] for g in opt.param_groups]
        return list(sched.get_last_lr()) + moms
    out = [row()]
    for i in range(steps):
        opt.step()
        sched.step() if epochs is None else sched.step(epochs[i])
        out.append(row())
    return np.array(out, dtype=float), opt, sched


def _cyclic_ref(it, base, top, up, down, scale, scale_of="cycle"):
    """The cyclical-rate policy written from the paper's description: the position inside the
    current cycle of ``up + down`` iterations gives the fraction of the amplitude."""
    total = up + down
    cycle = it // total + 1
    pos = it - (cycle - 1) * total
    frac = pos / up if pos <= up else (total - pos) / down
    return base + (top - base) * frac * scale(cycle if scale_of == "cycle" else it)


CYCLIC = [
    ("triangular", dict(base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4, step_size_down=6),
     lambda it, g: (_cyclic_ref(it, 0.01, [0.1, 0.2][g], 4, 6, lambda c: 1.0),
                    _cyclic_ref(it, 0.9, 0.8, 4, 6, lambda c: 1.0))),
    ("triangular2", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
     lambda it, g: (_cyclic_ref(it, 0.01, 0.1, 3, 3, lambda c: 0.5 ** (c - 1)),
                    _cyclic_ref(it, 0.9, 0.8, 3, 3, lambda c: 0.5 ** (c - 1)))),
    ("exp_range", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9,
                       base_momentum=0.7, max_momentum=0.95),
     lambda it, g: (_cyclic_ref(it, 0.01, 0.1, 3, 3, lambda i: 0.9 ** i, "iterations"),
                    _cyclic_ref(it, 0.95, 0.7, 3, 3, lambda i: 0.9 ** i, "iterations"))),
]


@pytest.mark.parametrize("mode,kw,ref", CYCLIC, ids=[c[0] for c in CYCLIC])
def test_cyclic_closed_forms(mode, kw, ref):
    got, _, _ = _run(lambda o: S.CyclicLR(o, **kw), momentum=0.5)
    for it in range(N + 1):
        for g in range(2):
            lr, mom = ref(it, g)
            assert got[it, g] == pytest.approx(lr, rel=1e-12, abs=1e-15)
            assert got[it, 2 + g] == pytest.approx(mom, rel=1e-12)


def test_cyclic_custom_scale_fn_and_adam_beta1():
    got, opt, s = _run(lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2,
                                            scale_fn=lambda x: 1 / (x + 1),
                                            scale_mode="iterations"), kind="Adam")
    for it in range(N + 1):
        assert got[it, 0] == pytest.approx(
            _cyclic_ref(it, 0.01, 0.1, 2, 2, lambda i: 1 / (i + 1), "iterations"), rel=1e-12)
    assert opt.param_groups[0]["betas"][1] == 0.999  # only beta1 cycles
    assert opt.param_groups[0]["max_momentum"] == 0.9


def _cawr_ref(epoch, base, T_0, T_mult, eta_min):
    T_i, start = T_0, 0
    while epoch >= start + T_i:
        start += T_i
        T_i *= T_mult
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * (epoch - start) / T_i)) / 2


@pytest.mark.parametrize("T_0,T_mult,eta_min", [(4, 1, 0.001), (3, 2, 0.0), (2, 3, 0.01)])
def test_warm_restarts_closed_form(T_0, T_mult, eta_min):
    got, _, _ = _run(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=T_0, T_mult=T_mult,
                                                             eta_min=eta_min))
    want = [[_cawr_ref(e, b, T_0, T_mult, eta_min) for b in (0.1, 0.3)] for e in range(N + 1)]
    np.testing.assert_allclose(got[:, :2], want, rtol=1e-12, atol=1e-15)


def test_warm_restarts_fractional_epochs():
    epochs = [0.5, 1.0, 1.7, 2.9, 3.2, 4.0, 7.5, 10.1, 2.0, 22.0, 45.3]
    got, _, s = _run(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
                     steps=len(epochs), epochs=epochs)
    for e, row in zip(epochs, got[1:]):
        assert row[0] == pytest.approx(_cawr_ref(e, 0.1, 3, 2, 0.0), rel=1e-9, abs=1e-15)
    assert s.last_epoch == 45
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        s.step(-1)


TORCH_CASES = [
    ("CyclicLR", dict(base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4, step_size_down=6)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2")),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3, mode="exp_range",
                      gamma=0.9, base_momentum=0.7, max_momentum=0.95)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=5, cycle_momentum=False)),
    ("CosineAnnealingWarmRestarts", dict(T_0=4, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2)),
]


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name,kw", TORCH_CASES, ids=[f"{n}-{i}" for i, (n, _)
                                                      in enumerate(TORCH_CASES)])
def test_matches_torch(name, kw, kind):
    torch = pytest.importorskip("torch")
    okw = {"momentum": 0.9} if kind == "SGD" else {}
    got, _, _ = _run(lambda o: getattr(S, name)(o, **kw), kind=kind, **okw)
    ps = [torch.ones(2, requires_grad=True) for _ in range(2)]
    topt = getattr(torch.optim, kind)([{"params": [ps[0]], "lr": 0.1},
                                       {"params": [ps[1]], "lr": 0.3}], **okw)
    ts = getattr(torch.optim.lr_scheduler, name)(topt, **kw)

    def row():
        return list(ts.get_last_lr()) + [g["momentum"] if "momentum" in g else g["betas"][0]
                                         for g in topt.param_groups]
    want = [row()]
    for _ in range(N):
        topt.step()
        ts.step()
        want.append(row())
    np.testing.assert_allclose(got, np.array(want, dtype=float), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("make", [
    lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range",
                         gamma=0.95),
    lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
], ids=["cyclic", "warm-restarts"])
def test_state_dict_round_trip(make, tmp_path):
    _, opt, s = _run(make, steps=7, momentum=0.9)
    path = tmp_path / "sched.ember"
    ember.save({"opt": opt.state_dict(), "sched": s.state_dict()}, path)
    ck = ember.load(path)
    opt2 = _opt(momentum=0.9)
    opt2.load_state_dict(ck["opt"])
    s2 = make(opt2)
    s2.load_state_dict(ck["sched"])
    for _ in range(8):
        opt.step(), s.step(), opt2.step(), s2.step()
        assert s2.get_last_lr() == s.get_last_lr()
        assert opt2.param_groups[0]["momentum"] == opt.param_groups[0]["momentum"]


def test_cyclic_state_dict_keeps_callable_objects_not_functions():
    class Halving:
        def __init__(self):
            self.base = 0.5

        def __call__(self, x):
            return self.base ** x

    fn = Halving()
    s = S.CyclicLR(_opt(momentum=0.9), 0.01, 0.1, scale_fn=fn)
    assert s.state_dict()["_scale_fn_custom"] == {"base": 0.5}
    fn2 = Halving()
    fn2.base = 0.9
    s2 = S.CyclicLR(_opt(momentum=0.9), 0.01, 0.1, scale_fn=fn2)
    s2.load_state_dict(s.state_dict())
    assert fn2.base == 0.5 and s2._scale_fn_custom is fn2
    s3 = S.CyclicLR(_opt(momentum=0.9), 0.01, 0.1, scale_fn=lambda x: 1.0)
    assert s3.state_dict()["_scale_fn_custom"] is None


def test_argument_errors():
    opt = _opt(momentum=0.9)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        S.CyclicLR(opt, 0.01, 0.1, mode="sawtooth")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        S.CyclicLR(opt, 0.01, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        S.CyclicLR(_opt("Adagrad"), 0.01, 0.1)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5)
    with pytest.raises(ValueError, match="Expected float or int eta_min"):
        S.CosineAnnealingWarmRestarts(opt, T_0=2, eta_min="0")


def test_every_torch_scheduler_exists():
    torch = pytest.importorskip("torch")
    assert set(torch.optim.lr_scheduler.__all__) <= set(S.__all__)
    for name in torch.optim.lr_scheduler.__all__:
        assert isinstance(getattr(S, name), type)


def test_import_paths_and_pickling():
    from ember.optim.lr_scheduler import CyclicLR, LRScheduler, StepLR, _LRScheduler
    assert CyclicLR.__module__ == "ember.optim.lr_scheduler"
    assert issubclass(_LRScheduler, LRScheduler)
    assert repr(StepLR) == "<class 'ember.optim.lr_scheduler.StepLR'>"
    opt = _opt()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = pickle.loads(pickle.dumps(S.StepLR(opt, step_size=2)))
    assert type(s) is StepLR and s.step_size == 2
