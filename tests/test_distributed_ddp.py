"""DistributedDataParallel.

One-process tests (a world of one rank) check the module wrapper, bucketing, hooks and errors.
The slow tests start real jobs with the launcher (tests/dist_workers/ddp_worker.py): DDP on 2
and 4 ranks for 20 steps must end with the parameters that one process gets by training on the
concatenated batch (float32 tolerance), for the plain, static_graph, no_sync, join (uneven
inputs), find_unused_parameters, gradient_as_bucket_view and comm-hook variants, on CPU and on
OpenCL tensors when OpenCL is available."""
import os
import sys
from datetime import timedelta

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP
from helpers_dist import WORKERS, mpi_missing_reason, requires_mpi, run_job

sys.path.insert(0, WORKERS)
import ddp_common as C  # noqa: E402

needs_mpi = pytest.mark.skipif(mpi_missing_reason() is not None,
                               reason=mpi_missing_reason() or "")


@pytest.fixture
def world1():
    dist.init_process_group("mpi", timeout=timedelta(seconds=30))
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                         nn.Linear(8, 2))


# -- one process ---------------------------------------------------------------------------------
@needs_mpi
def test_wrapper_module_and_state_dict(world1):
    inner = _mlp()
    ddp = DDP(inner)
    assert ddp.module is inner
    keys = list(ddp.state_dict())
    assert keys == ["module." + k for k in inner.state_dict()]
    ddp.load_state_dict(ddp.state_dict())
    assert "DistributedDataParallel" in repr(ddp) and "(module): Sequential" in repr(ddp)


@needs_mpi
def test_construction_errors(world1):
    frozen = nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="not needed when a module doesn't have any "
                                           "parameter that requires a gradient"):
        DDP(frozen)
    with pytest.raises(ValueError, match="device_ids can only be None or contain a single"):
        DDP(_mlp(), device_ids=[0, 1])
    with pytest.raises(TypeError, match="expects an nn.Module"):
        DDP(lambda x: x)
    with pytest.raises(ValueError, match="mixed_precision is not supported"):
        DDP(_mlp(), mixed_precision=object())


@needs_mpi
def test_buckets_fill_in_reverse_order_then_follow_the_gradients(world1):
    model = _mlp()
    names = [n for n, _ in model.named_parameters()]
    ddp = DDP(model, bucket_cap_mb=100 / 2 ** 20)   # ~100-byte buckets
    first = [[names[i] for i in b] for b in ddp.reducer.bucket_indices()]
    flat = [n for b in first for n in b]
    assert flat == list(reversed(names)) and len(first) > 2
    seen = []

    def recording_hook(state, bucket):
        seen.append((bucket.index(), bucket.is_last(),
                     [names.index(n) for p in bucket.parameters()
                      for n, q in model.named_parameters() if q is p],
                     [tuple(g.shape) for g in bucket.gradients()]))
        from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        return allreduce_hook(state, bucket)
    ddp.register_comm_hook(None, recording_hook)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, recording_hook)
    x = ember.randn(5, 4)
    for _ in range(2):
        ddp(x).sum().backward()
    launched = [s[0] for s in seen]
    assert launched == list(range(len(first))) * 2
    assert [s[1] for s in seen[:len(first)]] == [False] * (len(first) - 1) + [True]
    assert [s[3] for s in seen[:1]] == [[tuple(p.shape) for p in
                                         [dict(model.named_parameters())[n] for n in first[0]]]]
    # the second forward rebuilt the buckets in the order gradients arrived
    assert ddp.reducer.has_rebuilt


@needs_mpi
def test_gradients_match_plain_training_and_no_sync_accumulates(world1):
    plain, wrapped = _mlp(), _mlp()
    ddp = DDP(wrapped, bucket_cap_mb=100 / 2 ** 20)
    x = ember.randn(7, 4)
    F.mse_loss(plain(x), x[:, :2]).backward()
    F.mse_loss(plain(x * 2), x[:, :2]).backward()
    with ddp.no_sync():
        F.mse_loss(ddp(x), x[:, :2]).backward()
    F.mse_loss(ddp(x * 2), x[:, :2]).backward()
    for p, q in zip(plain.parameters(), wrapped.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-6, atol=1e-7)


@needs_mpi
def test_gradient_as_bucket_view(world1):
    model = _mlp()
    ddp = DDP(model, gradient_as_bucket_view=True)
    ddp(ember.randn(3, 4)).sum().backward()
    buffers = {id(b.buffer._storage) for b in ddp.reducer.buckets}
    assert all(id(p.grad._storage) in buffers for p in model.parameters())


