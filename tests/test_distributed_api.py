"""ember.distributed in one process (a world of one rank through MPI's singleton start): API
surface, argument errors, Work/Future, the backend registry and its pluggy hook, the launcher's
command line, and autograd's queue_callback. Multi-process behaviour is in
test_distributed_collectives/ddp/faults/launcher.py."""
import os
import subprocess
import sys
import sysconfig
from datetime import timedelta

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.futures import Future, collect_all, wait_all
from helpers_dist import mpi_missing_reason

needs_mpi = pytest.mark.skipif(mpi_missing_reason() is not None,
                               reason=mpi_missing_reason() or "")


@pytest.fixture
def world1():
    dist.init_process_group("mpi", timeout=timedelta(seconds=30))
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def test_names_and_constants():
    assert dist.is_available()
    assert dist.ReduceOp.SUM == 0 and dist.ReduceOp.AVG == 1 and dist.ReduceOp.MAX == 4
    assert repr(dist.ReduceOp.MAX) == "<RedOpType.MAX: 4>"
    assert dist.Backend("MPI") == "mpi" and dist.Backend.MPI == "mpi"
    assert dist.Backend("SomePlugin") == "someplugin"
    assert dist.default_pg_timeout == timedelta(minutes=30)
    assert not dist.is_gloo_available()
    assert issubclass(dist.DistBackendError, RuntimeError)


def test_queries_before_init_raise_torch_error():
    assert not dist.is_initialized()
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(RuntimeError, match="Default process group has not been initialized"):
            fn()
    with pytest.raises(RuntimeError, match="has not been initialized"):
        dist.all_reduce(ember.ones(2))


@needs_mpi
def test_single_rank_world(world1):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "mpi"
    assert dist.group.WORLD is dist.GroupMember.WORLD
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0]
    x = ember.tensor([1.0, -2.0, 3.0])
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT):
        y = x.clone()
        dist.all_reduce(y, op=op)
        np.testing.assert_array_equal(y.numpy(), x.numpy())
    outs = [ember.zeros(3)]
    dist.all_gather(outs, x)
    np.testing.assert_array_equal(outs[0].numpy(), x.numpy())
    objs = [{"a": 1, "t": ember.arange(2)}, "s"]
    dist.broadcast_object_list(objs, src=0)
    assert objs[1] == "s" and objs[0]["a"] == 1
    gathered = [None]
    dist.all_gather_object(gathered, (1, 2.5, None))
    assert gathered == [(1, 2.5, None)]
    dist.barrier()


@needs_mpi
def test_collective_bumps_version_and_respects_autograd_leaves(world1):
    p = ember.ones(3, requires_grad=True)
    v = p._version
    dist.all_reduce(p)
    assert p._version > v and p.requires_grad


@needs_mpi
def test_argument_errors_name_the_function(world1):
    x = ember.ones(4, 4)
    with pytest.raises(ValueError, match="Tensors must be contiguous"):
        dist.all_reduce(x.t())
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type torch.Tensor"):
        dist.all_reduce([1, 2])
    with pytest.raises(ValueError, match="all_reduce does not support ReduceOp.MAX on complex"):
        dist.all_reduce(ember.ones(2, dtype=ember.complex64), op=dist.ReduceOp.MAX)
    with pytest.raises(ValueError, match="ReduceOp.AVG needs a floating point"):
        dist.all_reduce(ember.ones(2, dtype=ember.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="ReduceOp.BAND needs an integer or bool"):
        dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND)
    with pytest.raises(ValueError, match="op must be a torch.distributed.ReduceOp"):
        dist.all_reduce(ember.ones(2), op="sum")
    with pytest.raises(ValueError, match="tensor_list has 2 tensors but the group has 1"):
        dist.all_gather([ember.ones(2), ember.ones(2)], ember.ones(2))
    with pytest.raises(ValueError, match="Global rank 3 is not part of group"):
        dist.broadcast(ember.ones(2), src=3)
    with pytest.raises(ValueError, match="output_tensor has 5 elements"):
        dist.all_gather_into_tensor(ember.ones(5), ember.ones(2))
    with pytest.raises(ValueError, match="must not be the same as the rank"):
        dist.send(ember.ones(2), dst=0)
    with pytest.raises(ValueError, match="can't be split evenly|split"):
        dist.all_to_all_single(ember.ones(3), ember.ones(3), input_split_sizes=[1, 2])
    with pytest.raises(TypeError, match="broadcast_object_list: objects travel in ember.save's "
                                        "format.*object"):
        dist.broadcast_object_list([object()], src=0)
    with pytest.raises(TypeError, match="datetime.timedelta"):
        dist.new_group([0], timeout=5)


