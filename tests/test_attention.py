"""F.scaled_dot_product_attention: the math path and the fused CPU kernel against a numpy
reference, finite differences and (when installed) torch; the choice of implementation
(ember.nn.attention); bad input; dropout; the blocked kernel's tiling and memory."""
import math
import tracemalloc
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.kit import attention as kit_attention
from ember.nn.attention import SDPBackend, last_sdpa_backend, sdpa_backend_for, sdpa_kernel
from ember.testing import assert_close

BACKENDS = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]
RNG = np.random.default_rng(7)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def reference(q, k, v, mask=None, is_causal=False, scale=None, enable_gqa=False):
    """numpy: softmax(q k^T * scale + mask) v, rows with no key -> 0 (torch's safe softmax)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    scale = (1 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0) if scale is None else scale
    if enable_gqa and q.ndim >= 3:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if is_causal:
        mask = np.tril(np.ones((L, S), bool))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    if not S:
        return np.zeros(s.shape[:-1] + v.shape[-1:])
    empty = np.all(s == -np.inf, axis=-1, keepdims=True)
    s = np.where(empty, 0, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = np.where(empty, 0, p / p.sum(-1, keepdims=True))
    return p @ v


def empty_rows_mask(shape):
    m = RNG.random(shape) > 0.3
    m[..., 1, :] = False
    return m


# (id, q, k, v shapes, mask maker or None, kwargs)
CASES = [
    ("plain", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), None, {}),
    ("bool-mask-LS", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), lambda: RNG.random((5, 7)) > 0.4,
     {}),
    ("bool-mask-empty-rows", (2, 2, 4, 8), (2, 2, 6, 8), (2, 2, 6, 8),
     lambda: empty_rows_mask((2, 1, 4, 6)), {}),
    ("float-mask-heads", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), lambda: randn(3, 1, 7), {}),
    ("causal-square", (2, 2, 9, 8), (2, 2, 9, 8), (2, 2, 9, 8), None, {"is_causal": True}),
    ("causal-L<S", (1, 2, 4, 8), (1, 2, 9, 8), (1, 2, 9, 8), None, {"is_causal": True}),
    ("causal-L>S", (1, 2, 9, 8), (1, 2, 4, 8), (1, 2, 4, 8), None, {"is_causal": True}),
    ("gqa", (2, 6, 5, 8), (2, 2, 7, 8), (2, 2, 7, 4), None, {"enable_gqa": True}),
    ("gqa-causal-scale", (1, 4, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), None,
     {"enable_gqa": True, "is_causal": True, "scale": 0.2}),
    ("2d", (5, 8), (7, 8), (7, 3), None, {}),
    ("3d-broadcast-k", (3, 5, 8), (7, 8), (3, 7, 8), None, {"scale": -0.4}),
    ("5d-broadcast", (2, 2, 3, 4, 8), (1, 2, 3, 5, 8), (2, 1, 3, 5, 8),
     lambda: RNG.random((3, 4, 5)) > 0.3, {}),
]
IDS = [c[0] for c in CASES]


def make(case, dtype=np.float32, device="cpu", requires_grad=False):
    _, qs, ks, vs, mask, kw = case
    arrays = [randn(*s, dtype=dtype) for s in (qs, ks, vs)]
    m = None if mask is None else mask()
    if m is not None and m.dtype != bool:
        m = m.astype(dtype)
    tensors = [ember.tensor(a, device=device, requires_grad=requires_grad) for a in arrays]
    mt = None if m is None else ember.tensor(m, device=device)
    return arrays, m, tensors, mt, kw


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_numpy(case, backend):
    arrays, m, (q, k, v), mt, kw = make(case)
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mt, **kw)
    assert last_sdpa_backend() is backend
    expected = reference(*arrays, mask=m, **kw)
    assert out.shape == expected.shape and out.dtype is ember.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fused_gradients_match_the_math_path(case):
    _, m, tensors, mt, kw = make(case, np.float64, requires_grad=True)
    results = []
    for backend in BACKENDS:
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(*tensors, attn_mask=mt, **kw)
        g = ember.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))
        results.append([out] + list(ember.autograd.grad(out, tensors, g)))
    for fused, math_ in zip(results[1], results[0]):
        assert_close(fused, math_, rtol=1e-10, atol=1e-10)


# small enough for finite differences of second order
GRAD_CASES = [
    ("bool-mask-empty-rows", (1, 2, 3, 3), (1, 2, 4, 3), (1, 2, 4, 2),
     lambda: empty_rows_mask((1, 1, 3, 4)), {}),
    ("float-mask", (1, 2, 3, 3), (1, 2, 4, 3), (1, 2, 4, 2), lambda: randn(2, 1, 4), {}),
    ("causal-L<S", (1, 1, 3, 3), (1, 1, 5, 3), (1, 1, 5, 2), None, {"is_causal": True}),
    ("causal-L>S", (1, 1, 5, 3), (1, 1, 3, 3), (1, 1, 3, 2), None, {"is_causal": True}),
    ("gqa-causal-scale", (1, 4, 3, 3), (1, 2, 3, 3), (1, 2, 3, 2), None,
     {"enable_gqa": True, "is_causal": True, "scale": 0.7}),
    ("3d-broadcast-k", (2, 3, 3), (4, 3), (2, 4, 2), None, {"scale": -0.4}),
]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c[0])
def test_gradcheck_and_gradgradcheck(case, backend):
    _, _, tensors, mt, kw = make(case, np.float64, requires_grad=True)
    if mt is not None and mt.is_floating_point():
        mt.requires_grad_(True)  # the mask's gradient too (the math path gives it)
        tensors.append(mt)

    def f(*xs):
        return F.scaled_dot_product_attention(*xs[:3], attn_mask=xs[3] if len(xs) > 3 else mt,
                                              **kw)
    with sdpa_kernel([backend, SDPBackend.MATH] if mt is not None and mt.requires_grad
                     else backend):
        assert ember.autograd.gradcheck(f, tuple(tensors))
        # double backward: the fused backward op's composite is the math formula
        assert ember.autograd.gradgradcheck(f, tuple(tensors[:3]))


def test_fused_path_records_one_node_and_saves_logsumexp():
    q, k, v = (ember.tensor(randn(2, 3, 4, 8), requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v)
    assert last_sdpa_backend() is SDPBackend.FLASH_ATTENTION
    node = out.grad_fn
    assert node.name() == "ScaledDotProductFusedAttentionBackward0"
    _, lse = node.result
    assert lse.shape == (2, 3, 4) and lse.dtype is ember.float32
    s = (q @ k.transpose(-1, -2)).detach().numpy() / math.sqrt(8)
    np.testing.assert_allclose(lse.detach().numpy(), np.log(np.exp(s).sum(-1)), rtol=1e-5)


# -- torch (optional) ----------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_torch(case, backend):
    torch = pytest.importorskip("torch")
    arrays, m, tensors, mt, kw = make(case, requires_grad=True)
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    tm = None if m is None else torch.tensor(m)
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(*tensors, attn_mask=mt, **kw)
    expected = torch.nn.functional.scaled_dot_product_attention(*tt, attn_mask=tm, **kw)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    g = randn(*out.shape)
    got = ember.autograd.grad(out, tensors, ember.tensor(g))
    want = torch.autograd.grad(expected, tt, torch.tensor(g))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_float_mask_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    arrays = [randn(2, 2, 4, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)]
    mask = randn(2, 1, 4, 5)
    em = ember.tensor(mask, requires_grad=True)
    tm = torch.tensor(mask, requires_grad=True)
    out = F.scaled_dot_product_attention(*[ember.tensor(a) for a in arrays], attn_mask=em)
    assert last_sdpa_backend() is SDPBackend.MATH  # the fused kernels give masks no gradient
    torch.nn.functional.scaled_dot_product_attention(
        *[torch.tensor(a) for a in arrays], attn_mask=tm).sum().backward()
    out.sum().backward()
    np.testing.assert_allclose(em.grad.numpy(), tm.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shapes", [((2, 3, 4, 0), (2, 3, 5, 0), (2, 3, 5, 8)),
                                    ((2, 3, 4, 8), (2, 3, 0, 8), (2, 3, 0, 8)),
                                    ((2, 3, 0, 8), (2, 3, 5, 8), (2, 3, 5, 8)),
                                    ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 0))],
                         ids=["E=0", "S=0", "L=0", "Ev=0"])
@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_empty_sizes(shapes, backend):
    arrays = [randn(*s) for s in shapes]
    tensors = [ember.tensor(a, requires_grad=True) for a in arrays]
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(*tensors)
    assert out.shape == shapes[0][:-1] + shapes[2][-1:]
    if out.numel():  # E = 0: every score 0, a plain mean of v; S = 0: no key, zeros
        np.testing.assert_allclose(out.detach().numpy(), reference(*arrays), atol=1e-6)
    out.sum().backward()
    for t in tensors:
        assert t.grad.shape == t.shape and np.isfinite(t.grad.numpy()).all()


# -- bad input --------------------------------------------------------------------------------------
def _bad(query=(2, 3, 5, 8), key=(2, 3, 7, 8), value=(2, 3, 7, 8), **kw):
    return [ember.tensor(randn(*s)) if isinstance(s, tuple) else s for s in (query, key, value)], kw


@pytest.mark.parametrize("args,error,match", [
    (_bad(key=(2, 3, 7, 6)), RuntimeError,
     r"same embedding dim .* query.size\(-1\): 8 and key.size\(-1\): 6 \(query \[2, 3, 5, 8\], "
     r"key \[2, 3, 7, 6\]"),
    (_bad(value=(2, 3, 6, 8)), RuntimeError, r"key.size\(-2\): 7 and value.size\(-2\): 6"),
    (_bad(key=(3, 3, 7, 8), value=(3, 3, 7, 8)), RuntimeError,
     r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton "
     r"dimension 0 .*query \[2, 3, 5, 8\]"),
    (_bad(attn_mask=ember.ones(5, 5, dtype=ember.bool)), RuntimeError,
     r"attn_mask of shape \[5, 5\] doesn't broadcast to the attention weights' shape "
     r"\[2, 3, 5, 7\]"),
    (_bad(attn_mask=ember.ones(1, 2, 3, 5, 7)), RuntimeError, r"attn_mask of shape"),
    (_bad(attn_mask=ember.ones(7)), IndexError, r"an attn_mask of at least 2 dims \(\.\.\., L, "
                                                r"S\), got shape \[7\]"),
    (_bad(attn_mask=ember.ones(5, 7), is_causal=True), RuntimeError,
     r"Explicit attn_mask should not be set when is_causal=True"),
    (_bad(query=(2, 4, 5, 8), enable_gqa=True), RuntimeError,
     r"Number of heads in key and value must divide the number of heads in query"),
    (_bad(attn_mask=ember.ones(5, 7, dtype=ember.int64)), RuntimeError,
     r"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
     r"attn_mask.dtype: long int and  query.dtype: float instead."),
    (_bad(query=(8,), key=(8,), value=(8,)), RuntimeError,
     r"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1"),
    (_bad(query=[1.0]), TypeError, r"argument 'query' \(position 1\) must be Tensor, not list"),
    (_bad(dropout_p=1.5), RuntimeError, r"dropout probability has to be between 0 and 1, but "
                                        r"got 1.5"),
], ids=["head-dims", "kv-lengths", "batch", "mask-LS", "mask-5d", "mask-1d", "causal+mask",
        "gqa", "mask-dtype", "1d", "not-a-tensor", "dropout"])
def test_bad_input_errors(args, error, match):
    (q, k, v), kw = args
    with pytest.raises(error, match=match):
        F.scaled_dot_product_attention(q, k, v, **kw)


def test_dtype_errors_name_the_dtypes():
    q = ember.tensor(randn(2, 4, 8))
    with pytest.raises(RuntimeError, match=r"same dtype, but got query.dtype: float key.dtype: "
                                           r"double and value.dtype: float instead"):
        F.scaled_dot_product_attention(q, q.double(), q)
    qi = ember.ones(2, 4, 8, dtype=ember.int64)
    with pytest.raises(RuntimeError, match=r"floating point, but got long int"):
        F.scaled_dot_product_attention(qi, qi, qi)


def test_bad_input_errors_match_torch_types():
    torch = pytest.importorskip("torch")
    q, k = randn(2, 3, 5, 8), randn(2, 3, 7, 6)
    with pytest.raises(RuntimeError):
        torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k),
                                                         torch.tensor(k))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        from torch.nn.attention import SDPBackend as TB, sdpa_kernel as tk
        with tk(TB.MATH):
            torch.nn.functional.scaled_dot_product_attention(
                torch.tensor(q), torch.tensor(q), torch.tensor(q),
                attn_mask=torch.ones(5, 5), is_causal=True)


# -- choosing the implementation ---------------------------------------------------------------------
def test_sdpa_kernel_selects_restores_and_orders():
    q = ember.tensor(randn(1, 2, 4, 8))
    F.scaled_dot_product_attention(q, q, q)
    assert last_sdpa_backend() is SDPBackend.FLASH_ATTENTION  # the default priority
    with sdpa_kernel(SDPBackend.MATH):
        assert sdpa_backend_for(q, q, q) is SDPBackend.MATH
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            assert sdpa_backend_for(q, q, q) is SDPBackend.FLASH_ATTENTION
        assert sdpa_backend_for(q, q, q) is SDPBackend.MATH
    assert sdpa_backend_for(q, q, q) is SDPBackend.FLASH_ATTENTION
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION], set_priority=True):
        assert sdpa_backend_for(q, q, q) is SDPBackend.MATH
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        assert sdpa_backend_for(q, q, q) is SDPBackend.FLASH_ATTENTION
    # needs the math path: dropout
    assert sdpa_backend_for(q, q, q, dropout_p=0.1) is SDPBackend.MATH
    assert str(SDPBackend.MATH) == "SDPBackend.MATH" and int(SDPBackend.FLASH_ATTENTION) == 1


def test_sdpa_kernel_without_a_usable_backend_warns_why_and_raises():
    q = ember.tensor(randn(1, 2, 4, 8))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with pytest.warns(UserWarning, match=r"FLASH_ATTENTION can't be used: the fused kernels "
                                             r"have no dropout"):
            with pytest.raises(RuntimeError, match="No available kernel. Aborting execution."):
                F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match="No available kernel"):
                F.scaled_dot_product_attention(q, q, q)
        assert [str(w.message).split(":")[1].strip() for w in caught] == [
            "EFFICIENT_ATTENTION can't be used", "CUDNN_ATTENTION can't be used"]
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass


# -- dropout ---------------------------------------------------------------------------------------
def test_dropout_on_the_device_generator():
    q, k = ember.tensor(randn(2, 2, 64, 8)), ember.tensor(randn(2, 2, 64, 8))
    v = ember.ones(2, 2, 64, 8)
    ember.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert last_sdpa_backend() is SDPBackend.MATH
    ember.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    c = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert_close(a, b)
    assert not np.array_equal(a.numpy(), c.numpy())
    # with v = 1 a row's output is the sum of its kept weights / (1 - p): mean 1
    rows = a.numpy()[..., 0]
    assert abs(rows.mean() - 1.0) < 0.05 and rows.std() > 0.05
    assert float(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).abs().sum()) == 0.0
    assert_close(F.scaled_dot_product_attention(q, k, v, dropout_p=0.0),
                 F.scaled_dot_product_attention(q, k, v))


# -- the blocked CPU kernel ---------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": True}, {"gqa": True}],
                         ids=["plain", "causal", "mask", "gqa"])
def test_blocked_kernel_tiles_and_head_groups(monkeypatch, kw):
    """Small blocks and a small tile budget: many tiles per head, heads in several groups,
    partial tiles at the edges, causal blocks skipped."""
    monkeypatch.setattr(kit_attention, "Q_BLOCK", 8)
    monkeypatch.setattr(kit_attention, "K_BLOCK", 16)
    monkeypatch.setattr(kit_attention, "TILE_BUDGET", 8 * 16 * 2)
    hq = 4 if kw.get("gqa") else 2
    q = ember.tensor(randn(3, hq, 37, 8, dtype=np.float64), requires_grad=True)
    k = ember.tensor(randn(3, 2, 45, 8, dtype=np.float64), requires_grad=True)
    v = ember.tensor(randn(3, 2, 45, 5, dtype=np.float64), requires_grad=True)
    mask = ember.tensor(RNG.random((3, 1, 37, 45)) > 0.5) if kw.get("mask") else None
    args = dict(attn_mask=mask, is_causal=kw.get("is_causal", False),
                enable_gqa=kw.get("gqa", False))
    outs = []
    for backend in BACKENDS:
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, k, v, **args)
        outs.append([out] + list(ember.autograd.grad(out.sum() + (out * out).sum(), (q, k, v))))
    for fused, math_ in zip(outs[1], outs[0]):
        assert_close(fused, math_, rtol=1e-10, atol=1e-10)


def test_blocked_kernel_memory_stays_a_few_tiles():
    """(1, 2, 2048, 16): the L x S scores would take 32 MiB; the kernel holds a few tiles."""
    from ember.runtime.registry import registry
    backend = registry.get("cpu")
    q, k, v = (ember.tensor(randn(1, 2, 2048, 16)) for _ in range(3))
    score_bytes = 2 * 2048 * 2048 * 4
    for fn, args in ((kit_attention.sdpa_fused_forward, (q, k, v, None, True, 0.25)),):
        tracemalloc.start()
        try:
            out, lse = fn(backend, *args)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < score_bytes / 4, peak
    g = ember.tensor(randn(1, 2, 2048, 16))
    tracemalloc.start()
    try:
        kit_attention.sdpa_fused_backward(backend, g, q, k, v, None, out, lse, True, 0.25)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < score_bytes / 4, peak


def test_fused_op_checks_its_operands():
    from ember.ops.attention import fused_op
    q = ember.tensor(randn(2, 3, 4, 8))
    k = ember.tensor(randn(2, 2, 5, 8))
    with pytest.raises(RuntimeError, match=r"Hkv dividing Hq"):
        fused_op.meta(q, k, k, None, False, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fused_op.meta(q, q, q, None, False, 1.0) == (((2, 3, 4, 8), ember.float32),
                                                          ((2, 3, 4), ember.float32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_computes_in_float32(dtype):
    dt = getattr(ember, dtype)
    tensors = [ember.tensor(randn(2, 2, 5, 8)).to(dt).requires_grad_() for _ in range(3)]
    results = []
    for backend in BACKENDS:
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(*tensors, is_causal=True)
        assert out.dtype is dt
        results.append([out.float()] + [g.float() for g in ember.autograd.grad(
            out.float().sum(), tensors)])
    tol = 2e-3 if dtype == "float16" else 2e-2
    for fused, math_ in zip(results[1], results[0]):
        assert_close(fused, math_, rtol=tol, atol=tol)


def test_the_extension_point_a_backend_registers_the_fused_kernels(monkeypatch):
    """A plug-in gets FLASH_ATTENTION on its device by registering the fused ops' kernels; the
    backward kernel is optional (the op's composite runs without it), and without the forward
    kernel calls take the math path."""
    from ember.dispatch.dispatcher import invalidate
    from ember.ops.attention import FUSED, FUSED_BACKWARD
    from ember.runtime.registry import registry
    table = registry.get("cpu").kernels
    calls = []

    def spy(name):
        kernel = table.get(name)

        def wrapped(*args):
            calls.append(name)
            return kernel(*args)
        return wrapped
    monkeypatch.setitem(table._kernels, FUSED, spy(FUSED))
    monkeypatch.setitem(table._kernels, FUSED_BACKWARD, spy(FUSED_BACKWARD))
    invalidate(FUSED_BACKWARD)  # the dispatcher caches what it resolved
    lib = ember.library.Library("ember", "IMPL")
    lib.impl(FUSED, table.get(FUSED), "cpu")  # the path a plug-in takes
    q, k, v = (ember.tensor(randn(1, 2, 4, 8), requires_grad=True) for _ in range(3))
    F.scaled_dot_product_attention(q, k, v).sum().backward()
    assert calls == [FUSED, FUSED_BACKWARD]
    expected = q.grad.clone()
    q.grad = None
    monkeypatch.delitem(table._kernels, FUSED_BACKWARD)
    invalidate(FUSED_BACKWARD)
    F.scaled_dot_product_attention(q, k, v).sum().backward()
    assert calls == [FUSED, FUSED_BACKWARD, FUSED]  # the backward ran the composite
    assert_close(q.grad, expected, rtol=1e-5, atol=1e-6)
    monkeypatch.delitem(table._kernels, FUSED)
    invalidate(FUSED)
    assert sdpa_backend_for(q, k, v) is SDPBackend.MATH
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with pytest.warns(UserWarning, match=f"the cpu backend has no kernel for {FUSED}"):
            with pytest.raises(RuntimeError, match="No available kernel"):
                F.scaled_dot_product_attention(q, k, v)
    monkeypatch.undo()
    invalidate()
    assert sdpa_backend_for(q, k, v) is SDPBackend.FLASH_ATTENTION
