"""ember.profiler and ember.autograd.profiler: what is recorded (ops, nesting, shapes, memory,
stacks, flops, autograd nodes, record_function, forked threads, device kernels), the table's
columns, the chrome trace and stack exports, schedules, and the key staying off when idle."""
from __future__ import annotations

import json
import os
import threading

import pytest

import ember
from ember import _fastpath
from ember.dispatch import keys as K
from ember.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                            schedule, tensorboard_trace_handler)


def _mlp_step():
    x = ember.randn(8, 16)
    w = ember.randn(16, 4, requires_grad=True)
    loss = (x @ w).relu().sum()
    loss.backward()
    return w


def _names(events):
    return [e.name for e in events]


def test_every_dispatched_op_is_recorded_with_nesting_and_self_time():
    a, b = ember.randn(2, 3, 4), ember.randn(2, 4, 5)
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        ember.tensordot(a, b, dims=([0, 2], [0, 1]))
    events = prof.function_events
    top = [e for e in events if e.cpu_parent is None]
    assert _names(top)[-1] == "tensordot"
    td = top[-1]
    # tensordot is a composite: its inner ops are its children
    assert {"matmul", "permute", "view"} <= set(_names(td.cpu_children))
    assert td.cpu_time_total >= sum(c.cpu_time_total for c in td.cpu_children)
    assert td.self_cpu_time_total == pytest.approx(
        td.cpu_time_total - sum(c.cpu_time_total for c in td.cpu_children), abs=1e-3)
    mm = next(e for e in td.cpu_children if e.name == "matmul")
    assert mm.input_shapes == [[3, 8], [8, 5]] and mm.input_types == ["float32", "float32"]
    assert str(mm.device) == "cpu"


def test_autograd_redispatch_is_recorded_once_and_nodes_are_recorded():
    with ember.autograd.profiler.profile() as prof:
        _mlp_step()
    events = prof.function_events
    top = [e.name for e in events if e.cpu_parent is None]
    # forward ops once each, although autograd runs each again below itself
    assert top[:6] == ["randn", "randn", "matmul", "relu", "sum", "full"]
    assert not any(c.name == e.name for e in events for c in e.cpu_children)
    assert top[6:] == [f"autograd::engine::evaluate_function: {n}" for n in
                       ("SumBackward0", "ReluBackward0", "MmBackward0", "AccumulateGrad")]
    node = next(e for e in events if e.name.endswith("MmBackward0") and e.cpu_parent is None)
    (inner,) = node.cpu_children
    assert inner.name == "MmBackward0" and "matmul" in _names(inner.cpu_children)


def test_table_has_torchs_columns():
    with ember.autograd.profiler.profile(record_shapes=True, profile_memory=True,
                                         with_flops=True, with_stack=True) as prof:
        _mlp_step()
    text = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    header = text.splitlines()[1]
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "CPU Mem", "Self CPU Mem", "# of Calls", "Input Shapes", "Source Location",
                "Total KFLOPs"):
        assert col in header, col
    assert header.index("Self CPU %") < header.index("CPU total %") < header.index("# of Calls")
    assert text.rstrip().splitlines()[-1].startswith("Self CPU time total: ")
    plain = ember.autograd.profiler.profile()
    with plain:
        _mlp_step()
    simple = plain.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    lines = simple.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                                "CPU", "total", "CPU", "time", "avg", "#", "of", "Calls"]
    assert len(lines) == 3 + 3 + 2   # rule, header, rule, 3 rows, rule, total
    with pytest.raises(AttributeError, match="no attribute"):
        plain.key_averages().table(sort_by="bogus")


def test_key_averages_groups_by_shape_and_stack():
    with ember.autograd.profiler.profile(record_shapes=True, with_stack=True) as prof:
        for n in (2, 3):
            ember.ones(n, 4) + 1
        ember.ones(3, 4) + 1   # the same shape from another line
    by_name = {e.key: e for e in prof.key_averages()}
    assert by_name["add"].count == 3
    by_shape = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "add"]
    assert sorted(e.count for e in by_shape) == [1, 2]
    # the stack is innermost first: ember's API function (where it runs in Python; the
    # compiled hot path calls the op from C, as torch's are), then this test's lines
    stack = by_name["add"].stack
    assert stack[0].startswith("ember/ops/" if _fastpath.C is None else __file__)
    assert any(f.startswith(__file__) and "test_key_averages_groups" in f for f in stack)
    by_stack = [e for e in prof.key_averages(group_by_stack_n=5) if e.key == "add"]
    assert sorted(e.count for e in by_stack) == [1, 2]
    assert prof.total_average().count == len(prof.function_events)


