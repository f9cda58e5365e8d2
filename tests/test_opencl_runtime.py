"""The OpenCL backend's runtime: laziness, discovery, capabilities, memory, streams and events.

Skipped when no OpenCL device is available (pyopencl missing or no platform), except the
checks that need none (laziness, device selection).
"""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.runtime.allocator import OutOfMemoryError

needs_opencl = pytest.mark.skipif(not ember.opencl.is_available(),
                                  reason=f"opencl unavailable: "
                                         f"{ember.opencl.unavailable_reason()}")


def _python(code, **env):
    full_env = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=120, env=full_env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_ember_does_not_import_pyopencl():
    out = _python("""
        import sys
        import ember
        assert "pyopencl" not in sys.modules, "import ember imported pyopencl"
        import ember_opencl, ember_opencl.backend
        assert "pyopencl" not in sys.modules, "importing the plugin imported pyopencl"
        print("opencl" in ember._registry.names())
    """)
    assert out.strip() == "True"


def test_device_selection_by_index_or_name():
    from ember_opencl.device import _select
    names = ["NVIDIA CUDA: RTX", "Portable Computing Language: cpu-x86"]
    assert _select(names, "") == [0, 1]
    assert _select(names, "1") == [1]
    assert _select(names, "intel,portable") == [1]
    assert _select(names, "cuda, 1") == [0, 1]
    msg = _select(names, "intel")
    assert isinstance(msg, str) and "EMBER_OPENCL_DEVICE" in msg and "1: Portable" in msg


def test_unmatched_device_choice_makes_the_backend_unavailable_with_a_reason():
    out = _python("""
        import ember
        print(ember.opencl.is_available())
        print(ember.opencl.unavailable_reason())
    """, EMBER_OPENCL_DEVICE="no-such-device-anywhere")
    available, reason = out.strip().splitlines()
    assert available == "False"
    assert "EMBER_OPENCL_DEVICE" in reason


def test_missing_pyopencl_makes_the_backend_unavailable_with_a_reason():
    out = _python("""
        import sys
        sys.modules["pyopencl"] = None   # import pyopencl now raises ImportError
        import ember
        print(ember.opencl.is_available())
        print(ember.opencl.unavailable_reason())
        print(ember.opencl.device_count())
    """)
    available, reason, count = out.strip().splitlines()
    assert available == "False" and count == "0"
    assert "pyopencl can't be imported" in reason and "pip install" in reason


def _fake_pyopencl(monkeypatch, broken, crashing=()):
    """A stand-in pyopencl with two CPU devices whose compilers fail for the names in ``broken``
    and abort on vector code (the out-of-process check) for those in ``crashing``."""
    import types
    from ember_opencl import compiler_check
    monkeypatch.setattr(compiler_check, "codegen_problem", lambda p_i, d_i, d: (
        "the compiler crashed (SIGABRT) building a float16 vector kernel: LLVM ERROR: Cannot "
        "select: fma" if d.name in crashing else None))
    cl = types.SimpleNamespace(device_type=types.SimpleNamespace(GPU=4, ACCELERATOR=8, CPU=2))

    class Device:
        def __init__(self, name):
            self.name, self.type = name, cl.device_type.CPU

    class Platform:
        def __init__(self, name, devices):
            self.name, self._devices = name, devices

        def get_devices(self):
            return self._devices

    class Program:
        def __init__(self, ctx, src):
            self.device = ctx

        def build(self, cache_dir=None):
            if self.device.name in broken:
                raise RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
                                   "error: unknown target CPU 'generic'\nDevice failed")
            return self

    old, new = Device("pthread-old-llvm"), Device("pthread-new-llvm")
    cl.get_platforms = lambda: [Platform("PoCL wheel", [old]), Platform("PoCL distro", [new])]
    cl.Context = lambda devices: devices[0]
    cl.Program = Program
    monkeypatch.setitem(sys.modules, "pyopencl", cl)
    return old, new


def test_devices_whose_compiler_fails_are_left_out(monkeypatch):
    from ember_opencl.device import discover
    old, new = _fake_pyopencl(monkeypatch, broken={"pthread-old-llvm"})
    found = discover()
    assert found.reason is None and found.devices == [new]
    # ... but listed with the reason, for `ember info`
    assert [name for name, _ in found.left_out] == ["PoCL wheel: pthread-old-llvm"]
    assert "unknown target CPU 'generic'" in found.left_out[0][1]


