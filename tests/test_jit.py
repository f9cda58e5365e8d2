"""ember.jit fork/wait and ember.futures: results and ordering, exceptions at wait, nesting on
a small pool, per-thread state in tasks, autograd through forked work, real overlap."""
from __future__ import annotations

import subprocess
import sys
import threading
import warnings
from typing import List

import numpy as np
import pytest

import ember
from ember.futures import Future, collect_all, wait_all

TIMEOUT = 30   # seconds: a wait that takes this long is a hang


def test_fork_returns_at_once_and_wait_returns_the_value():
    started, go = threading.Event(), threading.Event()

    def task(a, b=1):
        started.set()
        return go.wait(TIMEOUT), a + b, threading.get_ident()
    fut = ember.jit.fork(task, 2, b=5)
    assert isinstance(fut, ember.jit.Future) and isinstance(fut, Future)
    assert started.wait(TIMEOUT)   # a pool thread started it; nobody waits for it yet
    go.set()
    released, value, tid = ember.jit.wait(fut)
    assert released and value == 7 and fut.done()
    assert tid != threading.get_ident()   # it ran on an inter-op thread


def test_results_come_back_in_order_of_the_futures():
    futs = [ember.jit.fork(lambda i: i * i, i) for i in range(20)]
    assert [ember.jit.wait(f) for f in futs] == [i * i for i in range(20)]
    assert wait_all(futs) == [i * i for i in range(20)]


def test_exceptions_surface_at_wait():
    def bad(x):
        raise KeyError(f"missing {x}")
    fut = ember.jit.fork(bad, "k")
    with pytest.raises(KeyError, match="missing k"):
        ember.jit.wait(fut)
    assert fut.done()
    with pytest.raises(KeyError):
        fut.value()
    good = ember.jit.fork(lambda: 1)
    with pytest.raises(KeyError):
        wait_all([good, fut])
    with pytest.raises(TypeError, match="fork\\(\\): expected a callable"):
        ember.jit.fork(3)
    with pytest.raises(TypeError, match="wait\\(\\): expected an ember.futures.Future"):
        ember.jit.wait(3)


def test_nested_forks_do_not_deadlock_a_full_pool():
    # more outer tasks than pool threads, each forking and waiting on inner tasks: waiting
    # runs a task that no thread has started, so this finishes on any pool size
    def inner(x):
        return x + 1

    def outer(x):
        futs = [ember.jit.fork(inner, x * 10 + k) for k in range(4)]
        return sum(ember.jit.wait(f) for f in futs)

    def top(n):
        futs = [ember.jit.fork(outer, i) for i in range(n)]
        return [ember.jit.wait(f) for f in futs]

    done = []
    t = threading.Thread(target=lambda: done.append(top(3 * ember.get_num_interop_threads() + 2)))
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), "nested fork/wait hung"
    n = 3 * ember.get_num_interop_threads() + 2
    assert done[0] == [sum(i * 10 + k + 1 for k in range(4)) for i in range(n)]


def test_grad_mode_and_inference_mode_propagate_into_tasks():
    probe = lambda: (ember.is_grad_enabled(), ember.is_inference_mode_enabled())  # noqa: E731
    assert ember.jit.wait(ember.jit.fork(probe)) == (True, False)
    with ember.no_grad():
        assert ember.jit.wait(ember.jit.fork(probe)) == (False, False)
    with ember.inference_mode():
        assert ember.jit.wait(ember.jit.fork(probe)) == (False, True)
    # the worker's own state is restored after each task
    assert ember.jit.wait(ember.jit.fork(probe)) == (True, False)
    w = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        out = ember.jit.wait(ember.jit.fork(lambda: w * 2))
    assert not out.requires_grad


