"""``use_deterministic_algorithms`` on the CUDA backend, on the simulated GPU (which refuses
cupy's floating-point atomics while the mode is on): every kernel that accumulates with atomics
takes the ordered path instead, cuBLAS products alert without a fixed workspace configuration
(PyTorch's rule), and the ordered accumulation stays parallel for a hot index."""
from __future__ import annotations

import numpy as np
import pytest

import ember

from helpers_cuda import require_simulator, simulated_backend

require_simulator()

DEV = "simdet"
F = ember.nn.functional


@pytest.fixture(scope="module")
def be():
    with simulated_backend(DEV, 1) as backend:
        yield backend


@pytest.fixture
def deterministic(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    ember.use_deterministic_algorithms(True)
    yield
    ember.use_deterministic_algorithms(False)


def _grads(device):
    """Gradients of ops whose backward accumulates into shared positions."""
    rng = np.random.default_rng(0)
    out = {}
    w = ember.tensor(rng.standard_normal((10, 4)), device=device, requires_grad=True)
    idx = ember.tensor(rng.integers(0, 10, 40), device=device)
    off = ember.tensor([0, 7, 19, 30], device=device)
    F.embedding_bag(idx, w, off, mode="sum").pow(2).sum().backward()
    out["embedding_bag"] = w.grad
    x = ember.tensor(rng.standard_normal((2, 3, 9, 9)), device=device, requires_grad=True)
    F.max_pool2d(x, 3, stride=2).pow(2).sum().backward()     # overlapping windows
    out["max_pool2d"] = x.grad
    g = ember.tensor(rng.uniform(-1, 1, (2, 5, 5, 2)), device=device)
    y = ember.tensor(rng.standard_normal((2, 3, 6, 6)), device=device, requires_grad=True)
    F.grid_sample(y, g, align_corners=False).pow(2).sum().backward()
    out["grid_sample"] = y.grad
    lp = ember.tensor(rng.standard_normal((12, 2, 5)), device=device).log_softmax(2)
    lp.requires_grad_(True)
    F.ctc_loss(lp, ember.tensor([[1, 2, 2], [3, 1, 4]], device=device),
               ember.tensor([12, 10], device=device), ember.tensor([3, 2], device=device)
               ).backward()
    out["ctc_loss"] = lp.grad
    return {k: v.cpu().numpy() for k, v in out.items()}


def test_the_simulator_refuses_atomics_in_deterministic_mode(be, deterministic):
    xp = be._api.xp
    with pytest.raises(RuntimeError, match="atomics"):
        xp.add.at(xp.zeros(3), xp.asarray(np.array([0, 0])), 1.0)


def test_accumulating_backward_passes_take_the_ordered_path(be, deterministic):
    first, second, cpu = _grads(DEV), _grads(DEV), _grads("cpu")
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
        np.testing.assert_allclose(first[name], cpu[name], rtol=1e-6, atol=1e-6,
                                   err_msg=name)


def test_without_the_mode_the_backward_passes_use_cupys_atomics(be):
    calls = []
    real = be._api.xp.add.at

    def spy(*args):
        calls.append(args[0].dtype)
        return real(*args)
    be._api.xp.add.__dict__["at"] = spy
    try:
        _grads(DEV)
    finally:
        del be._api.xp.add.__dict__["at"]
    assert any(d.kind == "f" for d in calls)


def test_cublas_products_alert_unless_the_workspace_is_fixed(be, monkeypatch):
    a = ember.ones(4, 4, device=DEV)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    try:
        ember.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError, match="CUBLAS_WORKSPACE_CONFIG"):
            a @ a
        ember.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="cuBLAS"):
            a @ a
        monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
        ember.use_deterministic_algorithms(True)
        assert (a @ a).cpu().tolist() == [[4.0] * 4] * 4
    finally:
        ember.use_deterministic_algorithms(False)


def test_a_hot_index_accumulates_in_parallel_pieces_deterministically(be):
    rng = np.random.default_rng(3)
    idx = np.where(rng.random(5000) < 0.9, 2, rng.integers(0, 6, 5000))   # a padding-like hot row
    vals = rng.standard_normal((5000, 3)).astype(np.float32)
    runs = [ember.zeros(6, 3, device=DEV).index_add(0, ember.tensor(idx, device=DEV),
                                                    ember.tensor(vals, device=DEV)).cpu().numpy()
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0], runs[1])
    want = np.zeros((6, 3))
    np.add.at(want, idx, vals.astype(np.float64))
    np.testing.assert_allclose(runs[0], want, rtol=1e-5, atol=1e-4)
    prog = be._programs["ordered"].module
    assert prog.get_function("ordered_add_f4_pieces").launches >= 2
