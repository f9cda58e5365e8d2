"""Optimizers inside compiled training steps: Adam, AdamW, RMSprop and Adagrad keep their step
counts as tensors (torch's ``capturable`` semantics, and always under ember.compile), and a
learning rate may be a tensor that schedulers fill in place, so mode="reduce-overhead" captures
forward, backward, clip_grad_norm_, the optimizer update and the scheduler's current rate as one
replay — equal to the eager step, step by step, on cpu and opencl."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn

F = nn.functional


def _opencl():
    try:
        return ember.opencl.is_available()
    except Exception:  # noqa: BLE001 - no OpenCL plug-in
        return False


DEVICES = ["cpu"] + (["opencl"] if _opencl() else [])
CASES = [("Adam", {}), ("AdamW", {"weight_decay": 0.1}), ("AdamW", {"capturable": True}),
         ("Adam", {"amsgrad": True, "capturable": True}), ("RMSprop", {"momentum": 0.9}),
         ("RMSprop", {"centered": True, "capturable": True}), ("Adagrad", {"lr_decay": 0.01})]


def _setup(name, kw, device, tensor_lr):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 3)).to(device)
    lr = ember.tensor(0.02, device=device) if tensor_lr else 0.02
    opt = getattr(ember.optim, name)(model.parameters(), lr=lr, **kw)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        return loss
    return model, opt, sched, step


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,kw", CASES)
def test_a_whole_training_step_with_clipping_and_a_scheduled_tensor_lr_is_one_replay(
        name, kw, device):
    model, _, sched, step = _setup(name, kw, device, tensor_lr=True)
    twin, twin_opt, twin_sched, twin_step = _setup(name, kw, device, tensor_lr=False)
    compiled = ember.compile(step, mode="reduce-overhead")
    x = ember.randn(8, 6, device=device)
    y = ember.randint(0, 3, (8,), device=device)
    for _ in range(7):
        got, want = compiled(x, y), twin_step(x, y)
        sched.step()
        twin_sched.step()
        assert abs(got.item() - want.item()) < 2e-5
    for p, q in zip(model.parameters(), twin.parameters()):
        assert (p - q).abs().max().item() < 2e-5
    (entry,) = compiled.entries()
    assert entry.step and not entry.breaks and entry.calls == 4   # calls 4..7 replayed
    assert float(twin_opt.param_groups[0]["lr"]) == pytest.approx(0.02 * 0.5 ** 3)


@pytest.mark.parametrize("name,kw", [("Adam", {}), ("AdamW", {"amsgrad": True}),
                                     ("RMSprop", {"centered": True, "momentum": 0.5})])
def test_capturable_keeps_the_count_beside_the_parameter_and_matches_the_host_update(name, kw):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((3, 4))
    grads = [rng.standard_normal((3, 4)) for _ in range(5)]
    out = []
    for capturable in (False, True):
        p = ember.tensor(p0, requires_grad=True)
        opt = getattr(ember.optim, name)([p], lr=0.1, capturable=capturable, **kw)
        for g in grads:
            p.grad = ember.tensor(g)
            opt.step()
        step = opt.state[p]["step"]
        assert step.item() == 5 and step.dtype == ember.float64 if capturable else True
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12, atol=1e-14)


def test_the_eager_update_equals_torchs_for_the_capturable_flag():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal((5,)).astype(np.float32)
    grads = [rng.standard_normal((5,)).astype(np.float32) for _ in range(4)]
    e = ember.tensor(p0, requires_grad=True)
    t = torch.tensor(p0, requires_grad=True)
    eo = ember.optim.AdamW([e], lr=ember.tensor(0.05), capturable=True, weight_decay=0.1)
    to = torch.optim.AdamW([t], lr=0.05, weight_decay=0.1)
    for g in grads:
        e.grad, t.grad = ember.tensor(g), torch.tensor(g)
        eo.step()
        to.step()
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_tensor_lr_is_filled_in_place_by_schedulers():
    p = ember.zeros(2, requires_grad=True)
    lr = ember.tensor(0.5)
    opt = ember.optim.SGD([p], lr=lr)
    sched = ember.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 2], gamma=0.1)
    for want in (0.05, 0.005):
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(want)
    assert opt.param_groups[0]["initial_lr"].item() == 0.5       # a copy, not the live rate
