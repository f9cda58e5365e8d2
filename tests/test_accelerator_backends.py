"""ember.backends switches and deterministic-algorithms mode."""
from __future__ import annotations

import math
import warnings

import pytest

import ember
from ember.runtime import alert_not_deterministic


@pytest.fixture(autouse=True)
def _restore():
    cudnn = ember.backends.cudnn
    saved = (cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.allow_tf32,
             ember.get_float32_matmul_precision(), ember.are_deterministic_algorithms_enabled(),
             ember.is_deterministic_algorithms_warn_only_enabled(),
             ember.utils.deterministic.fill_uninitialized_memory)
    yield
    cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.allow_tf32 = saved[:4]
    ember.set_float32_matmul_precision(saved[4])
    ember.use_deterministic_algorithms(saved[5], warn_only=saved[6])
    ember.utils.deterministic.fill_uninitialized_memory = saved[7]


def test_cudnn_flags_are_kept_checked_and_documented():
    cudnn = ember.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == \
        (True, False, False, True)
    cudnn.benchmark = True
    cudnn.deterministic = True
    assert cudnn.benchmark and cudnn.deterministic
    with pytest.raises(RuntimeError, match="set_benchmark_cudnn expects a bool, but got int"):
        cudnn.benchmark = 3
    with cudnn.flags(enabled=False, deterministic=False):
        assert (cudnn.enabled, cudnn.deterministic) == (False, False)
    assert (cudnn.enabled, cudnn.deterministic) == (True, True)
    assert cudnn.is_available() is False and cudnn.version() is None
    for flag in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert "No effect" in getattr(type(cudnn), flag).__doc__


def test_matmul_precision_and_allow_tf32_are_one_setting():
    assert ember.get_float32_matmul_precision() == "highest"
    assert ember.backends.cuda.matmul.allow_tf32 is False
    ember.backends.cuda.matmul.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "high"
    ember.set_float32_matmul_precision("medium")
    assert ember.backends.cuda.matmul.allow_tf32 is True
    ember.set_float32_matmul_precision("highest")
    assert ember.backends.cuda.matmul.allow_tf32 is False
    with pytest.warns(UserWarning, match="foo is not one of 'highest', 'high', or 'medium'"):
        ember.set_float32_matmul_precision("foo")
    assert ember.get_float32_matmul_precision() == "highest"
    with pytest.raises(AttributeError, match="Unknown attribute"):
        ember.backends.cuda.matmul.allow_tf33 = True
    # no effect on the CPU: float32 products are exact float32 either way
    a = ember.randn(8, 8)
    ember.set_float32_matmul_precision("medium")
    lo = a @ a
    ember.set_float32_matmul_precision("highest")
    assert ember.equal(lo, a @ a)


def test_other_entries():
    B = ember.backends
    assert B.mps.is_available() is False and B.mps.is_built() is False
    assert B.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT", "ZVECTOR", "VSX",
                                          "SVE256")
    assert B.mkldnn.is_available() is False and B.openmp.is_available() is False
    assert B.cuda.is_built() == ember._registry.is_known("cuda")
    assert B.opencl.is_available() == ember.opencl.is_available()
    if B.opencl.is_available():
        assert ember.float32 in B.opencl.supported_dtypes()


def test_cpu_capability_matches_torch():
    torch = pytest.importorskip("torch")
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()


def test_deterministic_mode_api_like_torch():
    assert ember.are_deterministic_algorithms_enabled() is False
    ember.use_deterministic_algorithms(True)
    assert ember.are_deterministic_algorithms_enabled() is True
    assert ember.get_deterministic_debug_mode() == 2
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.is_deterministic_algorithms_warn_only_enabled() is True
    assert ember.get_deterministic_debug_mode() == 1
    ember.set_deterministic_debug_mode("default")
    assert not ember.are_deterministic_algorithms_enabled()
    ember.set_deterministic_debug_mode(2)
    assert ember.are_deterministic_algorithms_enabled()
    with pytest.raises(TypeError, match="argument 'mode' .* must be bool, not int"):
        ember.use_deterministic_algorithms(1)
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`, but "
                                           "got loud"):
        ember.set_deterministic_debug_mode("loud")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
        ember.set_deterministic_debug_mode(3)


def test_alert_not_deterministic_is_what_kernels_call():
    alert_not_deterministic("index_add_ on toy")  # off: nothing
    ember.use_deterministic_algorithms(True)
    with pytest.raises(RuntimeError, match="index_add_ on toy does not have a deterministic "
                                           "implementation, but you set "
                                           r"'ember.use_deterministic_algorithms\(True\)'"):
        alert_not_deterministic("index_add_ on toy")
    ember.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="warn_only=True"):
        alert_not_deterministic("index_add_ on toy")


def test_uninitialized_memory_is_filled_in_deterministic_mode():
    ember.use_deterministic_algorithms(True)
    assert all(math.isnan(v) for v in ember.empty(4).tolist())
    assert ember.empty(3, dtype=ember.int16).tolist() == [32767] * 3
    assert ember.empty(2, dtype=ember.uint8).tolist() == [255] * 2
    assert ember.empty(2, dtype=ember.bool).tolist() == [True, True]
    assert all(math.isnan(v) for v in ember.ones(3).new_empty(2).tolist())
    assert all(math.isnan(v) for v in ember.empty_like(ember.ones(3)).tolist())
    ember.utils.deterministic.fill_uninitialized_memory = False
    ember.empty(4)  # not filled any more (contents unspecified)
    with pytest.raises(TypeError):
        ember.utils.deterministic.fill_uninitialized_memory = 1


def test_builtin_kernels_have_no_nondeterministic_path():
    """index_add / index_put(accumulate) with colliding indices: the same bits every run, and
    deterministic mode never refuses them (CPU and OpenCL)."""
    ember.use_deterministic_algorithms(True)
    devices = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
    ember.manual_seed(0)
    src = ember.randn(2000, 3)
    idx = ember.randint(0, 5, (2000,))
    for dev in devices:
        runs = {tuple(ember.zeros(5, 3, device=dev).index_add_(0, idx.to(dev), src.to(dev))
                      .cpu().flatten().tolist()) for _ in range(3)}
        assert len(runs) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ember.zeros(5, 3, device=dev).index_put_((idx.to(dev),), src.to(dev),
                                                     accumulate=True)
