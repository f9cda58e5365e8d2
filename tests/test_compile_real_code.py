"""Public training code under ember.compile: karpathy/nanoGPT's model.py and pytorch/examples'
MNIST script, vendored verbatim but for ``import ember as torch`` (tests/vendored/README.md).
``model = torch.compile(model)`` must train with the same losses as eager, on cpu and opencl;
nanoGPT's loop is train.py's (AdamW from configure_optimizers, grad clipping, warmup + cosine
learning rate); batch sizes that vary over 50 steps recompile at most twice."""
from __future__ import annotations

import contextlib
import io
import math
import os
import random
import sys
from types import SimpleNamespace

import pytest

import ember

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "vendored"))
import mnist_main  # noqa: E402
import nanogpt_model  # noqa: E402


def _opencl():
    try:
        return ember.opencl.is_available()
    except Exception:  # noqa: BLE001 - no OpenCL plug-in
        return False


DEVICES = ["cpu"] + (["opencl"] if _opencl() else [])
CONFIG = dict(block_size=16, vocab_size=65, n_layer=2, n_head=2, n_embd=32, dropout=0.0,
              bias=True)


def _gpt(device, **overrides):
    ember.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()):       # it prints its parameter count
        model = nanogpt_model.GPT(nanogpt_model.GPTConfig(**{**CONFIG, **overrides}))
        model.to(device)
        opt = model.configure_optimizers(0.1, 6e-3, (0.9, 0.95), device)
    return model, opt


def get_lr(it, learning_rate=6e-3, warmup_iters=2, lr_decay_iters=8, min_lr=6e-4):
    """nanoGPT train.py's schedule (its code, with its constants as arguments)."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def _train_step(model, raw, optimizer, it, X, Y, grad_clip=1.0):
    """train.py's iteration (one micro-step, no scaler)."""
    lr = get_lr(it)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    logits, loss = model(X, Y)
    loss.backward()
    if grad_clip != 0.0:
        ember.nn.utils.clip_grad_norm_(raw.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


@pytest.mark.parametrize("device", DEVICES)
def test_nanogpt_compiled_trains_with_eager_losses(device):
    raw, opt = _gpt(device)
    twin, twin_opt = _gpt(device)
    model = ember.compile(raw)
    g = ember.Generator().manual_seed(1)
    for it in range(6):
        X = ember.randint(0, 65, (4, 16), generator=g).to(device)
        Y = ember.randint(0, 65, (4, 16), generator=g).to(device)
        got = _train_step(model, raw, opt, it, X, Y)
        want = _train_step(twin, twin, twin_opt, it, X, Y)
        assert abs(got - want) < 2e-5, (it, got, want)
    (entry,) = model._compiled.entries()
    assert entry.joint is not None and not entry.breaks     # forward and backward compiled
    # inference path (targets=None: logits of the last position only) compiles too
    with ember.no_grad():
        logits, loss = model(X)
        assert loss is None and (logits - twin(X)[0]).abs().max().item() < 1e-5


def test_nanogpt_batch_sizes_varying_over_50_steps_recompile_at_most_twice():
    raw, opt = _gpt("cpu")
    twin, twin_opt = _gpt("cpu")
    model = ember.compile(raw, dynamic=None)
    rng = random.Random(0)
    g = ember.Generator().manual_seed(2)
    for it in range(50):
        b = rng.choice([2, 3, 4, 6, 8])
        X = ember.randint(0, 65, (b, 16), generator=g)
        Y = ember.randint(0, 65, (b, 16), generator=g)
        got = _train_step(model, raw, opt, it, X, Y)
        want = _train_step(twin, twin, twin_opt, it, X, Y)
        assert abs(got - want) < 5e-5, (it, b, got, want)
    assert model._compiled.recompiles <= 2


@pytest.mark.parametrize("device", DEVICES)
def test_nanogpt_whole_step_under_reduce_overhead(device):
    raw, opt = _gpt(device)
    twin, twin_opt = _gpt(device)
    for o in (opt, twin_opt):
        for group in o.param_groups:       # a tensor lr, so the schedule needs no recompile
            group["lr"] = ember.tensor(6e-3, device=device)

    def make(m, o):
        def step(X, Y):
            logits, loss = m(X, Y)
            loss.backward()
            ember.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            o.step()
            o.zero_grad(set_to_none=True)
            return loss
        return step
    compiled = ember.compile(make(raw, opt), mode="reduce-overhead")
    eager = make(twin, twin_opt)
    g = ember.Generator().manual_seed(3)
    X = ember.randint(0, 65, (4, 16), generator=g).to(device)
    Y = ember.randint(0, 65, (4, 16), generator=g).to(device)
    for it in range(6):
        for o in (opt, twin_opt):
            for group in o.param_groups:
                group["lr"].fill_(get_lr(it))
        got, want = compiled(X, Y).item(), eager(X, Y).item()
        assert abs(got - want) < 2e-5, (it, got, want)
    (entry,) = compiled.entries()
    assert entry.step and not entry.breaks


def _mnist(compiled, device):
    ember.manual_seed(1)
    model = mnist_main.Net().to(device)
    if compiled:
        model = ember.compile(model)
    optimizer = mnist_main.optim.Adadelta(model.parameters(), lr=1.0)
    g = ember.Generator().manual_seed(0)
    data = ember.randn(64, 1, 28, 28, generator=g)
    target = ember.randint(0, 10, (64,), generator=g)
    loader = ember.utils.data.DataLoader(ember.utils.data.TensorDataset(data, target),
                                         batch_size=16)
    args = SimpleNamespace(log_interval=1, dry_run=False)
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        mnist_main.train(args, model, ember.device(device), loader, optimizer, 1)
        mnist_main.test(model, ember.device(device), loader)
    return log.getvalue(), model


@pytest.mark.parametrize("device", DEVICES)
def test_pytorch_examples_mnist_compiled_prints_the_eager_losses(device):
    got, model = _mnist(True, device)
    want, _ = _mnist(False, device)
    losses = [float(line.rsplit(" ", 1)[1]) for line in got.splitlines() if "Loss:" in line]
    wanted = [float(line.rsplit(" ", 1)[1]) for line in want.splitlines() if "Loss:" in line]
    assert len(losses) == 4 and losses == pytest.approx(wanted, abs=2e-5)
    assert "Test set: Average loss" in got
    entries = model._compiled.entries()
    assert any(e.joint is not None for e in entries)        # training: forward + backward
    assert all(not e.breaks for e in entries)
