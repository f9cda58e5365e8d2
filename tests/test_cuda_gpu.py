"""CUDA backend tests that need an NVIDIA GPU (skipped elsewhere, with the reason)."""
from __future__ import annotations

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(),
                                reason=f"needs a CUDA GPU: {ember.cuda.unavailable_reason()}")


def test_conformance_on_the_gpu_with_no_cpu_fallback():
    from ember_conformance.runner import run
    results = run("cuda", check_fd=False)
    failed = [r for r in results if r.status == "fail"]
    assert not failed, "\n".join(f"{r.name} {r.dtype}: {r.message[:300]}" for r in failed[:20])
    assert not any(r.fallback_ops for r in results)


def test_memory_statistics_follow_tensors():
    ember.cuda.empty_cache()
    base = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() >= base + (4 << 20)
    assert ember.cuda.max_memory_allocated() >= ember.cuda.memory_allocated()
    del x
    assert ember.cuda.memory_allocated() == base
    assert "Allocated memory" in ember.cuda.memory_summary()


def test_out_of_memory_names_the_device_and_sizes():
    free, total = ember.cuda.mem_get_info()
    with pytest.raises(ember.cuda.OutOfMemoryError, match=r"Tried to allocate .* GPU 0 has a "
                                                          r"total capacity"):
        ember.empty(2 * total, dtype=ember.uint8, device="cuda")


def test_dlpack_with_cupy_is_zero_copy_both_ways():
    import cupy
    a = cupy.arange(6, dtype=cupy.float32)
    t = ember.from_dlpack(a)
    a[0] = 42
    assert t.device.type == "cuda" and t.cpu().numpy()[0] == 42
    b = cupy.from_dlpack(t)
    b[1] = 7
    assert t.cpu().numpy()[1] == 7


def test_dlpack_with_torch_cuda_tensors():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    x = torch.arange(4, device="cuda", dtype=torch.float32)
    t = ember.from_dlpack(x)
    x[0] = 9
    assert t.cpu().numpy()[0] == 9
    y = torch.from_dlpack(t)
    assert y.device.type == "cuda" and y[0].item() == 9


def test_events_time_and_streams_order_work():
    s = ember.cuda.Stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    with ember.cuda.stream(s):
        start.record()
        x = ember.ones(1 << 20, device="cuda") * 3
        end.record()
    ember.cuda.current_stream().wait_stream(s)
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    assert x.sum().item() == 3 << 20


def test_pinned_non_blocking_round_trip():
    p = ember.arange(1000.).pin_memory()
    assert p.is_pinned()
    g = p.to("cuda", non_blocking=True)
    back = g.to("cpu", non_blocking=True)
    ember.cuda.synchronize()
    np.testing.assert_array_equal(back.numpy(), np.arange(1000.))


def test_random_numbers_equal_the_opencl_backends():
    if not ember.opencl.is_available():
        pytest.skip("no OpenCL device to compare with")
    ember.manual_seed(7)
    a = ember.rand(1000, device="cuda").cpu().numpy()
    ember.manual_seed(7)
    b = ember.rand(1000, device="opencl").cpu().numpy()
    np.testing.assert_array_equal(a, b)


def test_compiled_pointwise_chain_runs_as_one_cupy_kernel():
    def chain(x, y):
        v = x * 1.5 + 0.5
        v = ember.tanh(v) * v - y
        return ember.relu(v) / (1.0 + x * x), ember.where(x > y, ember.sin(x), y)
    compiled = ember.compile(chain)
    xc, yc = ember.randn(300, 70), ember.randn(70)
    x, y = xc.to("cuda"), yc.to("cuda")
    compiled(x, y)
    got = compiled(x, y)
    for g, w in zip(got, chain(xc, yc)):
        np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    entry = next(iter(compiled.cache.values()))
    assert any(n.op.name.startswith("fused[") for n in entry.lowered.nodes)
