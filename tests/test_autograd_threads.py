"""Autograd from several threads at once (torch's guarantees): concurrent grad() on one shared
model gives the single-thread gradients, and concurrent backward() into shared leaves loses no
accumulation. A tiny switch interval makes the interpreter interleave threads often."""
import sys
import threading

import pytest

import ember
from ember import nn

THREADS, ROUNDS = 4, 25


@pytest.fixture
def busy_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).double()


def _run_threads(fn, rounds=ROUNDS):
    errors = []

    def body():
        try:
            for _ in range(rounds):
                fn()
        except Exception as e:  # surfaced below with the thread's error
            errors.append(e)
    threads = [threading.Thread(target=body) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_grad_on_a_shared_model_from_threads(busy_switching):
    model = _model()
    params = list(model.parameters())
    x = ember.randn(32, 8, dtype=ember.float64)
    ref = ember.autograd.grad(model(x).sum(), params)
    mismatches = []

    def one():
        got = ember.autograd.grad(model(x).sum(), params)
        mismatches.extend(i for i, (a, b) in enumerate(zip(got, ref)) if not bool((a == b).all()))
    for _ in range(20):  # fresh leaves each time: the race is in creating their accumulators
        model = _model()
        params = list(model.parameters())
        _run_threads(one, rounds=10)
    assert not mismatches


def test_backward_accumulates_atomically_into_shared_leaves(busy_switching):
    model = _model()
    params = list(model.parameters())
    x = ember.randn(32, 8, dtype=ember.float64)
    ref = ember.autograd.grad(model(x).sum(), params)
    _run_threads(lambda: model(x).sum().backward())
    n = THREADS * ROUNDS
    for p, r in zip(params, ref):
        ratio = (p.grad / r).nan_to_num(nan=float(n))
        assert float((ratio - n).abs().max()) < 1e-6, "a concurrent accumulation into .grad was lost"