def test_no_device_that_compiles_makes_the_backend_unavailable_with_the_compiler_error(monkeypatch):
    from ember_opencl.device import discover
    _fake_pyopencl(monkeypatch, broken={"pthread-old-llvm", "pthread-new-llvm"})
    found = discover()
    assert found.devices == []
    assert "unknown target CPU 'generic'" in found.reason
    assert "pthread-old-llvm" in found.reason and "pocl-opencl-icd" in found.reason


def test_devices_whose_compiler_aborts_on_vector_code_are_left_out(monkeypatch):
    # the wheel's PoCL on AMD Zen 4 builds trivial kernels but LLVM aborts the process on a
    # float16 fma; the device is left out and the hint points at a newer PoCL
    from ember_opencl.device import discover
    old, new = _fake_pyopencl(monkeypatch, broken=(), crashing={"pthread-old-llvm"})
    found = discover()
    assert found.reason is None and found.devices == [new]
    assert "LLVM ERROR" in found.left_out[0][1]
    _fake_pyopencl(monkeypatch, broken=(), crashing={"pthread-old-llvm", "pthread-new-llvm"})
    found = discover()
    assert found.devices == [] and "pocl-opencl-icd" in found.reason


def test_the_vector_compiler_check_survives_a_crashing_child(monkeypatch):
    from ember_opencl import compiler_check
    monkeypatch.setattr(compiler_check, "_CHILD", "import os, signal, sys\n"
                        "print('LLVM ERROR: Cannot select: fma', file=sys.stderr, flush=True)\n"
                        "os.kill(os.getpid(), signal.SIGABRT)\n")
    problem = compiler_check._run_child(0, 0)
    assert "crashed (SIGABRT)" in problem and "LLVM ERROR: Cannot select" in problem
    monkeypatch.setattr(compiler_check, "_CHILD", "import sys; sys.exit('wrong values')")
    assert "failed" in compiler_check._run_child(0, 0)


@needs_opencl
def test_the_device_in_use_passes_the_vector_compiler_check():
    import pyopencl as cl
    from ember_opencl import compiler_check
    device = ember.opencl._backend._devices.discovery.devices[0]
    platforms = cl.get_platforms()
    p_i = next(i for i, p in enumerate(platforms) if p == device.platform)
    d_i = platforms[p_i].get_devices().index(device)
    assert compiler_check._run_child(p_i, d_i) is None


@needs_opencl
def test_device_module():
    mod = ember.opencl
    assert mod.device_count() >= 1
    assert mod.current_device() == 0
    assert isinstance(mod.get_device_name(0), str) and mod.get_device_name(0)
    mod.synchronize()
    t = ember.ones(3, device="opencl")
    assert t.device is ember.device("opencl:0") and t.is_opencl
    with pytest.raises(RuntimeError, match="invalid device index"):
        mod.set_device(mod.device_count())


@needs_opencl
def test_declared_dtypes_follow_the_extensions():
    from ember.runtime.registry import registry
    backend = registry.get("opencl")
    ext = ember.opencl._backend._devices.discovery.devices[0].extensions
    assert (ember.float64 in backend.dtypes) == ("cl_khr_fp64" in ext)
    assert (ember.float16 in backend.dtypes) == ("cl_khr_fp16" in ext)
    assert ember.bfloat16 in backend.dtypes  # stored as 16 bits, computed through float32
    assert backend.storage_dtypes == {ember.bfloat16: ember.float32}
    assert ember.float32 in backend.dtypes and ember.int64 in backend.dtypes


@needs_opencl
def test_unsupported_dtypes_fail_before_any_kernel_with_the_dtype_name():
    # bfloat16 is stored on OpenCL (computed through float32) since issue #21, complex64 is a
    # device dtype since issue #13 (complex128 needs fp64 like float64)
    assert ember.ones(3, dtype=ember.bfloat16, device="opencl").dtype is ember.bfloat16
    assert ember.tensor([1 + 2j], device="opencl").dtype is ember.complex64
    from ember.runtime.registry import registry
    missing = [d for d in (ember.float16, ember.float64, ember.complex128)
               if d not in registry.get("opencl").dtypes]
    if not missing:
        pytest.skip("this OpenCL device stores every ember dtype")
    x = ember.ones(3, device="opencl")
    with pytest.raises(TypeError, match=missing[0].name):
        x.to(missing[0])


