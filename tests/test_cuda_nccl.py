"""The NCCL process group on the simulated GPU with a simulated NCCL (``tests/cuda_sim/nccl.py``),
in a world of one rank (MPI's singleton start): collectives on their own communication stream
ordered by events (no host waits, DDP's all-reduces overlapping backward), the watchdog
aborting a hung collective or one NCCL reports failed and raising naming the rank and op, the
communicator build bounded by the timeout, LOCAL_RANK choosing the GPU, cupy 14's unique id."""
from __future__ import annotations

import time
from datetime import timedelta

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.backend import registry as pg_registry

from helpers_cuda import require_simulator, simulated_backend
from helpers_dist import mpi_missing_reason

require_simulator()
if mpi_missing_reason() is not None:
    pytest.skip(mpi_missing_reason(), allow_module_level=True)

DEV = "simnccl"


@pytest.fixture(scope="module")
def be():
    from ember_cuda.nccl import ProcessGroupNCCL
    with simulated_backend(DEV, 2) as backend:
        pg_registry.add(DEV, lambda ctx: ProcessGroupNCCL(ctx, backend,
                                                          backend._api.nccl_module()),
                        devices=[DEV])
        yield backend
    # leave no trace for later init_process_group(None) calls in this process
    pg_registry._factories.pop(DEV, None)
    dist.Backend.default_device_backend_map.pop(DEV, None)


@pytest.fixture
def group(be):
    be.device_chosen = True   # the tests pick cuda:0 unless they say otherwise
    be._api.set_device(0)
    dist.init_process_group(f"cpu:mpi,{DEV}:{DEV}", timeout=timedelta(seconds=0.6))
    yield dist.group.WORLD._get_backend(ember.device(DEV, 0))
    be._api.sim.release()
    be._api.nccl_module().async_error = None
    if dist.is_initialized():
        dist.destroy_process_group()
    be._async_errors.clear()


def _syncs(be):
    return be._api.sim.syncs


def test_collectives_run_on_a_communication_stream_ordered_by_events(be, group):
    mod = getattr(ember, DEV)
    x = ember.arange(6.0, device=DEV) * 2          # produced on the current stream
    before = _syncs(be)
    work = dist.all_reduce(x, async_op=True)
    early = (x + 0).cpu()                          # read before waiting: the collective may
    assert np.isnan(early.numpy()).all()           # still be writing x on its own stream
    work.wait()                                    # the current stream waits; the host does not
    assert _syncs(be) == before + 1                # (only the early read above waited)
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert group._stream.ptr != mod.current_stream().cuda_stream
    assert group._comm.calls == ["allReduce"]
    out = [ember.zeros(6, device=DEV)]
    dist.all_gather(out, x)
    assert out[0].tolist() == x.tolist()
    fut = dist.all_reduce(x, async_op=True).get_future()
    assert fut.then(lambda f: f.value()[0].sum()).wait().item() == 30.0


