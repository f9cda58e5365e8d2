"""ember.multiprocessing: torch.multiprocessing's names, CPU tensors shared between processes
(share_memory_/is_shared, Module.share_memory, queues, spawned processes' arguments: the
mnist_hogwild pattern of workers' in-place updates seen by the parent), and spawn's error
reporting."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_names_of_torch_multiprocessing():
    torch = pytest.importorskip("torch")
    import torch.multiprocessing as tmp
    missing = [n for n in tmp.__all__ if not hasattr(mp, n)]
    assert not missing
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert "file_descriptor" in mp.get_all_sharing_strategies()
    with pytest.raises(ValueError, match="file_system"):
        mp.set_sharing_strategy("file_system")
    assert torch is not None


def test_share_memory_moves_the_storage_for_every_view():
    x = ember.arange(12.0).reshape(3, 4)
    row, col = x[1], x.t()[0]
    assert float(row.sum()) == 22.0 and float(col.sum()) == 12.0  # views cached before
    assert not x.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and row.is_shared() and col.is_shared()
    x.add_(1)
    np.testing.assert_array_equal(row.numpy(), [5, 6, 7, 8])
    np.testing.assert_array_equal(col.numpy(), [1, 5, 9])
    row.mul_(10)
    np.testing.assert_array_equal(x.numpy()[1], [50, 60, 70, 80])
    x.share_memory_()  # again: a no-op
    assert x.is_shared()


def test_module_share_memory():
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    before = [p.detach().numpy().copy() for p in m.parameters()]
    assert m.share_memory() is m
    assert all(p.is_shared() for p in m.parameters())
    assert all(b.is_shared() for b in m.buffers())
    for p, b in zip(m.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b)
    assert isinstance(m[0].weight, ember.nn.Parameter) and m[0].weight.requires_grad


def _sgd_worker(rank, model, steps):
    # mnist_hogwild's train(): each worker runs its own optimizer over the shared parameters.
    # A step takes 0.8 of the y = w.1 + b it read off y (16 * lr): 0.2 y alone, and -0.6 y when
    # both workers apply a step read from the same y -- lock-free hogwild races that lr = 0.1
    # (-0.6 alone, -2.2 overlapped) let grow the loss about one run in six
    ember.manual_seed(rank)
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = model(ember.ones(2, 3)).pow(2).sum()
        loss.backward()
        opt.step()


def _fill_worker(rank, tensor, value):
    tensor[rank].fill_(value + rank)


def test_spawned_workers_update_the_parents_shared_tensors():
    t = ember.zeros(2, 3)
    mp.spawn(_fill_worker, args=(t, 7.0), nprocs=2)
    np.testing.assert_array_equal(t.numpy(), [[7, 7, 7], [8, 8, 8]])


def test_hogwild_training_is_seen_by_the_parent():
    model = ember.nn.Linear(3, 1)
    model.share_memory()
    before = model.weight.detach().numpy().copy()
    with ember.no_grad():
        loss_before = float(model(ember.ones(2, 3)).pow(2).sum())
    processes = []
    ctx = mp.get_context("spawn")
    for rank in range(2):
        p = ctx.Process(target=_sgd_worker, args=(rank, model, 3))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        assert p.exitcode == 0
    after = model.weight.detach().numpy()
    assert not np.allclose(after, before)   # the workers' steps landed in the parent's memory
    with ember.no_grad():  # each step shrinks w.1 + b, even overlapped: the loss must drop
        assert float(model(ember.ones(2, 3)).pow(2).sum()) < 0.5 * loss_before


def _queue_worker(q_in, q_out):
    t = q_in.get()
    t.add_(5)
    q_out.put(t.is_shared())


def test_tensor_through_a_queue_shares_memory():
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    t = ember.ones(4)
    p = ctx.Process(target=_queue_worker, args=(q_in, q_out))
    p.start()
    q_in.put(t)
    assert q_out.get(timeout=120) is True
    p.join()
    assert t.is_shared()  # sending moved it to shared memory, as torch does
    np.testing.assert_array_equal(t.numpy(), [6, 6, 6, 6])


def _failing_worker(rank):
    if rank == 1:
        raise ValueError("worker 1 failed on purpose")


def test_spawn_reports_a_childs_exception():
    with pytest.raises(mp.ProcessRaisedException, match="worker 1 failed on purpose") as info:
        mp.spawn(_failing_worker, nprocs=2)
    assert info.value.error_index == 1


def test_non_leaf_requiring_grad_refused():
    x = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        mp.reductions.reduce_tensor(x)