@needs_opencl
def test_round_trip_every_supported_dtype():
    from ember.runtime.registry import registry
    rng = np.random.default_rng(0)
    for d in registry.get("opencl").dtypes:
        host = (rng.standard_normal((3, 5)) * 10).astype(d.np)
        t = ember.tensor(host, device="opencl")
        assert t.dtype is d
        back = t.cpu().numpy()
        assert back.dtype == host.dtype and np.array_equal(back, host)


@needs_opencl
def test_storage_holds_a_pyopencl_buffer():
    import pyopencl as cl
    t = ember.zeros(10, device="opencl")
    assert isinstance(t.untyped_storage().data, cl.Buffer)
    assert t.untyped_storage().nbytes == 40


# -- memory ----------------------------------------------------------------------------------------
@needs_opencl
def test_allocator_statistics_move_like_pytorch():
    mod = ember.opencl
    gc.collect()
    mod.empty_cache()
    mod.reset_peak_memory_stats()
    base = mod.memory_allocated()
    t = ember.empty(1 << 20, dtype=ember.uint8, device="opencl")
    assert mod.memory_allocated() == base + (2 << 20)       # rounded to 2 MiB like PyTorch
    assert mod.max_memory_allocated() >= base + (1 << 20)
    assert mod.memory_reserved() >= mod.memory_allocated()
    del t
    gc.collect()
    assert mod.memory_allocated() == base
    cached = mod.memory_reserved()
    assert cached >= 1 << 20
    mod.synchronize()  # with several queues a freed block is reusable once they passed it
    u = ember.empty(1 << 20, dtype=ember.uint8, device="opencl")   # a cache hit
    assert mod.memory_reserved() == cached
    assert mod.memory_stats()["cache_hits"] >= 1
    del u
    gc.collect()
    mod.empty_cache()
    assert mod.memory_reserved() < cached


@needs_opencl
def test_out_of_memory_names_device_and_sizes_after_emptying_the_cache():
    mod = ember.opencl
    alloc = ember.opencl._backend.allocator(0)
    gc.collect()
    keep = ember.empty(1 << 20, dtype=ember.uint8, device="opencl")
    cached = ember.empty(1 << 20, dtype=ember.uint8, device="opencl")
    del cached
    gc.collect()
    mod.synchronize()
    old = alloc.limit_bytes
    alloc.limit_bytes = mod.memory_reserved() + (1 << 20)
    try:
        expected = r"opencl:0: out of memory trying to allocate 8\.00 MiB"
        with pytest.raises(OutOfMemoryError, match=expected):
            ember.empty(8 << 20, dtype=ember.uint8, device="opencl")
        assert mod.memory_stats()["num_ooms"] >= 1
        assert mod.memory_reserved() == mod.memory_allocated()    # the cache was emptied
    finally:
        alloc.limit_bytes = old
    del keep


@needs_opencl
def test_a_buffer_larger_than_the_device_allows_is_an_oom_error():
    max_alloc = ember.opencl._backend._devices.state(0).max_alloc
    with pytest.raises(OutOfMemoryError, match="CL_DEVICE_MAX_MEM_ALLOC_SIZE"):
        ember.empty(max_alloc + 1, dtype=ember.uint8, device="opencl")


# -- streams and events ----------------------------------------------------------------------------
@needs_opencl
def test_events_time_work_on_the_queue():
    mod = ember.opencl
    start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
    start.record()
    x = ember.ones(64, 64, device="opencl")
    for _ in range(3):
        x = x * 1.5
    end.record()
    with pytest.raises(RuntimeError, match="both events must be created"):
        start.elapsed_time(mod.Event())
    end.synchronize()
    assert end.query() and start.query()
    assert start.elapsed_time(end) >= 0.0
    assert float(x[0, 0].item() if hasattr(x, "__getitem__") else x.cpu().numpy()[0, 0]) == 3.375