@needs_mpi
def test_init_errors(world1, monkeypatch):
    with pytest.raises(ValueError, match="trying to initialize the default process group twice"):
        dist.init_process_group("mpi")
    dist.destroy_process_group()
    with pytest.raises(ValueError, match="rank=1 but this process is rank 0"):
        dist.init_process_group("mpi", rank=1, world_size=1)
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(ValueError, match="WORLD_SIZE=4 but MPI says world_size is 1.*ember-run"):
        dist.init_process_group("mpi")
    monkeypatch.delenv("WORLD_SIZE")
    if not ember.cuda.is_available():  # the CUDA backend registers "nccl" and says why it can't
        with pytest.raises(RuntimeError, match="the nccl backend needs CUDA, which is "
                                               "unavailable here"):
            dist.init_process_group("nccl")
    with pytest.raises(RuntimeError, match="gloo.*use backend='mpi'"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="expected 'device:backend' pairs"):
        dist.init_process_group("cpu:")
    dist.init_process_group("mpi")    # for the fixture's teardown


@needs_mpi
def test_work_and_future(world1):
    t = ember.ones(3)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert work.result()[0] is t
    fut = work.get_future()
    assert fut.done() and fut.value()[0] is t
    doubled = fut.then(lambda f: f.value()[0] * 2)
    np.testing.assert_array_equal(doubled.wait().numpy(), [2, 2, 2])
    with pytest.raises(TypeError, match="timedelta"):
        work.wait(timeout="soon")
    assert dist.barrier(async_op=True).wait()


def test_future_semantics():
    f = Future()
    seen = []
    chained = f.then(lambda x: x.value() + 1)
    f.add_done_callback(lambda x: seen.append(x.value()))
    assert not f.done()
    with pytest.raises(RuntimeError, match="has not completed yet"):
        f.value()
    f.set_result(41)
    assert seen == [41] and chained.wait() == 42
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(0)
    bad = Future()
    failing = bad.then(lambda x: x.value())
    bad.set_exception(ValueError("nope"))
    with pytest.raises(RuntimeError, match="running the callback: ValueError: nope"):
        failing.wait()  # torch wraps a callback's error the same way
    a, b = Future(), Future()
    both = collect_all([a, b])
    a.set_result(1)
    assert not both.done()
    b.set_result(2)
    assert [x.value() for x in both.wait()] == [1, 2]
    assert wait_all([a, b]) == [1, 2]


class _CountingBackend(dist.ProcessGroupBackend):
    """A plug-in backend for one rank: records what it is asked to do."""
    name = "countingccl"
    calls = []

    def allreduce(self, tensor, op):
        _CountingBackend.calls.append(("allreduce", tuple(tensor.shape), op))
        from ember.distributed.work import CompletedWork
        return CompletedWork("all_reduce", [tensor])


class _Plugin:
    """What a backend package's plugin module provides (registered the way an entry point
    is: ``registry.register_plugin``)."""

    @ember.runtime.hookimpl
    def ember_register_process_groups(self, registry):
        registry.add("countingccl", self.factory, devices=["cpu"])

    @staticmethod
    def factory(context):
        assert context.bootstrap is not None and context.bootstrap.size() == context.size
        assert context.device_types == ["cpu"]
        return _CountingBackend(context)