def test_autograd_through_forked_work():
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(3, 4)
    x = ember.randn(5, 2, 3, requires_grad=True)
    futs = [ember.jit.fork(lstm, x) for _ in range(3)]
    outs = [ember.jit.wait(f)[0] for f in futs]
    sum(o.sum() for o in outs).backward()
    forked = {k: p.grad.numpy().copy() for k, p in lstm.named_parameters()}
    gx = x.grad.numpy().copy()
    lstm.zero_grad()
    x.grad = None
    (lstm(x)[0].sum() * 3).backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-5, atol=1e-6)
    for k, p in lstm.named_parameters():
        np.testing.assert_allclose(forked[k], p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_forked_tasks_overlap():
    if ember.get_num_interop_threads() < 2:
        pytest.skip("the inter-op pool has one thread")
    # each task waits for the other to start: only concurrent tasks both finish
    started = [threading.Event(), threading.Event()]

    def task(me):
        started[me].set()
        return started[1 - me].wait(TIMEOUT)

    futs = [ember.jit.fork(task, 0), ember.jit.fork(task, 1)]
    assert all(ember.futures.wait_all(futs))


def test_script_and_trace_are_identities_and_future_annotations_work():
    class M(ember.nn.Module):
        def forward(self, x):
            futures: List[ember.jit.Future[ember.Tensor]] = [ember.jit.fork(lambda y: y + 1, x)]
            return ember.jit.wait(futures[0])
    m = M()
    assert ember.jit.script(m) is m and ember.jit.trace(m, (ember.ones(1),)) is m
    assert "identity" in ember.jit.script.__doc__.lower() or "unchanged" in ember.jit.script.__doc__
    assert float(ember.jit.script(m)(ember.ones(1))) == 2.0
    assert str(ember.jit.Future[int]) == "ember.futures.Future[int]"
    assert not ember.jit.is_scripting()


def test_future_api():
    f = Future()
    assert not f.done()
    with pytest.raises(RuntimeError, match="has not completed yet"):
        f.value()
    chained = f.then(lambda fut: fut.wait() * 2)
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    f.set_result(21)
    assert chained.wait() == 42 and seen == [21]
    with pytest.raises(RuntimeError, match="can only be marked completed once"):
        f.set_result(1)
    late = []
    f.add_done_callback(lambda fut: late.append(fut.value()))   # already done: runs now
    assert late == [21]
    e = Future()
    e.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        e.wait()
    failing = e.then(lambda fut: fut.value())
    with pytest.raises(RuntimeError, match="Got the following error when running the "
                                           "callback: ValueError: boom"):
        failing.wait()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = Future()
        g.add_done_callback(lambda fut: 1 / 0)
        g.set_result(0)
    assert any("ZeroDivisionError" in str(x.message) for x in w)
    with pytest.raises(AssertionError):
        Future().set_exception("not an exception")
    all_done = collect_all([ember.jit.fork(lambda: 1), f])
    assert [x.value() for x in all_done.wait()] == [1, 21]
    assert collect_all([]).wait() == []


_INTEROP = """
import ember
assert ember.get_num_interop_threads() >= 1
ember.set_num_interop_threads(3)
assert ember.get_num_interop_threads() == 3
try:
    ember.set_num_interop_threads(2)
except RuntimeError as e:
    assert "cannot set number of interop threads" in str(e), e
else:
    raise SystemExit("a second call was accepted")
print(ember.jit.wait(ember.jit.fork(lambda: 5)))
"""

_INTEROP_AFTER_WORK = """
import ember
ember.jit.wait(ember.jit.fork(lambda: 1))
try:
    ember.set_num_interop_threads(2)
except RuntimeError as e:
    print("refused")
try:
    ember.set_num_interop_threads(0)
except RuntimeError as e:
    print("bad")
"""


def test_set_num_interop_threads_rules():
    out = subprocess.run([sys.executable, "-c", _INTEROP], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "5"
    out = subprocess.run([sys.executable, "-c", _INTEROP_AFTER_WORK], capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.split() == ["refused", "bad"], out.stderr


def test_lstm_ensemble_example_writes_a_trace(tmp_path):
    import importlib.util
    import json
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "examples" / "lstm_ensemble.py"
    spec = importlib.util.spec_from_file_location("lstm_ensemble", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "parallel.json"
    serial, forked = example.main(["--T", "4", "--B", "2", "--C", "8", "--models", "3",
                                   "--repeat", "1", "--out", str(out)])
    assert serial > 0 and forked > 0
    events = json.loads(out.read_text())["traceEvents"]
    forks = [e for e in events if e["ph"] == "X" and e["name"].startswith("ember::jit::fork")]
    # 3 models forked by the ensemble, each forking its forward LSTM
    assert len(forks) == 6
    assert any(e["name"] == "lstm_layer" for e in events if e["ph"] == "X")
