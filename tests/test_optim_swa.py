"""ember.optim.swa_utils: averaged models (SWA, EMA, buffers), update_bn and SWALR against numpy
references and torch (optional)."""
import numpy as np
import pytest

import ember
from ember import nn
from ember.optim import swa_utils


def _model(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def _perturb(model, rng):
    """Move every parameter and buffer to new random values (a training step stand-in)."""
    with ember.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point():
                t.copy_(ember.tensor(rng.standard_normal(tuple(t.shape)), dtype=t.dtype))
            else:
                t.add_(3)


def _snapshots(avg, model, n=4, seed=0):
    rng = np.random.default_rng(seed)
    snaps = []
    for _ in range(n):
        _perturb(model, rng)
        avg.update_parameters(model)
        snaps.append({k: v.detach().numpy().copy() for k, v in model.state_dict().items()})
    return snaps


def test_swa_is_the_mean_of_the_snapshots_and_buffers_follow_the_model():
    model = _model()
    avg = swa_utils.AveragedModel(model)
    snaps = _snapshots(avg, model)
    assert int(avg.n_averaged) == 4 and avg.n_averaged.dtype is ember.int64
    sd = avg.module.state_dict()
    for name, _ in model.named_parameters():
        np.testing.assert_allclose(sd[name].numpy(), np.mean([s[name] for s in snaps], 0),
                                   rtol=1e-5, atol=1e-6)
    for name, _ in model.named_buffers():  # copied from the model, not averaged
        np.testing.assert_array_equal(sd[name].numpy(), snaps[-1][name])
    x = ember.randn(5, 3)
    avg.eval()
    np.testing.assert_array_equal(avg(x).detach().numpy(), avg.module(x).detach().numpy())
    assert list(avg.state_dict())[0] == "n_averaged"


@pytest.mark.parametrize("how", ["multi_avg_fn", "avg_fn"])
def test_ema_with_buffers(how):
    decay = 0.8
    model = _model()
    fn = {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(decay),
          "avg_fn": swa_utils.get_ema_avg_fn(decay)}[how]
    avg = swa_utils.AveragedModel(model, use_buffers=True, **{how: fn})
    snaps = _snapshots(avg, model)
    sd = avg.module.state_dict()
    for name in snaps[0]:
        if name.endswith("num_batches_tracked"):
            # an integer buffer: ema = decay * ema + (1 - decay) * value, truncated
            want = snaps[0][name]
            for s in snaps[1:]:
                want = (want * decay + s[name] * (1 - decay)).astype(np.int64)
            assert sd[name].tolist() == want.tolist()
            continue
        want = snaps[0][name]
        for s in snaps[1:]:
            want = decay * want + (1 - decay) * s[name]
        np.testing.assert_allclose(sd[name].numpy(), want, rtol=1e-5, atol=1e-6)


def test_multi_avg_fn_gets_one_list_per_device_and_dtype():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1).double())
    calls = []

    def record(avg_list, model_list, n):
        calls.append((avg_list[0].dtype, len(avg_list), int(n)))

    avg = swa_utils.AveragedModel(model, multi_avg_fn=record)
    avg.update_parameters(model)
    avg.update_parameters(model)
    assert sorted(calls, key=str) == sorted([(ember.float32, 2, 1), (ember.float64, 2, 1)],
                                            key=str)


def test_average_of_integer_buffers_like_torch():
    torch = pytest.importorskip("torch")
    vals = [3, 8, 4, 11]
    for lib, mod in ((ember, swa_utils), (torch, torch.optim.swa_utils)):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("count", lib.tensor(0))
        m = M()
        avg = mod.AveragedModel(m, use_buffers=True)
        for v in vals:
            m.count.fill_(v)
            avg.update_parameters(m)
        if lib is ember:
            got = int(avg.module.count)
        else:
            assert int(avg.module.count) == got


def test_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    steps = [{k: rng.standard_normal(s) for k, s in (("w", (4, 3)), ("b", (4,)))}
             for _ in range(5)]
    results = []
    for lib, mod in ((ember, swa_utils), (torch, torch.optim.swa_utils)):
        lin = lib.nn.Linear(3, 4)
        swa = mod.AveragedModel(lin)
        ema = mod.AveragedModel(lin, multi_avg_fn=mod.get_ema_multi_avg_fn(0.9))
        for s in steps:
            with lib.no_grad():
                lin.weight.copy_(lib.tensor(s["w"], dtype=lib.float32))
                lin.bias.copy_(lib.tensor(s["b"], dtype=lib.float32))
            swa.update_parameters(lin)
            ema.update_parameters(lin)
        results.append([t.detach().numpy().copy() for m in (swa, ema)
                        for t in m.module.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_update_bn_recomputes_the_statistics():
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((8, 3)).astype(np.float32) for _ in range(3)]
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.3))
    model.eval()
    with ember.no_grad():
        model[1].running_mean.fill_(5.0)
    loader = [(ember.tensor(b), ember.zeros(8)) for b in batches]  # (input, target) pairs
    swa_utils.update_bn(loader, model)
    assert not model.training and model[1].momentum == 0.3
    w, b = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    hidden = [x @ w.T + b for x in batches]
    np.testing.assert_allclose(model[1].running_mean.numpy(),
                               np.mean([h.mean(0) for h in hidden], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[1].running_var.numpy(),
                               np.mean([h.var(0, ddof=1) for h in hidden], 0), rtol=1e-5)
    assert int(model[1].num_batches_tracked) == 3
    swa_utils.update_bn(loader, nn.Linear(3, 1))  # no BatchNorm: nothing to do


def _swalr_ref(step, lr0, swa_lr, anneal_epochs, cos=True):
    if anneal_epochs == 0:
        step = max(1, step)
    t = max(0, min(1, step / max(1, anneal_epochs)))
    a = (1 - np.cos(np.pi * t)) / 2 if cos else t
    return swa_lr * a + lr0 * (1 - a)


@pytest.mark.parametrize("anneal_epochs,strategy", [(5, "cos"), (3, "linear"), (0, "cos")])
def test_swalr_closed_form(anneal_epochs, strategy):
    opt = ember.optim.SGD([{"params": [ember.ones(1, requires_grad=True)], "lr": 0.1},
                           {"params": [ember.ones(1, requires_grad=True)], "lr": 0.4}])
    s = swa_utils.SWALR(opt, swa_lr=[0.05, 0.5], anneal_epochs=anneal_epochs,
                        anneal_strategy=strategy)
    for step in range(10):
        want = [_swalr_ref(step, lr0, swa, anneal_epochs, strategy == "cos")
                for lr0, swa in ((0.1, 0.05), (0.4, 0.5))]
        np.testing.assert_allclose(s.get_last_lr(), want, rtol=1e-12)
        opt.step()
        s.step()
    sd = s.state_dict()
    assert "anneal_func" not in sd and sd["_anneal_strategy"] == strategy


def test_swalr_matches_torch():
    torch = pytest.importorskip("torch")
    out = []
    for lib, mod in ((ember, ember.optim), (torch, torch.optim)):
        opt = mod.SGD([lib.ones(1, requires_grad=True)], lr=0.3, momentum=0.9)
        base = mod.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
        swa = mod.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=4)
        lrs = []
        for epoch in range(12):
            opt.step()
            (swa if epoch >= 5 else base).step()
            lrs.append(opt.param_groups[0]["lr"])
        out.append(lrs)
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a "
                                         r"value in \[0,1\] range."):
        swa_utils.get_ema_multi_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value -0.1"):
        swa_utils.get_ema_avg_fn(-0.1)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(nn.Linear(1, 1), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    opt = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(opt, 0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)