def test_memory_and_flops():
    a, b = ember.randn(32, 64), ember.randn(64, 16)
    with ember.autograd.profiler.profile(profile_memory=True, with_flops=True) as prof:
        c = a @ b
    mm = next(e for e in prof.function_events if e.name == "matmul")
    assert mm.cpu_memory_usage == c.numel() * 4
    assert mm.flops == 2 * 32 * 64 * 16


def test_record_function_and_forked_tasks_get_their_own_threads(tmp_path):
    x = ember.randn(16, 16)
    started = [threading.Event() for _ in range(3)]

    def work(t, k=None):
        if k is not None:
            started[k].set()
        return (t @ t).sum()

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("user_block"):
            futs = [ember.jit.fork(work, x, k) for k in range(3)]
            # let the pool start them (a wait before that would run them on this thread)
            assert all(e.wait(30) for e in started)
            vals = [ember.jit.wait(f) for f in futs]
            work(x)
    assert len(vals) == 3
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    assert all({"name", "ts", "dur", "pid", "tid", "cat"} <= set(e) for e in xs)
    main = threading.get_native_id()
    assert any(e["name"] == "user_block" and e["tid"] == main and e["cat"] == "user_annotation"
               for e in xs)
    forked = [e for e in xs if e["name"].startswith("ember::jit::fork: ")]
    assert len(forked) == 3
    task_ops = [e for e in xs if e["name"] == "matmul"]
    assert len(task_ops) == 4
    # tasks the pool ran are on pool threads; each thread has a named row
    rows = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in xs} <= rows
    pool_rows = {e["tid"] for e in forked}
    assert main not in pool_rows and len(pool_rows) <= ember.get_num_interop_threads()
    assert any(e["name"] == "ember::jit::wait" for e in xs)
    for e in xs:
        assert e["dur"] >= 0


def test_export_stacks(tmp_path):
    with ember.autograd.profiler.profile(with_stack=True) as prof:
        ember.ones(64, 64).exp().sum()
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines
    frames, value = lines[0].rsplit(" ", 1)
    assert int(value) >= 0 and ";" in frames and " " not in frames
    assert frames.split(";")[-1].startswith("ember/ops/")   # innermost last
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(path), "flops")
    with ember.autograd.profiler.profile() as p2:
        ember.ones(2)
    with pytest.raises(RuntimeError, match="with_stack=True"):
        p2.export_stacks(str(path))


def test_schedule_and_trace_handler(tmp_path):
    sched = schedule(wait=1, warmup=1, active=2, repeat=1, skip_first=1)
    assert [sched(i) for i in range(7)] == [
        ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.NONE]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    saved = []
    steps = []
    with profile(schedule=schedule(wait=1, warmup=1, active=2),
                 on_trace_ready=lambda p: saved.append(
                     sorted({e.name for e in p.events()}))) as prof:
        for i in range(8):
            with record_function(f"step{i}"):
                ember.ones(2) + i
            steps.append(i)
            prof.step()
    assert saved == [["add", "full", "step2", "step3"], ["add", "full", "step6", "step7"]]
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path), "w0")) as prof:
        ember.ones(3).sum()
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w0.") and files[0].endswith(".pt.trace.json")
    assert json.loads((tmp_path / files[0]).read_text())["traceEvents"]


def test_the_key_is_off_when_idle_and_one_profiler_at_a_time():
    assert not K.state.masks[0] & K.PYTHON
    with profile():
        assert K.state.masks[0] & K.PYTHON
        with pytest.raises(RuntimeError, match="a profiler is already running"):
            with profile():
                pass
    assert not K.state.masks[0] & K.PYTHON
    # a thread that was not forked from the profiling thread is not recorded
    got = []
    with ember.autograd.profiler.profile() as prof:
        t = threading.Thread(target=lambda: got.append(ember.ones(2) * 3))
        t.start()
        t.join()
    assert not [e for e in prof.function_events if e.name == "mul"]
    assert got


def test_errors_in_profiled_ops_still_close_their_ranges():
    from ember.ops.rnn import rnn_step_op
    a, w = ember.ones(2, 3), ember.ones(5, 5)
    with ember.autograd.profiler.profile() as prof:
        with pytest.raises(ValueError):   # the kernel's own error (the op is called raw)
            rnn_step_op(a, a, w, None, "tanh")
        ember.ones(1)
    top = [e.name for e in prof.function_events if e.cpu_parent is None]
    assert top[-2:] == ["rnn_step", "full"]