def test_a_ddp_step_queues_its_all_reduce_and_never_waits_on_the_host(be, group):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(),
                                ember.nn.Linear(16, 4)).to(DEV)
    ddp = ember.nn.parallel.DistributedDataParallel(model)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    x, y = ember.randn(5, 8, device=DEV), ember.randn(5, 4, device=DEV)

    def step():
        opt.zero_grad()
        loss = ((ddp(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    step()
    before = _syncs(be)
    loss = step()
    assert _syncs(be) == before, "a DDP step waited for the GPU"
    assert np.isfinite(loss.item())
    ref = [p.detach().cpu().numpy() for p in model.parameters()]
    assert all(np.isfinite(r).all() for r in ref)


def test_the_watchdog_aborts_a_hung_collective_and_names_it(be, group):
    sim = be._api.sim
    x = ember.ones(4, device=DEV)
    sim.stall(group._stream)                       # the collective never finishes
    work = dist.all_reduce(x, async_op=True)
    work.wait()                                    # returns: only the stream waits
    sim.hang_timeout = 5.0                         # the host blocks on the result...
    t0 = time.monotonic()
    try:
        with pytest.raises(dist.DistBackendError,
                           match=r"all_reduce \(collective #\d+ of process group .* rank 0 of 1 "
                                 r"on cuda:0\) did not complete within 0.6 s"):
            x.sum().item()                         # ...until the watchdog aborts NCCL
    finally:
        sim.hang_timeout = 0.0
    assert time.monotonic() - t0 < 4.0
    assert group._comm.aborted
    with pytest.raises(dist.DistBackendError, match="can't be used any more"):
        dist.all_reduce(x)


def test_an_asynchronous_nccl_error_breaks_the_group_naming_the_rank(be, group):
    from cuda_sim.nccl import NcclError
    be._api.nccl_module().async_error = NcclError("ncclRemoteError: a remote rank exited")
    deadline = time.monotonic() + 3.0
    while group._error is None and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(dist.DistBackendError, match=r"asynchronous error on rank 0 of 1 "
                                                    r"\(cuda:0\).*ncclRemoteError"):
        dist.all_reduce(ember.ones(2, device=DEV))
    assert group._comm.aborted


def test_the_groups_barrier_waits_on_the_host_and_times_out(be, group):
    # (dist.barrier() is the MPI group's host barrier; this is the NCCL group's own, as
    # PyTorch's ProcessGroupNCCL.barrier: a one-element all-reduce the host waits for)
    group.barrier().wait()
    be._api.sim.stall(group._stream)
    with pytest.raises(dist.DistBackendError, match="barrier .* did not complete within"):
        group.barrier().wait()


def test_building_the_communicator_is_bounded_by_the_timeout(be):
    nccl = be._api.nccl_module()
    nccl.hang_init.set()
    be.device_chosen = True
    t0 = time.monotonic()
    try:
        with pytest.raises(dist.DistBackendError, match=r"NCCL communicator of process group "
                                                        r".* was not built within 0.4 s on "
                                                        r"rank 0 of 1"):
            dist.init_process_group(DEV, timeout=timedelta(seconds=0.4))
    finally:
        nccl.hang_init.clear()
        if dist.is_initialized():
            dist.destroy_process_group()
    assert time.monotonic() - t0 < 3.0


def test_local_rank_picks_the_gpu_unless_the_program_chose_one(be, monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "1")
    be.device_chosen = False
    try:
        dist.init_process_group(f"cpu:mpi,{DEV}:{DEV}", timeout=timedelta(seconds=5))
        impl = dist.group.WORLD._get_backend(ember.device(DEV, 1))
        assert impl._device == 1 and getattr(ember, DEV).current_device() == 1
        x = ember.ones(3, device=DEV)              # "the GPU" is now this rank's
        assert x.device == ember.device(DEV, 1)
        dist.all_reduce(x)
        assert x.tolist() == [1.0, 1.0, 1.0]
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        be._api.set_device(0)


def test_the_unique_id_is_passed_as_bytes_as_cupy_14_requires(be, group):
    from cuda_sim.nccl import FakeCommunicator
    with pytest.raises(TypeError, match="expected bytes, got tuple"):
        FakeCommunicator(be._api.nccl_module(), 1, tuple(range(128)), 0)
    assert group._comm is not None


def test_ember_run_places_one_rank_per_gpu():
    from ember.distributed import run
    assert run.resolve_ppn("gpu", lambda: 4) == 4
    assert run.resolve_ppn("auto", lambda: 0) == 1 and run.resolve_ppn("3") == 3
    with pytest.raises(SystemExit, match="no CUDA GPU is visible"):
        run.resolve_ppn("gpu", lambda: 0)
    opts = run._parser().parse_args(["--nproc-per-node", "2", "--dry-run", "train.py"])
    cmd, _ = run.build_command(opts)
    assert cmd[1:3] == ["-n", "2"]
