"""CUDA backend tests that need an NVIDIA GPU (skipped elsewhere, with the reason): the first
real-GPU run of what the simulator (``tests/cuda_sim``) checked -- half-precision GEMMs on
cuBLAS, streams, ``record_stream`` and pinned memory, device-side asserts, no host
synchronization in a training step, cuSOLVER, NCCL on one rank -- plus what only a GPU shows
(cupy's numerics, DLPack with cupy and torch).

Runs under pytest, or without it (a fresh GPU machine may have none):
``python tests/test_cuda_gpu.py [--out results.json]`` runs every test and prints PASS/FAIL/SKIP.
Long-running kernels (``_spin``) keep the GPU busy while the host is checked for waiting.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import ember

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import tiny_gpt  # noqa: E402

try:
    import pytest
except ImportError:   # the standalone runner below
    pytest = None


class Skip(Exception):
    pass


def skip(reason):
    if pytest is not None:
        pytest.skip(reason)
    raise Skip(reason)


class raises:  # noqa: N801 - pytest.raises' shape, without pytest
    def __init__(self, exc, match=None):
        self.exc, self.match = exc, match

    def __enter__(self):
        return self

    def __exit__(self, tp, value, tb):
        import re
        if tp is None:
            raise AssertionError(f"did not raise {self.exc.__name__}")
        if not issubclass(tp, self.exc):
            return False
        if self.match and not re.search(self.match, str(value)):
            raise AssertionError(f"{tp.__name__}: {value!r} does not match {self.match!r}")
        self.value = value
        return True


if pytest is not None:
    pytestmark = pytest.mark.skipif(not ember.cuda.is_available(),
                                    reason=f"needs a CUDA GPU: {ember.cuda.unavailable_reason()}")

SPIN = r"""
extern "C" __global__ void ember_spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
"""


def _spin(ms, stream=None):
    """Keep ``stream`` (an ember.cuda.Stream; the current one when None) busy for ``ms``."""
    import cupy
    s = stream if stream is not None else ember.cuda.current_stream()
    kernel = cupy.RawKernel(SPIN, "ember_spin")
    with s._stream:
        kernel((1,), (1,), (np.uint64(int(ms * 1e6)),))


def _torch_cuda():
    try:
        import torch
    except ImportError:
        skip("torch is not installed")
    if not torch.cuda.is_available():
        skip("torch has no CUDA here")
    return torch


# -- conformance, memory, DLPack ------------------------------------------------------------------
def test_conformance_on_the_gpu_with_no_cpu_fallback():
    if os.environ.get("EMBER_GPU_CHECK"):
        skip("bench/gpu_check.sh runs the conformance suite as its own stage")
    from ember_conformance.runner import run
    results = run("cuda", check_fd=False)
    failed = [r for r in results if r.status == "fail"]
    assert not failed, "\n".join(f"{r.name} {r.dtype}: {r.message[:300]}" for r in failed[:20])
    assert not any(r.fallback_ops for r in results)


def test_memory_statistics_follow_tensors():
    ember.cuda.synchronize()
    gc.collect()
    ember.cuda.empty_cache()
    base = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() >= base + (4 << 20)
    assert ember.cuda.max_memory_allocated() >= ember.cuda.memory_allocated()
    del x
    gc.collect()
    assert ember.cuda.memory_allocated() == base
    assert "Allocated memory" in ember.cuda.memory_summary()


def test_out_of_memory_names_the_device_and_sizes():
    free, total = ember.cuda.mem_get_info()
    with raises(ember.cuda.OutOfMemoryError, match=r"Tried to allocate .* GPU 0 has a total "
                                                   r"capacity"):
        ember.empty(2 * total, dtype=ember.uint8, device="cuda")


def test_embers_pool_serves_embers_memory_only():
    import cupy
    default = cupy.cuda.get_allocator()
    before = ember.cuda.memory_allocated()
    theirs = cupy.ones(1 << 20)
    assert ember.cuda.memory_allocated() == before and cupy.cuda.get_allocator() == default
    del theirs


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
    torch = _torch_cuda()
    x = torch.arange(4, device="cuda", dtype=torch.float32)
    t = ember.from_dlpack(x)
    x[0] = 9
    torch.cuda.synchronize()
    assert t.cpu().numpy()[0] == 9
    y = torch.from_dlpack(t)
    assert y.device.type == "cuda" and y[0].item() == 9


# -- dtypes: GEMMs on cuBLAS GemmEx ---------------------------------------------------------------
def test_half_precision_gemms_match_torch_in_every_layout():
    torch = _torch_cuda()
    rng = np.random.default_rng(0)
    for dtype, tol in (("float32", 1e-4), ("float16", 1e-2), ("bfloat16", 6e-2)):
        for shapes in (((64, 48), (48, 32)), ((3, 64, 48), (48, 32)), ((2, 1, 8, 5), (3, 5, 7)),
                       ((48,), (48, 32)), ((64, 48), (48,))):
            a0, b0 = (rng.standard_normal(s).astype(np.float32) for s in shapes)
            e = (ember.tensor(a0, device="cuda").to(getattr(ember, dtype)) @
                 ember.tensor(b0, device="cuda").to(getattr(ember, dtype)))
            t = (torch.tensor(a0, device="cuda").to(getattr(torch, dtype)) @
                 torch.tensor(b0, device="cuda").to(getattr(torch, dtype)))
            np.testing.assert_allclose(e.float().cpu().numpy(), t.float().cpu().numpy(),
                                       rtol=tol, atol=tol, err_msg=f"{dtype} {shapes}")
        a = ember.tensor(rng.standard_normal((64, 96)), device="cuda").to(getattr(ember, dtype))
        w = ember.tensor(rng.standard_normal((32, 96)), device="cuda").to(getattr(ember, dtype))
        ref = a.double().cpu().numpy() @ w.double().cpu().numpy().T
        np.testing.assert_allclose((a @ w.t()).double().cpu().numpy(), ref, rtol=tol * 4,
                                   atol=tol * 8)


def test_tf32_follows_the_matmul_precision_setting():
    rng = np.random.default_rng(1)
    a0, b0 = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    a, b = ember.tensor(a0, dtype=ember.float32, device="cuda"), \
        ember.tensor(b0, dtype=ember.float32, device="cuda")
    exact = a0.astype(np.float32).astype(np.float64) @ b0.astype(np.float32).astype(np.float64)
    full = np.abs((a @ b).cpu().numpy() - exact).max()
    try:
        ember.set_float32_matmul_precision("high")
        tf32 = np.abs((a @ b).cpu().numpy() - exact).max()
    finally:
        ember.set_float32_matmul_precision("highest")
    assert full < 1e-3 < tf32 < 0.5, (full, tf32)


def test_float16_convolution_forward_and_backward_match_torch():
    torch = _torch_cuda()
    rng = np.random.default_rng(2)
    x0, w0 = rng.standard_normal((4, 8, 16, 16)), rng.standard_normal((16, 8, 3, 3)) * 0.1
    ex = ember.tensor(x0, device="cuda").half().requires_grad_(True)
    ew = ember.tensor(w0, device="cuda").half().requires_grad_(True)
    ey = ember.nn.functional.conv2d(ex, ew, padding=1)
    ey.float().square().sum().backward()
    tx = torch.tensor(x0, device="cuda").half().requires_grad_(True)
    tw = torch.tensor(w0, device="cuda").half().requires_grad_(True)
    ty = torch.nn.functional.conv2d(tx, tw, padding=1)
    ty.float().square().sum().backward()
    for e, t in ((ey, ty), (ex.grad, tx.grad), (ew.grad, tw.grad)):
        np.testing.assert_allclose(e.detach().float().cpu().numpy(),
                                   t.detach().float().cpu().numpy(), rtol=2e-2, atol=5e-2)


def test_a_gpt_step_under_bfloat16_autocast_learns():
    step, _ = tiny_gpt.training_step(ember, "cuda", batch=4, ctx=32, vocab=64, dim=64, layers=2)

    def amp_step():
        with ember.autocast("cuda", dtype=ember.bfloat16):
            return step()
    losses = [amp_step().item() for _ in range(8)]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses


# -- host synchronizations and device asserts -------------------------------------------------------
def test_a_training_step_never_waits_for_the_gpu():
    step, _ = tiny_gpt.training_step(ember, "cuda", batch=4, ctx=32, vocab=64, dim=64, layers=2)
    step().item()
    step().item()                                  # warm: kernels compiled, tables uploaded
    ember.cuda.synchronize()
    count = ember.cuda.host_sync_count()
    _spin(2000)                                    # the GPU is busy for 2 s...
    t = time.perf_counter()
    loss = step()
    host = time.perf_counter() - t
    busy = not ember.cuda.current_stream().query()
    assert ember.cuda.host_sync_count() == count
    assert busy and host < 1.5, f"the step waited for the GPU ({host:.2f} s on the host)"
    assert np.isfinite(loss.item())


def test_value_checks_raise_at_the_next_synchronization_naming_the_op():
    x = ember.zeros(5, device="cuda")
    y = ember.index_select(x, 0, ember.tensor([1, 7], device="cuda"))   # no error yet
    with raises(IndexError, match=r"index_select: index 7 is out of bounds .*found on the "
                                  r"device by index_select"):
        y.cpu()
    with raises(IndexError, match="Target 5 is out of bounds"):
        ember.nn.functional.cross_entropy(ember.zeros(2, 3, device="cuda"),
                                          ember.tensor([0, 5], device="cuda"))
        ember.cuda.synchronize()
    assert ember.ones(2, device="cuda").sum().item() == 2.0   # reported once


# -- streams and memory -----------------------------------------------------------------------------
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


def test_new_streams_do_not_wait_for_the_default_stream():
    ember.cuda.synchronize()
    _spin(1000, ember.cuda.default_stream())
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        ember.ones(8, device="cuda").add_(1)
        done = ember.cuda.Event()
        done.record()
    time.sleep(0.2)
    overlapped = done.query()
    ember.cuda.synchronize()
    assert overlapped, "work on a new stream waited for the default stream (blocking stream)"


def test_record_stream_keeps_a_block_from_reuse_while_another_stream_uses_it():
    ember.cuda.synchronize()
    side = ember.cuda.Stream()
    x = ember.full((1 << 18,), 3.0, device="cuda")
    side.wait_stream(ember.cuda.current_stream())
    _spin(1000, side)
    with ember.cuda.stream(side):
        y = x * 2                                   # runs after the spin
    x.record_stream(side)
    from ember.runtime import registry
    be = registry.get("cuda")
    address = be.native(x).data.ptr
    del x
    gc.collect()
    z = ember.empty(1 << 18, device="cuda")         # same size, same stream as x
    assert be.native(z).data.ptr != address, "x's block was reused under the side stream"
    z.fill_(5.0)
    ember.cuda.current_stream().wait_stream(side)
    assert float(y.sum().item()) == 6.0 * (1 << 18)


def test_pinned_blocks_wait_for_their_copies():
    ember.cuda.synchronize()
    g = ember.full((1 << 16,), 7.0, device="cuda")
    _spin(1000)
    h = g.to("cpu", non_blocking=True)              # queued behind the spin
    address = h.numpy().ctypes.data
    del h
    gc.collect()
    fresh = ember.ones(1 << 16).pin_memory()
    assert fresh.numpy().ctypes.data != address
    ember.cuda.synchronize()
    assert fresh.numpy().min() == 1.0


def test_pinned_non_blocking_round_trip():
    p = ember.arange(1000.).pin_memory()
    assert p.is_pinned()
    g = p.to("cuda", non_blocking=True)
    back = g.to("cpu", non_blocking=True)
    ember.cuda.synchronize()
    np.testing.assert_array_equal(back.numpy(), np.arange(1000.))


def test_copies_between_two_gpus():
    if ember.cuda.device_count() < 2:
        skip("one GPU")
    x = ember.arange(12., device="cuda:0").reshape(3, 4).t()
    y = x.to("cuda:1")
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(12.).reshape(3, 4).T)
    z = ember.zeros(4, 3, device="cuda:1", dtype=ember.float64)
    z.copy_(x * 2)
    np.testing.assert_array_equal(z.cpu().numpy(), np.arange(12.).reshape(3, 4).T * 2)


# -- cuSOLVER, determinism, random numbers ---------------------------------------------------------
def test_decompositions_on_cusolver_match_numpy():
    L = ember.linalg
    rng = np.random.default_rng(3)
    a0 = rng.standard_normal((3, 6, 6))
    s0 = a0 @ np.swapaxes(a0, -1, -2) + 6 * np.eye(6)
    b0 = rng.standard_normal((3, 6, 2))
    a, s, b = (ember.tensor(v, device="cuda") for v in (a0, s0, b0))
    np.testing.assert_allclose(L.cholesky(s).cpu().numpy(), np.linalg.cholesky(s0), atol=1e-10)
    np.testing.assert_allclose(L.det(a).cpu().numpy(), np.linalg.det(a0), rtol=1e-9)
    np.testing.assert_allclose(L.solve(a, b).cpu().numpy(), np.linalg.solve(a0, b0), atol=1e-9)
    np.testing.assert_allclose(L.inv(a).cpu().numpy(), np.linalg.inv(a0), atol=1e-9)
    q, r = L.qr(a)
    np.testing.assert_allclose((q @ r).cpu().numpy(), a0, atol=1e-10)
    np.testing.assert_allclose(L.eigvalsh(s).cpu().numpy(), np.linalg.eigvalsh(s0), atol=1e-9)
    np.testing.assert_allclose(L.svdvals(a).cpu().numpy(), np.linalg.svd(a0, compute_uv=False),
                               atol=1e-9)
    sing = ember.tensor([[[1.0, 2.0], [2.0, 4.0]], [[4.0, 0.0], [0.0, -1.0]]], device="cuda")
    assert L.lu_factor_ex(sing)[2].cpu().tolist() == [2, 0]
    assert L.cholesky_ex(sing)[1].cpu().tolist()[1] == 2


def test_deterministic_mode_gives_the_same_sums_every_run():
    rng = np.random.default_rng(4)
    idx = ember.tensor(rng.integers(0, 4, 100_000), device="cuda")
    vals = ember.tensor(rng.standard_normal((100_000, 8)).astype(np.float32), device="cuda")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    ember.use_deterministic_algorithms(True)
    try:
        runs = [ember.zeros(4, 8, device="cuda").index_add(0, idx, vals).cpu().numpy()
                for _ in range(3)]
        w = ember.randn(10, 8, device="cuda", requires_grad=True)
        grads = []
        for _ in range(2):
            w.grad = None
            ember.nn.functional.embedding_bag(idx[:1000] % 10, w,
                                              ember.tensor([0, 300], device="cuda")
                                              ).pow(2).sum().backward()
            grads.append(w.grad.cpu().numpy())
    finally:
        ember.use_deterministic_algorithms(False)
    assert all((r == runs[0]).all() for r in runs)
    assert (grads[0] == grads[1]).all()


def test_randperm_is_a_permutation_and_follows_the_seed():
    ember.manual_seed(5)
    a = ember.randperm(100_000, device="cuda").cpu().numpy()
    ember.manual_seed(5)
    b = ember.randperm(100_000, device="cuda").cpu().numpy()
    assert (np.sort(a) == np.arange(100_000)).all() and (a == b).all()


def test_random_numbers_equal_the_opencl_backends():
    if not ember.opencl.is_available():
        skip("no OpenCL device to compare with")
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


# -- NCCL on one GPU -----------------------------------------------------------------------------------
def _nccl_group(timeout=60):
    from datetime import timedelta

    from ember.distributed.backend import BackendContext
    from ember.runtime import registry
    from ember_cuda.nccl import ProcessGroupNCCL
    be = registry.get("cuda")
    try:
        nccl = be._api.nccl_module()
    except RuntimeError as e:
        skip(str(e))
    ctx = BackendContext("gpu-test", 0, 1, [0], timedelta(seconds=timeout), ["cuda"])
    return ProcessGroupNCCL(ctx, be, nccl)


def test_nccl_one_rank_collectives_queue_on_their_own_stream():
    from ember.distributed._types import RedOpType
    pg = _nccl_group()
    try:
        assert pg._stream.ptr != ember.cuda.current_stream().cuda_stream
        x = ember.arange(1 << 20, device="cuda", dtype=ember.float32)
        ember.cuda.synchronize()
        _spin(1000)                                # the producer stream is busy...
        t = time.perf_counter()
        work = pg.allreduce(x, RedOpType.SUM)
        work.wait()                                # ...and wait() only orders streams
        assert time.perf_counter() - t < 0.8
        assert x[-1].item() == float((1 << 20) - 1)
        out = ember.empty(1 << 20, device="cuda")
        pg.allgather_into(out, x).wait()
        assert (out == x).all().item()
        b = ember.full((4,), 2.0, device="cuda", dtype=ember.bfloat16)
        pg.allreduce(b, RedOpType.SUM).wait()
        assert b.float().cpu().tolist() == [2.0] * 4
        pg.check()                                 # the watchdog's round: nothing wrong
        assert pg._error is None
    finally:
        pg.shutdown()


# -- the standalone runner --------------------------------------------------------------------------
def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(description="run the GPU tests without pytest")
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("-k", dest="pattern", help="run only tests whose name contains this")
    args = p.parse_args(argv)
    if not ember.cuda.is_available():
        print(f"no GPU: {ember.cuda.unavailable_reason()}")
        return 3
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)
             and (not args.pattern or args.pattern in n)]
    results = []
    for name, fn in tests:
        t = time.perf_counter()
        try:
            fn()
            status, detail = "PASS", ""
        except Skip as e:
            status, detail = "SKIP", str(e)
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            status, detail = "FAIL", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        secs = time.perf_counter() - t
        results.append({"test": name, "status": status, "seconds": round(secs, 2),
                        "detail": detail})
        print(f"{status:4} {name} ({secs:.1f} s){': ' + detail.splitlines()[0] if detail else ''}",
              flush=True)
    failed = sum(r["status"] == "FAIL" for r in results)
    print(f"{len(results)} tests: {sum(r['status'] == 'PASS' for r in results)} passed, "
          f"{failed} failed, {sum(r['status'] == 'SKIP' for r in results)} skipped")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
