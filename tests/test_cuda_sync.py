"""Host synchronizations of the CUDA backend, counted on the simulated GPU (``tests/cuda_sim``):
a training step must queue its work and return without waiting for the device; only reading a
value (``.item()``) waits. Value checks (indices in range, probabilities) are device asserts:
raised at the next synchronization, naming the op; the CPU raises the same errors at once."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import ember

from helpers_cuda import require_simulator, simulated_backend

require_simulator()

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import tiny_gpt  # noqa: E402

DEV = "simsync"


@pytest.fixture(scope="module")
def be():
    with simulated_backend(DEV, 2) as backend:
        yield backend


def _syncs_of(be, fn):
    sim = be._api.sim
    sim.trace_syncs()
    before = sim.syncs
    out = fn()
    where = list(sim.sync_log)
    sim.trace_syncs(False)
    return sim.syncs - before, where, out


def test_a_gpt_training_step_does_not_synchronize_until_the_loss_is_read(be):
    step, _ = tiny_gpt.training_step(ember, DEV, batch=2, ctx=8, vocab=32, dim=16, layers=1)
    step()
    count, where, loss = _syncs_of(be, step)
    assert count == 0, f"{count} host synchronizations in one step: {where}"
    count, _, value = _syncs_of(be, loss.item)
    assert count == 1 and value > 0


# -- device asserts: value checks raise at the next synchronization, naming the op -------------------
CHECKS = {
    "index_select": (lambda d: ember.index_select(ember.zeros(5, device=d), 0,
                                                  ember.tensor([1, 7], device=d)),
                     IndexError, "index_select: index 7 is out of bounds for dimension 0 with "
                                 "size 5"),
    "gather": (lambda d: ember.gather(ember.zeros(2, 3, device=d), 1,
                                      ember.tensor([[0, 3]], device=d)),
               RuntimeError, "gather: index 3 is out of bounds for dimension 1 with size 3"),
    "index": (lambda d: ember.zeros(4, device=d)[ember.tensor([-5], device=d)],
              IndexError, "index: index -5 is out of bounds for dimension 0 with size 4"),
    "index_put_": (lambda d: ember.zeros(4, device=d).index_put_(
        (ember.tensor([9], device=d),), ember.ones(1, device=d), accumulate=True),
        IndexError, "index_put_: index 9 is out of bounds"),
    "scatter_add": (lambda d: ember.zeros(3, device=d).scatter_add(
        0, ember.tensor([0, 3], device=d), ember.ones(2, device=d)),
        RuntimeError, "scatter_add: index 3 is out of bounds"),
    "index_add": (lambda d: ember.zeros(3, device=d).index_add(
        0, ember.tensor([4], device=d), ember.ones(1, device=d)),
        RuntimeError, "index_add: index 4 is out of bounds"),
    "nll_loss": (lambda d: ember.nn.functional.nll_loss(ember.zeros(2, 3, device=d),
                                                        ember.tensor([1, 5], device=d)),
                 IndexError, r"Target 5 is out of bounds. \(nll_loss: 3 classes"),
    "embedding": (lambda d: ember.nn.functional.embedding(ember.tensor([2, 6], device=d),
                                                          ember.zeros(4, 2, device=d)),
                  IndexError, r"index out of range in self \(embedding of 4 rows got index 6"),
    "floor_divide": (lambda d: ember.floor_divide(ember.ones(2, dtype=ember.int64, device=d),
                                                  ember.zeros(2, dtype=ember.int64, device=d)),
                     RuntimeError, "ZeroDivisionError"),
    "normal": (lambda d: ember.normal(ember.zeros(2, device=d), -ember.ones(2, device=d)),
               RuntimeError, "normal expects all elements of std >= 0.0"),
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_value_checks_raise_at_the_next_synchronization_naming_the_op(be, name):
    fn, exc, message = CHECKS[name]
    mod = getattr(ember, DEV)
    count, where, out = _syncs_of(be, lambda: fn(DEV))   # queued, no wait, no error yet
    assert count == 0, where
    with pytest.raises(exc, match=message) as err:
        mod.synchronize()
    assert f"found on the device by {name}" in str(err.value)
    mod.synchronize()                                        # reported once


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_cpu_raises_the_same_errors_at_once(name):
    fn, exc, message = CHECKS[name]
    with pytest.raises(exc, match=message):
        fn("cpu")


def test_a_value_read_raises_what_its_stream_found_before_returning(be):
    x = ember.zeros(5, device=DEV)
    y = ember.index_select(x, 0, ember.tensor([0, 5], device=DEV))
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        y.sum().item()
    count, _, value = _syncs_of(be, lambda: (x + 1).sum().item())
    assert count == 1 and value == 5.0


def test_sync_debug_mode_warns_or_raises_at_host_synchronizations(be):
    mod = getattr(ember, DEV)
    x = ember.ones(3, device=DEV)
    try:
        mod.set_sync_debug_mode("error")
        assert mod.get_sync_debug_mode() == 2
        y = (x * 2).sum()                          # queued work is fine
        with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
            y.item()
        mod.set_sync_debug_mode(1)
        with pytest.warns(UserWarning, match="synchronizing CUDA operation"):
            y.item()
    finally:
        mod.set_sync_debug_mode("default")
    assert y.item() == 6.0


def test_max_pool_with_nan_and_integer_powers_need_no_value_read(be):
    x = ember.tensor([[[[1.0, float("nan"), 3.0, 2.0], [0.0, 5.0, -1.0, 7.0]]]])
    p = ember.tensor([[2, 3], [0, -1]])
    base = ember.tensor([[3, -1], [2, 1]])
    mp = ember.nn.functional.max_pool2d
    want = mp(x, 2, return_indices=True)
    dx = x.to(DEV)
    mp(dx, 2, return_indices=True)                   # the window table's one upload
    count, where, got = _syncs_of(be, lambda: (mp(dx, 2, return_indices=True),
                                               base.to(DEV) ** p.to(DEV)))
    assert count == 0, where
    (v, i), pw = got
    assert i.cpu().tolist() == want[1].tolist()
    assert str(v.cpu().tolist()) == str(want[0].tolist())
    assert pw.cpu().tolist() == (base ** p).tolist()