def test_device_kernels_on_their_own_rows(tmp_path):
    if not ember.opencl.is_available():
        pytest.skip(f"opencl unavailable: {ember.opencl.unavailable_reason()}")
    x = ember.randn(32, 32, device="opencl")
    (x @ x).sum().item()   # compile outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        (x @ x).sum().item()
    table = prof.key_averages().table(sort_by="self_opencl_time_total", row_limit=4)
    assert "Self OPENCL" in table and "OPENCL total" in table and "matmul kernel" in table
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels and all(e["pid"] != os.getpid() for e in kernels)
    assert any(e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"] == "opencl:0"
               for e in events)
    mm = next(e for e in prof.events() if e.name == "matmul")
    assert mm.device_time_total > 0


def test_record_function_exited_on_another_thread():
    # issue #36: a range around work handed to another thread, closed there (torch allows it)
    with profile() as prof:
        rf = record_function("handoff")
        rf.__enter__()
        ember.ones(3) + 1
        t = threading.Thread(target=rf.__exit__, args=(None, None, None))
        t.start()
        t.join()
        with record_function("after"):
            ember.ones(3) * 2
    names = [e.name for e in prof.events()]
    assert "handoff" in names and "after" in names
    after = next(e for e in prof.events() if e.name == "after")
    assert after.cpu_parent is None or after.cpu_parent.name != "handoff"


# -- torch.ops.profiler: a range opened and closed by two calls (pytorch/examples fx) -------------
@pytest.mark.parametrize("new", [False, True])
def test_ops_profiler_opens_and_closes_a_range(new):
    enter = ember.ops.profiler._record_function_enter_new if new else \
        ember.ops.profiler._record_function_enter
    with profile() as prof:
        handle = enter("outer")
        inner = enter("inner", "args")
        ember.randn(3).relu()
        if new:
            ember.ops.profiler._record_function_exit._RecordFunction(inner)
        else:
            ember.ops.profiler._record_function_exit.default(inner)
        ember.ops.profiler._record_function_exit(handle)
    events = prof.events()
    outer = next(e for e in events if e.name == "outer")
    assert "inner" in _names(outer.cpu_children)
    relu = next(e for e in events if e.name == "relu")
    assert relu.cpu_parent.name == "inner"
    with pytest.raises(RuntimeError, match="not one _record_function_enter returned"):
        ember.ops.profiler._record_function_exit(ember.zeros(8, dtype=ember.uint8))
    # outside a profile the calls are free and still pair up
    ember.ops.profiler._record_function_exit(enter("idle"))


def test_ops_profiler_matches_torchs_names_and_overloads():
    torch = pytest.importorskip("torch")
    names = [n for n in dir(torch.ops.profiler) if n.startswith("_record")]
    assert all(callable(getattr(ember.ops.profiler, n)) for n in names)
    assert isinstance(ember.ops.profiler._record_function_enter("x"), ember.Tensor)
    for n in names:
        op = getattr(torch.ops.profiler, n)
        assert sorted(op.overloads()) == sorted(getattr(ember.ops.profiler, n).overloads())


def test_the_fx_profiling_tracer_records_its_ranges():
    """pytorch/examples fx/profiling_tracer.py: a tracer turns record_function into
    _record_function_enter/_exit calls of the graph, which the profile then shows."""
    import ember.fx as fx

    class Foo(ember.nn.Module):
        def forward(self, x):
            with ember.profiler.record_function("foo"):
                return ember.relu(x)

    class ProfilerTracer(fx.Tracer):
        def trace(self, root, concrete_args=None):
            rf = ember.autograd.profiler.record_function
            enter, exit_ = rf.__enter__, rf.__exit__

            def fake_enter(_self):
                _self._fx_profiler_ctx = self.create_proxy(
                    "call_function", ember.ops.profiler._record_function_enter, (_self.name,), {})
                return _self._fx_profiler_ctx

            def fake_exit(_self, *exc):
                ember.ops.profiler._record_function_exit(_self._fx_profiler_ctx)

            rf.__enter__, rf.__exit__ = fake_enter, fake_exit
            try:
                return super().trace(root, concrete_args)
            finally:
                rf.__enter__, rf.__exit__ = enter, exit_

    tracer = ProfilerTracer()
    graph = tracer.trace(Foo())
    gm = fx.GraphModule(tracer.root, graph)
    assert [n.target for n in graph.nodes if n.op == "call_function"][0] is \
        ember.ops.profiler._record_function_enter
    with profile() as prof:
        gm(ember.randn(5, 3))
    foo = next(e for e in prof.events() if e.name == "foo")
    assert "relu" in _names(foo.cpu_children)
