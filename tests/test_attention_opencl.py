"""OpenCL's flash-attention kernels (forward, dQ and dK/dV backward) against the CPU: every mask
kind, causal with L = S, L < S and L > S, grouped-query attention, strided operands, shapes
spanning several work-group tiles, float32 and float64."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.attention import SDPBackend, last_sdpa_backend, sdpa_kernel
from ember.testing import assert_close

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
HAS_FP64 = ember.opencl.is_available() and ember.float64 in ember.opencl._backend.dtypes
RNG = np.random.default_rng(11)

# tiles are 32 rows: 70 queries and 45 keys make full and partial tiles on both sides
CASES = [
    ("plain", (2, 3, 70, 8), (2, 3, 45, 8), (2, 3, 45, 6), None, {}),
    ("causal-square", (1, 2, 70, 16), (1, 2, 70, 16), (1, 2, 70, 16), None, {"is_causal": True}),
    ("causal-L<S", (1, 2, 33, 8), (1, 2, 70, 8), (1, 2, 70, 8), None, {"is_causal": True}),
    ("causal-L>S", (1, 2, 70, 8), (1, 2, 33, 8), (1, 2, 33, 8), None, {"is_causal": True}),
    ("bool-mask-empty-rows", (2, 2, 40, 8), (2, 2, 35, 8), (2, 2, 35, 8), "bool", {}),
    ("float-mask-inf", (2, 2, 40, 8), (2, 2, 35, 8), (2, 2, 35, 8), "float", {}),
    ("gqa-causal-scale", (2, 6, 40, 16), (2, 2, 40, 16), (2, 2, 40, 16), None,
     {"enable_gqa": True, "is_causal": True, "scale": 0.3}),
    ("3d-broadcast", (3, 20, 8), (20, 8), (3, 20, 8), None, {}),
]


def _mask(kind, L, S, dtype):
    if kind == "bool":
        m = RNG.random((2, 1, L, S)) > 0.4
        m[..., 3, :] = False
        return m
    m = RNG.uniform(-1, 1, (1, 2, L, S)).astype(dtype)
    m[..., 5] = -np.inf
    return m


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_flash_kernels_match_the_cpu(case, dtype):
    if dtype == np.float64 and not HAS_FP64:
        pytest.skip("no fp64 on this OpenCL device")
    _, qs, ks, vs, mask, kw = case
    arrays = [RNG.standard_normal(s).astype(dtype) for s in (qs, ks, vs)]
    m = None if mask is None else _mask(mask, qs[-2], ks[-2], dtype)
    results = {}
    for dev in ("cpu", "opencl"):
        ts = [ember.tensor(a, device=dev, requires_grad=True) for a in arrays]
        mt = None if m is None else ember.tensor(m, device=dev)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(*ts, attn_mask=mt, **kw)
        assert last_sdpa_backend() is SDPBackend.FLASH_ATTENTION
        g = ember.tensor(np.random.default_rng(5).standard_normal(tuple(out.shape)).astype(dtype),
                         device=dev)
        results[dev] = [out] + list(ember.autograd.grad(out, ts, g))
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-10)
    for got, want in zip(results["opencl"], results["cpu"]):
        assert got.device.type == "opencl"
        assert_close(got.cpu(), want.detach(), **tol)


def test_strided_operands_and_the_logsumexp():
    """(batch, seq, heads, dim) views as multi-head code passes them, no copies."""
    from ember.ops.attention import fused_backward_op, fused_op
    arrays = [RNG.standard_normal((2, 37, 4, 8)).astype(np.float32) for _ in range(3)]
    g = RNG.standard_normal((2, 4, 37, 8)).astype(np.float32)
    got = {}
    for dev in ("cpu", "opencl"):
        q, k, v = (ember.tensor(a, device=dev).transpose(1, 2) for a in arrays)
        out, lse = fused_op(q, k, v, None, False, 0.4)
        grads = fused_backward_op(ember.tensor(g, device=dev), q, k, v, None, out, lse, False,
                                  0.4)
        got[dev] = [out, lse, *grads]
    for a, b in zip(got["opencl"], got["cpu"]):
        assert_close(a.cpu(), b, rtol=2e-4, atol=2e-5)


def test_head_dims_beyond_the_kernels_take_the_math_path():
    q = ember.randn(1, 1, 4, 300, device="opencl")
    out = F.scaled_dot_product_attention(q, q, q)
    assert last_sdpa_backend() is SDPBackend.MATH
    assert_close(out.cpu(), F.scaled_dot_product_attention(q.cpu(), q.cpu(), q.cpu()),
                 rtol=1e-4, atol=1e-5)


def test_dropout_runs_on_the_device():
    q = ember.randn(2, 2, 16, 8, device="opencl")
    ember.manual_seed(1)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    ember.manual_seed(1)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert a.device.type == "opencl" and last_sdpa_backend() is SDPBackend.MATH
    assert_close(a, b)