@needs_opencl
def test_streams_are_queues_and_wait_event_orders_them():
    mod = ember.opencl
    s1, s2 = mod.Stream(), mod.Stream()
    assert s1.queue is not s2.queue and s1 != s2
    assert mod.current_stream() == mod.default_stream()
    x = ember.zeros(1000, device="opencl")
    with mod.stream(s1):
        assert mod.current_stream() is s1
        x.add_(1)
        x.mul_(3)
        done = mod.Event()
        done.record(s1)
    assert mod.current_stream() == mod.default_stream()
    s2.wait_event(done)
    with mod.stream(s2):
        y = x + 1
    s2.synchronize()
    assert s2.query()
    assert np.array_equal(y.cpu().numpy(), np.full(1000, 4.0, np.float32))
    s1.wait_stream(s2)
    mod.synchronize()


@needs_opencl
def test_stream_pool_is_bounded():
    from ember_opencl.streams import POOL_SIZE
    mod = ember.opencl
    streams = [mod.Stream() for _ in range(POOL_SIZE + 3)]
    queues = {id(s.queue) for s in streams}
    assert len(queues) <= POOL_SIZE
    assert len(ember.opencl._backend._devices.state(0).streams) == POOL_SIZE + 1


@needs_opencl
def test_blocks_freed_while_other_queues_exist_are_reused_after_their_markers():
    mod = ember.opencl
    mod.Stream()  # several queues: a freed block may still be used elsewhere
    alloc = ember.opencl._backend.allocator(0)
    t = ember.full((1000,), 2.0, device="opencl")
    before = mod.memory_allocated()
    del t
    gc.collect()
    assert mod.memory_allocated() < before          # the tensor's memory is not counted
    mod.synchronize()
    u = ember.empty(1000, device="opencl")          # the pending block is now reusable
    assert not alloc._pending
    del u


@needs_opencl
def test_no_hidden_synchronize_in_ops(monkeypatch):
    import pyopencl as cl
    waits = []
    real_copy, real_finish = cl.enqueue_copy, cl.CommandQueue.finish

    def copy(*args, **kwargs):
        if kwargs.get("is_blocking", True):
            waits.append("blocking copy")
        return real_copy(*args, **kwargs)

    monkeypatch.setattr(cl, "enqueue_copy", copy)
    monkeypatch.setattr(cl.CommandQueue, "finish",
                        lambda self: waits.append("finish") or real_finish(self))
    x = ember.tensor(np.ones(256, np.float32), device="opencl")
    y = (x * 2 + 1).exp().clamp(0, 50)
    y.add_(ember.arange(256, device="opencl").float())
    z = ember.where(y > 3, y, -y).t().contiguous().to(ember.float64)
    z.copy_(ember.linspace(0, 1, 256))
    assert waits == []
    z.cpu()                                          # reading the values is what blocks
    ember.opencl.synchronize()
    # an explicit synchronize may block too (queues finish; errors kernels flagged are read)
    assert waits[0] == "blocking copy" and "finish" in waits[1:]


@needs_opencl
def test_fallback_ops_run_on_the_cpu_with_a_warning():
    # every built-in op has an OpenCL kernel, so the fallback is shown with an op that has
    # only a CPU kernel, as a third-party library's op may
    import warnings

    from ember import library
    from ember.dispatch import dispatcher

    @library.custom_op("opencl_test::running_total", device_types="cpu")
    def running_total(x):
        assert x.device.type == "cpu", "the fallback hands the CPU kernel CPU tensors"
        return x.cumsum(0)

    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device="opencl")
    dispatcher._warned_fallback.discard(("opencl", "opencl_test::running_total"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = running_total(x)
    assert r.device is x.device and r.tolist() == [[1.0, 2.0], [4.0, 6.0]]
    assert any("runs on the CPU" in str(m.message) for m in w)


@needs_opencl
def test_threads_launch_concurrently_with_their_own_current_streams():
    import threading
    mod = ember.opencl
    results, errors = {}, []

    def work(k):
        try:
            s = mod.Stream()
            with mod.stream(s):
                assert mod.current_stream() is s
                x = ember.full((500,), float(k), device="opencl")
                for _ in range(20):
                    x = x * 1.0 + 0.0
                results[k] = x.cpu().numpy()
        except Exception as e:  # reported below: a thread's exception would be lost
            errors.append(e)

    # load the CPU backend first: the core registry's lazy loading is not thread-safe
    ember.zeros(1).cpu()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert mod.current_stream() == mod.default_stream()     # streams are per thread
    for k in range(4):
        assert np.array_equal(results[k], np.full(500, float(k), np.float32))
