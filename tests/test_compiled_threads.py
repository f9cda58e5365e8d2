"""The compiled kernels' own worker threads (csrc/threads.c): a kernel gives the same bits on
any number of threads, and a forked child, which has none of its parent's workers, still runs
them."""
import os
import signal
import time

import numpy as np
import pytest

import ember
from ember import _fastpath

pytestmark = pytest.mark.skipif(_fastpath.C is None, reason=_fastpath.REASON or "no ember._C")


@pytest.fixture
def threads():
    before = ember.get_num_threads()
    yield
    ember.set_num_threads(before)


def _cnn_pieces(seed):
    """Forward and gradients of conv -> relu -> max pool -> conv, large enough that every
    compiled kernel splits its work (pooling, im2col, col2im, relu, its backward, the
    max-pool scatter)."""
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.standard_normal((24, 3, 40, 40)), dtype=ember.float32,
                     requires_grad=True)
    w1 = ember.tensor(rng.standard_normal((16, 3, 3, 3)), dtype=ember.float32,
                      requires_grad=True)
    w2 = ember.tensor(rng.standard_normal((8, 16, 3, 3)), dtype=ember.float32,
                      requires_grad=True)
    h = ember.nn.functional.conv2d(x, w1, padding=1).relu()
    h = ember.nn.functional.max_pool2d(h, 2)
    y = ember.nn.functional.conv2d(h, w2)
    y.backward(ember.ones_like(y))
    return [t.detach().numpy().copy() for t in (y, x.grad, w1.grad, w2.grad)]


def test_compiled_kernels_give_the_same_bits_on_any_number_of_threads(threads):
    results = []
    for n in (1, 2, 3):
        ember.set_num_threads(n)
        results.append(_cnn_pieces(0))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


def test_relu_split_over_threads_matches_one_thread(threads):
    x = np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32)
    x[::7] = np.nan
    x[1::7] = -0.0
    out = []
    for n in (1, 2):
        ember.set_num_threads(n)
        t = ember.tensor(x, requires_grad=True)
        y = t.relu()
        y.backward(ember.tensor(x))
        out.append((y.detach().numpy().tobytes(), t.grad.numpy().tobytes()))
    assert out[0] == out[1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_runs_the_compiled_kernels(threads):
    ember.set_num_threads(2)
    expected = _cnn_pieces(2)     # the parent's workers exist now
    pid = os.fork()
    if pid == 0:   # the child: its kernels must not wait for workers it does not have
        ok = False
        try:
            got = _cnn_pieces(2)
            ok = all(a.tobytes() == b.tobytes() for a, b in zip(expected, got))
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's compiled kernels hung for 60 s (waiting for workers that "
                "fork does not copy)")
