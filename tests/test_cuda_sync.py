"""Host synchronizations of the CUDA backend, counted on the simulated GPU (``tests/cuda_sim``):
a training step must queue its work and return without waiting for the device; only reading a
value (``.item()``) waits."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import ember
from ember.runtime.registry import registry

from helpers_cuda import have_compiler, make_fake_backend

pytest.importorskip("cupy", reason="the simulator checks calls against cupy's API (dev extra)")
if not have_compiler():
    pytest.skip("g++ is needed to run the CUDA kernels on the host", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import tiny_gpt  # noqa: E402

DEV = "simsync"


@pytest.fixture(scope="module")
def be():
    backend = make_fake_backend(DEV, device_count=2)
    registry.add(backend)
    assert getattr(ember, DEV).is_available()
    yield backend
    registry.remove(DEV)


def _syncs_of(be, fn):
    sim = be._api.sim
    sim.trace_syncs()
    before = sim.syncs
    out = fn()
    where = list(sim.sync_log)
    sim.trace_syncs(False)
    return sim.syncs - before, where, out


@pytest.mark.xfail(strict=True, reason="issue #33 risk 1: embedding, nll_loss and the index "
                                       "kernels read values back on the host")
def test_a_gpt_training_step_does_not_synchronize_until_the_loss_is_read(be):
    step, _ = tiny_gpt.training_step(ember, DEV, batch=2, ctx=8, vocab=32, dim=16, layers=1)
    step()
    count, where, loss = _syncs_of(be, step)
    assert count == 0, f"{count} host synchronizations in one step: {where}"
    count, _, value = _syncs_of(be, loss.item)
    assert count == 1 and value > 0