@needs_mpi
def test_plugin_process_group_through_the_hook():
    from ember.distributed.backend import Backend, registry
    from ember.runtime.registry import registry as devices
    plugin = _Plugin()
    devices.register_plugin(plugin, name="test-countingccl")
    try:
        registry.get("countingccl")   # registered through the historic hook
        dist.init_process_group("countingccl")
        try:
            assert dist.get_backend() == "countingccl"
            _CountingBackend.calls.clear()
            dist.all_reduce(ember.ones(2, 3), op=dist.ReduceOp.MAX)
            assert _CountingBackend.calls == [("allreduce", (2, 3), dist.ReduceOp.MAX)]
            with pytest.raises(RuntimeError, match="does not implement broadcast"):
                dist.broadcast(ember.ones(2), src=0)
            with pytest.raises(RuntimeError, match="No backend type associated with device "
                                                   "type meta"):
                dist.group.WORLD._get_backend("meta")
            dist.barrier()                    # host synchronization: the MPI instance
        finally:
            dist.destroy_process_group()
        dist.init_process_group("cpu:countingccl,opencl:mpi")
        try:
            assert dist.group.WORLD._get_backend("opencl").name == "mpi"
            assert dist.group.WORLD._get_backend("cpu").name == "countingccl"
        finally:
            dist.destroy_process_group()
    finally:
        devices.pm.unregister(plugin)
        registry._factories.pop("countingccl", None)
        Backend.backend_capability.pop("countingccl", None)


def test_backend_register_backend_validates():
    from ember.distributed.backend import registry
    with pytest.raises(ValueError, match="MPI c10d backend already exist"):
        dist.Backend.register_backend("mpi", lambda ctx: None)
    with pytest.raises(TypeError, match="must be callable"):
        registry.add("bad", 42)
    with pytest.raises(ValueError, match="identifiers"):
        registry.add("no spaces", lambda c: None)


def test_queue_callback_runs_after_the_graph():
    from ember.autograd import engine
    with pytest.raises(RuntimeError, match="only be installed during backward pass"):
        engine.queue_callback(lambda: None)
    order = []
    w = ember.ones(3, requires_grad=True)
    x = ember.ones(3, requires_grad=True)

    def hook(p):
        order.append("hook")
        engine.queue_callback(lambda: order.append(("callback", w.grad is not None,
                                                    x.grad is not None)))
    w.register_post_accumulate_grad_hook(hook)
    ((w * 2).sum() + (x * 3).sum()).backward()
    assert order[0] == "hook" and order[-1] == ("callback", True, True)


def test_importing_ember_does_not_import_mpi4py():
    code = "import ember, ember.distributed, ember.nn.parallel, sys; print('mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_launcher_finds_the_wheels_mpiexec_and_builds_the_command(tmp_path, monkeypatch):
    from ember.distributed import run
    monkeypatch.delenv("EMBER_MPIEXEC", raising=False)
    if mpi_missing_reason() is None:
        # the mpich wheel's, next to this Python: no PATH change needed
        exe = run.find_mpiexec()
        assert os.path.dirname(exe) in (sysconfig.get_path("scripts"),
                                        os.path.dirname(sys.executable))
    opts = run._parser().parse_args(["-n", "3", "--mpiexec", sys.executable, "-m", "pkg.mod",
                                     "--lr", "1"])
    cmd, env = run.build_command(opts)
    assert cmd[:3] == [sys.executable, "-n", "3"] and cmd[-4:] == ["-m", "pkg.mod", "--lr", "1"]
    assert env == ({} if "OMP_NUM_THREADS" in os.environ else {"OMP_NUM_THREADS": "1"})
    hosts = tmp_path / "hosts"
    hosts.write_text("a:2\nb:2\n")
    opts = run._parser().parse_args(["--nproc-per-node", "2", "--hostfile", str(hosts),
                                     "--mpiexec", sys.executable, "train.py"])
    cmd, _ = run.build_command(opts)
    assert cmd[1:7] == ["-n", "4", "-f", str(hosts), "-ppn", "2"]
    with pytest.raises(SystemExit, match="does not exist"):
        run.build_command(run._parser().parse_args(["--hostfile", str(tmp_path / "none"),
                                                    "x.py"]))
    with pytest.raises(FileNotFoundError, match="not an executable"):
        run.find_mpiexec(str(tmp_path / "nothing"))
    out = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--help"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "--nproc-per-node" in out.stdout