@needs_mpi
def test_unused_parameters_need_find_unused(world1):
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)

        def forward(self, x):
            return self.a(x)
    ddp = DDP(Branchy())
    ddp(ember.ones(2, 3)).sum().backward()
    with pytest.raises(RuntimeError, match="(?s)Expected to have finished reduction in the prior "
                                           "iteration.*b.weight, b.bias"):
        ddp(ember.ones(2, 3))
    model = Branchy()
    ddp = DDP(model, find_unused_parameters=True)
    for _ in range(2):
        ddp(ember.ones(2, 3)).sum().backward()
    assert model.b.weight.grad is None and model.a.weight.grad is not None


# -- real jobs -----------------------------------------------------------------------------------
def _reference(variant, world, device="cpu"):
    """One process: the same model, data and optimizer on the concatenated batch (per-rank
    losses summed over ranks / world where ranks differ: join, find_unused)."""
    model = C.make_model(100, device, variant)
    opt = ember.optim.SGD(model.parameters(), lr=C.LR, momentum=0.9)
    xs, ys = C.data(world)
    for i in range(C.STEPS):
        opt.zero_grad()
        if variant in ("join", "join_static", "find_unused"):
            active = [r for r in range(world) if i < C.steps_for(r, variant)]
            loss = sum(F.mse_loss(model(ember.tensor(C.shard(xs, i, r), device=device),
                                        use_extra=C.uses_extra(r, variant)),
                                  ember.tensor(C.shard(ys, i, r), device=device))
                       for r in active) / world
        else:
            loss = F.mse_loss(model(ember.tensor(xs[i], device=device)),
                              ember.tensor(ys[i], device=device))
        loss.backward()
        opt.step()
    return {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}


_TOL = {"fp16": dict(rtol=1e-3, atol=2e-4), "bf16": dict(rtol=1e-2, atol=3e-3)}


def _check_parity(out_dir, world, device, variants):
    for variant in variants:
        ref = _reference(variant, world)
        start = C.make_model(100, "cpu", variant).state_dict()
        assert max(np.abs(start[k].numpy() - ref[k]).max() for k in ref) > 1e-2  # it trained
        for rank in range(world):
            got = ember.load(os.path.join(out_dir, f"{variant}-{device}-rank{rank}.pt"))
            assert got["__num_buckets"] >= 3, "the test model must span several buckets"
            for k, want in ref.items():
                np.testing.assert_allclose(
                    got["module." + k].numpy(), want, **_TOL.get(variant, dict(rtol=2e-5,
                                                                               atol=2e-6)),
                    err_msg=f"{variant} on {device}, rank {rank} of {world}: {k}")


def _launch(tmp_path, world, device, variants):
    rc, out, err, _ = run_job(world, "ddp_worker.py", tmp_path, device, ",".join(variants),
                              timeout=300)
    assert rc == 0, out + err
    _check_parity(str(tmp_path), world, device, variants)


@pytest.mark.slow
@requires_mpi
def test_ddp_parity_two_ranks_every_variant(tmp_path):
    _launch(tmp_path, 2, "cpu", ["plain", "static", "no_sync", "join", "join_static",
                                 "find_unused", "as_view", "allreduce_hook", "fp16", "bf16"])


@pytest.mark.slow
@requires_mpi
def test_ddp_parity_four_ranks(tmp_path):
    _launch(tmp_path, 4, "cpu", ["plain", "static", "no_sync", "join", "join_static"])


@pytest.mark.slow
@requires_mpi
def test_ddp_parity_on_opencl_tensors(tmp_path):
    if not ember.opencl.is_available():
        pytest.skip("the OpenCL backend is not available on this machine")
    _launch(tmp_path, 2, "opencl", ["plain", "static", "no_sync", "join"])


@pytest.mark.slow
@requires_mpi
def test_ddp_parity_on_a_third_party_device(tmp_path):
    # plugins/ember-openreg: the MPI group serves a device it knows nothing about by staging
    # its tensors through host buffers
    _launch(tmp_path, 2, "openreg", ["plain", "join"])


@pytest.mark.slow
@requires_mpi
def test_example_ddp_train_runs_under_the_launcher(tmp_path):
    example = os.path.join(os.path.dirname(WORKERS), "..", "examples", "ddp_train.py")
    rc, out, err, _ = run_job(2, os.path.abspath(example), "--epochs", "2", "--save",
                              tmp_path / "w.pt", timeout=300)
    assert rc == 0, out + err
    assert "epoch 1: loss" in out and "over 2 ranks" in out
    assert set(ember.load(tmp_path / "w.pt")) == {"0.weight", "0.bias", "2.weight", "2.bias",
                                                  "4.weight", "4.bias"}
