"""matmul and friends, einsum, tensordot against numpy (and PyTorch where it is installed)."""
import math

import numpy as np
import pytest

import ember
from ember.ops.views import slice_op

rng = np.random.default_rng(1)


def _data(shape, dtype="float64"):
    if dtype in ("int64", "int32"):
        return np.asarray(rng.integers(-3, 4, shape), dtype)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return np.asarray(a, dtype)


def layouts(a):
    """``a``'s values as ember tensors in several layouts (contiguous, transposed, stepped,
    expanded from a stride-0 row)."""
    out = [ember.from_numpy(a.copy())]
    if a.ndim >= 2:
        out.append(ember.from_numpy(np.ascontiguousarray(a.swapaxes(-1, -2))).transpose(-1, -2))
    if a.ndim >= 1:
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        out.append(slice_op(ember.from_numpy(wide), a.ndim - 1, None, None, 2))
    return out


def expanded(a):
    """A stride-0 tensor with the values of ``np.broadcast_to(a[:1], a.shape)``."""
    return ember.from_numpy(a[:1].copy()).expand(*a.shape), np.broadcast_to(a[:1], a.shape)


def check(t, expected, dtype=None, rtol=1e-5, atol=1e-6):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    if dtype is not None:
        assert t.dtype is dtype, (t.dtype, dtype)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(t.numpy(), expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(t.numpy(), expected)


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)),
    ((3,), (5, 3, 2)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)), ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((0,), (0,)),
    ((4, 2, 3), (1, 3, 0)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_matmul_matches_numpy_in_every_layout(dtype):
    edt = getattr(ember, dtype)
    for sa, sb in MATMUL_SHAPES:
        a, b = _data(sa, dtype), _data(sb, dtype)
        ref = np.matmul(a, b)
        for ta in layouts(a):
            for tb in layouts(b):
                check(ember.matmul(ta, tb), ref, dtype=edt, rtol=1e-4, atol=1e-4)
        check(ta @ tb, ref, rtol=1e-4, atol=1e-4)
        check(ta.matmul(tb), ref, rtol=1e-4, atol=1e-4)
        if a.ndim >= 1 and a.shape[0]:
            te, ae = expanded(a)
            check(ember.matmul(te, tb), np.matmul(ae, b), rtol=1e-4, atol=1e-4)


def test_matmul_keeps_half_and_small_int_dtypes():
    a = _data((4, 5), "float16")
    b = _data((5, 3), "float16")
    r = ember.matmul(ember.from_numpy(a), ember.from_numpy(b))
    check(r, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16),
          dtype=ember.float16, rtol=1e-2, atol=1e-2)
    i = _data((3, 4), "int32")
    check(ember.mm(ember.from_numpy(i), ember.from_numpy(i.T.copy())), i @ i.T,
          dtype=ember.int32)
    bf = ember.ones(2, 3, dtype=ember.bfloat16)
    check(ember.matmul(bf, bf.t()).float(), np.full((2, 2), 3.0))
    assert ember.matmul(bf, bf.t()).dtype is ember.bfloat16


def test_matmul_reads_transposed_operands_without_copying():
    from ember.runtime.registry import registry
    table = registry.get("cpu").kernels
    to_copy = table.get("_to_copy")
    copied = []

    def counting(x, dtype):
        copied.append(tuple(x.shape))
        return to_copy(x, dtype)

    a, b = ember.from_numpy(_data((64, 32))), ember.from_numpy(_data((48, 64)))
    bias = ember.zeros(32, 48, dtype=ember.float64)
    table.register("_to_copy", counting)
    try:
        results = [a.t() @ b.t(), ember.mm(a.t(), b.t()),
                   ember.addmm(bias, a.t(), b.t(), beta=0.5),
                   ember.bmm(a.t().unsqueeze(0), b.t().unsqueeze(0)).squeeze(0)]
    finally:
        table.register("_to_copy", to_copy)
    assert copied == []
    for r in results:
        check(r, a.numpy().T @ b.numpy().T)


def test_matmul_operators():
    a, b = _data((2, 3)), _data((3, 4))
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    check(ta @ tb, a @ b)
    check(tb.__rmatmul__(ta), a @ b)
    assert ta.__matmul__(3) is NotImplemented
    c = ta
    c @= ember.from_numpy(_data((3, 3)))
    assert c is not ta and c.shape == ember.Size([2, 3])  # like PyTorch: a new tensor
    with pytest.raises(TypeError):
        ta @ 2.0


def test_matmul_errors():
    a, b = ember.ones(2, 3), ember.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                                           r"4x5\)"):
        ember.matmul(a, b)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(1x4 and "
                                           r"2x3\)"):
        ember.matmul(ember.ones(4), a)
    with pytest.raises(RuntimeError, match=r"\(6x4 and 5x5\)"):
        ember.matmul(ember.ones(2, 3, 4), ember.ones(5, 5))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec "
                                           r"\(4\)"):
        ember.matmul(a, ember.ones(4))
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and "
                                           r"src \[4\] to have the same number of elements, but "
                                           r"got 3 and 4 elements respectively"):
        ember.matmul(ember.ones(3), ember.ones(4))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, but "
                                           "they are 0D and 2D"):
        ember.matmul(ember.tensor(1.0), a)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float != double"):
        ember.matmul(a, ember.ones(3, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="but got: long int != c10::Half"):
        ember.mm(ember.ones(2, 3, dtype=ember.int64), ember.ones(3, 2, dtype=ember.float16))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match the size of "
                                           "tensor b \\(3\\) at non-singleton dimension 0"):
        ember.matmul(ember.ones(2, 2, 3), ember.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 3\] but got: \[2, 4\]."):
        ember.matmul(ember.ones(2, 2, 3), ember.ones(2, 4, 5))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype, but got "
                                           "Float, Double, and Float"):
        ember.matmul(ember.ones(2, 3, dtype=ember.float64), ember.ones(3))
    with pytest.raises(NotImplementedError, match="\"matmul\" not implemented for 'Bool'"):
        ember.matmul(ember.ones(2, 2, dtype=ember.bool), ember.ones(2, 2, dtype=ember.bool))
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not int"):
        ember.matmul(a, 2)


# -- mm, bmm, mv, dot, vdot, outer ---------------------------------------------------------------
def test_mm_bmm_mv_dot():
    a, b = _data((2, 3)), _data((3, 4))
    for ta in layouts(a):
        for tb in layouts(b):
            check(ember.mm(ta, tb), a @ b)
            check(ta.mm(tb), a @ b)
    x, y = _data((4, 2, 3)), _data((4, 3, 5))
    for tx in layouts(x):
        for ty in layouts(y):
            check(ember.bmm(tx, ty), x @ y)
    te, xe = expanded(x)
    check(te.bmm(ember.from_numpy(y)), xe @ y)
    v = _data((3,))
    for ta in layouts(a):
        for tv in layouts(v):
            check(ember.mv(ta, tv), a @ v)
            check(ember.dot(tv, tv), v @ v)
    check(ember.from_numpy(a).mv(ember.from_numpy(v)), a @ v)
    check(ember.dot(ember.arange(3), ember.arange(3)), 5, dtype=ember.int64)
    check(ember.dot(ember.empty(0), ember.empty(0)), 0.0)
    check(ember.mm(ember.empty(2, 0), ember.empty(0, 3)), np.zeros((2, 3)))


def test_vdot_conjugates_and_outer_promotes():
    a, b = _data((4,), "complex128"), _data((4,), "complex128")
    check(ember.vdot(ember.from_numpy(a), ember.from_numpy(b)), np.vdot(a, b),
          dtype=ember.complex128)
    r = _data((4,))
    check(ember.from_numpy(r).vdot(ember.from_numpy(r)), r @ r)
    u, w = _data((3,)), _data((4,))
    for tu in layouts(u):
        check(ember.outer(tu, ember.from_numpy(w)), np.outer(u, w))
        check(tu.ger(ember.from_numpy(w)), np.outer(u, w))
    check(ember.outer(ember.arange(3), ember.ones(2)), np.outer(np.arange(3), np.ones(2)),
          dtype=ember.float32)
    check(ember.outer(ember.tensor([True]), ember.tensor([False])), [[False]], dtype=ember.bool)
    check(ember.ger(ember.empty(0), ember.ones(2)), np.zeros((0, 2)))


def test_mm_family_errors():
    a, v = ember.ones(2, 3), ember.ones(3)
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        ember.mm(a, v)
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ember.mm(v, a)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                                           r"2x3\)"):
        ember.mm(a, a)
    with pytest.raises(NotImplementedError, match="\"mm\" not implemented for 'Bool'"):
        ember.mm(a.bool(), a.t().bool())
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ember.bmm(a, a)
    with pytest.raises(RuntimeError, match="batch2 must be a 3D tensor"):
        ember.bmm(ember.ones(2, 2, 3), a)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 3\] but got: \[3, 3\]."):
        ember.bmm(ember.ones(2, 2, 3), ember.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.bmm(ember.ones(2, 2, 3), ember.ones(2, 3, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 2, 2"):
        ember.mv(a, a)
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec "
                                           r"\(4\)"):
        ember.mv(a, ember.ones(4))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype, but got "
                                           "Double, Float, and Double"):
        ember.mv(a, v.double())
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 2D tensors"):
        ember.dot(a, a)
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but "
                                           "found Float and Double"):
        ember.dot(v, v.double())
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\] and "
                                           r"src \[0\]"):
        ember.dot(v, ember.empty(0))
    with pytest.raises(NotImplementedError, match="\"dot\" not implemented for 'Bool'"):
        ember.dot(v.bool(), v.bool())
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 1D and 2D tensors"):
        ember.vdot(v, a)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        ember.outer(a, v)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 0-D"):
        ember.outer(v, ember.tensor(1.0))


# -- addmm, baddbmm, addmv ------------------------------------------------------------------------
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1), (0, -1.5), (2, 0)])
def test_fused_multiply_adds(beta, alpha):
    m1, m2 = _data((2, 3)), _data((3, 4))
    for inp in (_data((2, 4)), _data((4,)), _data((1, 1)), _data(())):
        ref = beta * inp + alpha * (m1 @ m2) if beta else alpha * (m1 @ m2)
        for t1 in layouts(m1):
            r = ember.addmm(ember.from_numpy(inp), t1, ember.from_numpy(m2), beta=beta,
                            alpha=alpha)
            check(r, np.broadcast_to(ref, (2, 4)))
    b1, b2, inp = _data((5, 2, 3)), _data((5, 3, 4)), _data((2, 4))
    ref = beta * inp + alpha * (b1 @ b2)
    for t2 in layouts(b2):
        check(ember.baddbmm(ember.from_numpy(inp), ember.from_numpy(b1), t2, beta=beta,
                            alpha=alpha), ref)
    mat, vec, inp = _data((2, 3)), _data((3,)), _data((2,))
    for tm in layouts(mat):
        check(ember.addmv(ember.from_numpy(inp), tm, ember.from_numpy(vec), beta=beta,
                          alpha=alpha), beta * inp + alpha * (mat @ vec))


def test_fused_multiply_add_edge_cases():
    m1, m2 = ember.ones(2, 3), ember.ones(3, 2)
    nan_inp = ember.full((2, 2), math.nan)
    check(ember.addmm(nan_inp, m1, m2, beta=0), np.full((2, 2), 3.0))  # beta=0 ignores nan
    i = ember.ones(2, 2, dtype=ember.int64)
    mi = ember.arange(6).reshape(2, 3)
    check(ember.addmm(i, mi, mi.t(), beta=0.5), [[5, 14], [14, 50]], dtype=ember.int64)
    check(ember.addmm(i, mi, mi.t(), alpha=1.5), [[6, 15], [15, 51]], dtype=ember.int64)
    x = ember.zeros(2, 2)
    v = x._version
    assert x.addmm_(m1, m2, alpha=2) is x
    check(x, np.full((2, 2), 6.0))
    assert x._version > v
    y = ember.ones(1, 2, 4)
    y.baddbmm_(ember.ones(1, 2, 3), ember.ones(1, 3, 4), beta=2)
    check(y, np.full((1, 2, 4), 5.0))
    z = ember.ones(2)
    z.addmv_(m1, ember.ones(3))
    check(z, [4.0, 4.0])
    check(m1.addmm(m1, ember.eye(3)), 2 * np.ones((2, 3)))


@pytest.mark.parametrize("dtype, tiny", [("float16", 2.0 ** -11), ("bfloat16", 2.0 ** -8)])
def test_half_fused_multiply_adds_round_once(dtype, tiny):
    # regression: the composite rounded a @ b to half, then the sum: 1 + tiny (a tie, rounded
    # to 1) + tiny / 2 gave 1. PyTorch rounds the float32 result once: 1 + 2 * tiny.
    h = getattr(ember, dtype)
    s = ember.tensor([[tiny / 2]], dtype=h)
    a, b = ember.tensor([[1.0, tiny]], dtype=h), ember.tensor([[1.0], [1.0]], dtype=h)
    for r in (ember.addmm(s, a, b), ember.addmv(s[0], a, b[:, 0]),
              ember.baddbmm(s[None], a[None], b[None]), s.clone().addmm_(a, b)):
        assert r.dtype is h
        assert r.reshape(-1)[0].item() == 1 + 2 * tiny
    exact = 2 * (tiny / 2) + 0.5 * (1 + tiny)
    assert ember.addmm(s, a, b, beta=2, alpha=0.5).item() == \
        ember.tensor(exact, dtype=h).item()


def test_fused_multiply_add_errors():
    m1, m2 = ember.ones(2, 3), ember.ones(3, 4)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match the "
                                           r"existing size \(3\) at non-singleton dimension 1"):
        ember.addmm(ember.ones(3), m1, m2)
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Double "
                                           "and Float"):
        ember.addmm(ember.ones(2, 4, dtype=ember.float64), m1, m2)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        ember.addmm(ember.ones(2, 4), m1, m2.double())
    with pytest.raises(RuntimeError, match="mat1 must be a matrix, got 1-D tensor"):
        ember.addmm(ember.ones(2, 2), ember.ones(3), m2)
    with pytest.raises(RuntimeError, match="Input dtypes must be the same, got: input double, "
                                           "batch1: float, batch2: float"):
        ember.baddbmm(ember.ones(2, 4, dtype=ember.float64), ember.ones(3, 2, 3),
                      ember.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the "
                                           r"existing size \(5\) at non-singleton dimension 1"):
        ember.baddbmm(ember.ones(5, 4), ember.ones(3, 2, 3), ember.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(3\), mat \(2x3\), vec "
                                           r"\(3\)"):
        ember.addmv(ember.ones(3), m1, ember.ones(3))
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype, but got "
                                           "Float, Float, and Double"):
        ember.addmv(ember.ones(2), m1, ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"Bad in-place call: input tensor size \[4\] and output "
                                           r"tensor size \[2, 4\] should match"):
        ember.ones(4).addmm_(m1, m2)


# -- addmm: an op of its own, with a CPU kernel and AddmmBackward0 --------------------------------
ADDMM_SELF_SHAPES = [(2, 4), (4,), (1, 4), (2, 1), (1, 1), ()]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int64", "int32",
                                   "complex64"])
def test_addmm_kernel_matches_its_composite(dtype):
    # the CPU's addmm kernel and the composite that backends without one run agree to the bit
    from ember.ops.linalg import addmm_op
    from ember.runtime.registry import registry
    assert "addmm" in registry.get("cpu").kernels.names()
    scalars = [(1, 1), (0, 1), (2, -1), (0, 3)] if dtype.startswith("int") else \
        [(1, 1), (0, 1), (0.5, 1.5), (-2, 0), (0, -1)]
    d = getattr(ember, dtype)
    m1 = ember.from_numpy(_data((2, 3), "float64")).to(d)
    for m2 in layouts(_data((3, 4), "float64")):
        m2 = m2.to(d) if m2.dtype is not d else m2
        for shape in ADDMM_SELF_SHAPES:
            s = ember.from_numpy(_data(shape, "float64")).to(d)
            if shape == (2, 4) and d.is_floating_point:
                s[0, 0] = math.nan  # ignored when beta is 0
            for beta, alpha in scalars:
                got = addmm_op(s, m1, m2, beta, alpha)
                want = addmm_op.composite(s, m1, m2, beta, alpha)
                assert got.dtype is want.dtype is d and got.shape == want.shape == (2, 4)
                assert got.is_contiguous()
                a, b = got.to(ember.float64 if not d.is_complex else d).numpy(), \
                    want.to(ember.float64 if not d.is_complex else d).numpy()
                np.testing.assert_array_equal(a, b, err_msg=f"{shape} beta={beta} alpha={alpha}")


def test_addmm_broadcasts_self_without_an_expand_node():
    b = ember.tensor([1.0, 2.0], requires_grad=True)
    x = ember.ones(3, 4, requires_grad=True)
    w = ember.ones(2, 4, requires_grad=True)
    y = ember.addmm(b, x, w.t(), beta=0.5)
    assert y.grad_fn.name() == "AddmmBackward0"
    edges = [n.name() for n, _ in y.grad_fn.next_functions[:2]]
    assert edges == ["AccumulateGrad", "AccumulateGrad"]  # no ExpandBackward0 under self
    y.sum().backward()
    check(b.grad, [1.5, 1.5])
    check(w.grad, np.full((2, 4), 3.0))
    assert w.grad.is_contiguous()  # the W.t() layout: its gradient arrives contiguous
    check(x.grad, np.full((3, 4), 2.0))


def test_fused_multiply_add_scalars_are_checked():
    a = ember.ones(2, 2)
    for kw in ({"alpha": 1j}, {"beta": 2 + 1j}, {"alpha": 1e39}):
        for fn in (lambda: ember.addmm(a, a, a, **kw), lambda: ember.baddbmm(a[None], a[None],
                                                                           a[None], **kw)):
            with pytest.raises(RuntimeError, match="value cannot be converted to type float "
                                                   "without overflow"):
                fn()
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half "
                                           "without overflow"):
        ember.addmv(ember.ones(2, dtype=ember.float16), a.half(), ember.ones(2).half(), alpha=1j)
    i = ember.ones(2, 2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without "
                                           "overflow"):
        ember.addmm(i, i, i, beta=1j)
    u = ember.ones(2, 2, dtype=ember.uint8)
    for bad in (256, -256, -0.5, math.inf):
        with pytest.raises(RuntimeError, match="type uint8_t without overflow"):
            ember.addmm(u, u, u, alpha=bad)
    check(ember.addmm(u, u, u, beta=-1, alpha=-255), np.full((2, 2), 1), dtype=ember.uint8)
    r = ember.addmm(a, a, a, beta=1 + 0j, alpha=2 + 0j)  # a zero imaginary part is dropped
    assert r.dtype is ember.float32
    check(r, np.full((2, 2), 5.0))
    c = a.to(ember.complex64)
    check(ember.addmm(c, c, c, alpha=1j), np.full((2, 2), 1 + 2j))
    h = ember.full((2, 2), 300.0, dtype=ember.float16)
    check(ember.addmm(h, h, h), np.full((2, 2), np.inf))  # overflow to inf, silently


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float16", "float32",
                                   "float64", "complex64"])
def test_addmm_scalars_match_torch(dtype):
    torch = pytest.importorskip("torch")
    values = [-256, -255, -129, -128, 127, 128, 255, 256, 2 ** 31, -2 ** 31 - 1, 2.7, -2.7, 1e39,
              70000.0, math.inf, math.nan, 0, 0.0, 3, 1 + 0j, 1 + 1j]
    for v in values:
        for which in ("beta", "alpha"):
            results = []
            for lib in (ember, torch):
                d = getattr(lib, dtype)
                a = lib.ones(2, 2, dtype=d)
                s = lib.full((2,), 2.0).to(d)
                try:
                    r = lib.addmm(s, a, a, **{which: v})
                    results.append(r.to(lib.complex128).numpy())
                except RuntimeError as e:
                    results.append(str(e))
            got, ref = results
            if isinstance(ref, str):
                assert got == ref, (which, v)
            else:  # BLAS may round beta * self differently: an ulp or so
                np.testing.assert_allclose(got, ref, rtol=1e-3 if dtype == "float16" else 1e-6,
                                           err_msg=f"{which}={v}")


@pytest.mark.parametrize("self_shape", [(5,), (1, 5), (3, 1), (), (3, 5)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_addmm_gradients_and_nodes_match_torch(self_shape, dtype):
    torch = pytest.importorskip("torch")
    arrays = [_data(self_shape, dtype), _data((3, 4), dtype), _data((5, 4), dtype)]
    grad_out = _data((3, 5), dtype)
    for beta, alpha in [(1, 1), (0.5, -2.0), (0, 1.5), (2, 0)]:
        if dtype.startswith("complex"):
            beta, alpha = beta * (1 - 0.5j), alpha * (0.5 + 1j)
        results = []
        for lib in (ember, torch):
            b, x, w = (lib.tensor(a, requires_grad=True) for a in arrays)
            y = lib.addmm(b, x, w.t(), beta=beta, alpha=alpha)
            y.backward(lib.tensor(grad_out))
            results.append((y.grad_fn.name(), y.detach().numpy(), b.grad.numpy(), x.grad.numpy(),
                            w.grad.numpy()))
        (name, *got), (ref_name, *ref) = results
        assert name == ref_name == "AddmmBackward0"
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)


def test_linear_records_torchs_nodes():
    torch = pytest.importorskip("torch")
    x2 = _data((3, 4), "float32")
    w, b = _data((5, 4), "float32"), _data((5,), "float32")
    names = []
    for lib in (ember, torch):
        F = lib.nn.functional
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x2, w, b))
        layer = lib.nn.Linear(4, 5)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(w))
            layer.bias.copy_(lib.tensor(b))
        outs = [F.linear(xt, wt, bt), F.linear(xt, wt), layer(xt), layer(lib.tensor(x2))]
        names.append([o.grad_fn.name() for o in outs])
        for o in outs:
            o.sum().backward()
        names[-1].append([p.grad.numpy().copy() for p in (xt, wt, bt, layer.weight, layer.bias)])
    got, ref = names
    assert got[:4] == ref[:4] == ["AddmmBackward0", "MmBackward0", "AddmmBackward0",
                                  "AddmmBackward0"]
    for g, r in zip(got[4], ref[4]):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


# -- einsum ---------------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("Ba,aB", [(2, 3), (3, 2)]),
    ("...ij,...jk", [(2, 2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]),
    ("i...->...", [(2, 3, 4)]),
    ("...i,...i->...", [(2, 3), (5, 1, 3)]),
    ("...", [(2, 3)]),
    ("...i->i", [(2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("b i j , b j k -> b i k", [(2, 2, 3), (2, 3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (1, 3, 4)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]),
    ("i,i->i", [(0,), (0,)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
]


def _np_einsum(eq, arrays):
    eq = eq.replace(" ", "")
    shapes = [a.shape for a in arrays]
    if eq == "...i->i":
        return arrays[0].sum(axis=tuple(range(arrays[0].ndim - 1)))
    if shapes in ([(2, 2, 3), (1, 3, 4)], [(2, 3), (1, 3)]):
        arrays = [arrays[0], np.broadcast_to(arrays[1], arrays[0].shape[:-2] + arrays[1].shape[-2:])
                  if len(shapes[0]) == 3 else np.broadcast_to(arrays[1], shapes[0])]
    return np.einsum(eq, *arrays)


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(eq, shapes):
    arrays = [_data(s) for s in shapes]
    ref = _np_einsum(eq, arrays)
    check(ember.einsum(eq, *[ember.from_numpy(a) for a in arrays]), ref)
    check(ember.einsum(eq, [ember.from_numpy(a) for a in arrays]), ref)  # operands as a list
    lay = [layouts(a)[-1] for a in arrays]  # stepped (non-contiguous) operands
    check(ember.einsum(eq, *lay), ref)


def test_einsum_dtypes_sublists_and_fresh_results():
    i = ember.arange(3)
    check(ember.einsum("i,i", i, i), 5, dtype=ember.int64)
    h = ember.ones(2, 3, dtype=ember.float16)
    check(ember.einsum("ij,kj->ik", h, h), np.full((2, 2), 3.0), dtype=ember.float16)
    a, b = _data((2, 3)), _data((3, 4))
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    check(ember.einsum(ta, [0, 1], tb, [1, 2], [0, 2]), a @ b)
    check(ember.einsum(ta, [0, 1], tb, [1, 2]), a @ b)
    check(ember.einsum(ta, [Ellipsis, 1], tb, [1, 2]), a @ b)
    t = ember.from_numpy(_data((3, 3)))
    for eq in ("ij->ji", "ii->i", "ij->ij", "ij"):
        r = ember.einsum(eq, t)
        assert r.untyped_storage() is not t.untyped_storage()
        before = t.numpy().copy()
        r.add_(1.0)
        np.testing.assert_array_equal(t.numpy(), before)


def test_products_are_c_contiguous():
    # regression: einsum returned xp's output layout ("bij,bkj->bik" gave strides (15, 1, 3)),
    # so ``.view()`` of the result raised where PyTorch's works
    a, b = ember.from_numpy(_data((2, 3, 4))), ember.from_numpy(_data((2, 5, 4)))
    for r in (ember.einsum("bij,bkj->bik", a, b), ember.einsum("bij->jib", a),
              ember.einsum("bij,bkj->kib", a, b), a @ b.transpose(1, 2),
              ember.tensordot(a, b, ([2], [2]))):
        assert r.is_contiguous(), (r.shape, r.stride())
        r.view(-1)


def test_einsum_errors():
    a, v = ember.ones(2, 3), ember.ones(2)
    cases = [
        (("ij,jk->ik", a), "einsum\\(\\): fewer operands were provided than specified in the "
                           "equation"),
        (("ij,jk", a, a, a), "more operands were provided than specified in the equation"),
        (("ij,jk->ik", a, ember.ones(4, 5)), "subscript j has size 4 for operand 1 which does not "
                                             "broadcast with previously seen size 3"),
        (("ijk->i", a), "the number of subscripts in the equation \\(3\\) does not match the "
                        "number of dimensions \\(2\\) for operand 0 and no ellipsis was given"),
        (("ijk...->i", a), "the number of subscripts in the equation \\(3\\) is more than the "
                           "number of dimensions \\(2\\) for operand 0"),
        (("i->j", v), "output subscript j does not appear in the equation for any input operand"),
        (("ii->i", a), "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
        (("i->ii", v), "output subscript i appears more than once in the output"),
        (("i1,i->", ember.ones(2, 2), v), "invalid subscript given at index 1 in the equation "
                                          "string, subscripts must be in \\[a-zA-Z\\]"),
        (("i->i->i", v), "invalid subscript given at index 4"),
        (("i..j", a), "found '.' for operand 0 that is not part of any ellipsis"),
        (("...i...", a), "for which an ellipsis was already found"),
        (("...,...->...", a, ember.ones(3, 2)), "dimension 0 covered by ellipsis in operand 1 has "
                                                "size 3 which does not broadcast"),
        (("ij,jk->ik", a, ember.ones(3, 4, dtype=ember.float64)), "expected scalar type Float but "
                                                                  "found Double"),
    ]
    for args, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            ember.einsum(*args)
    with pytest.raises(NotImplementedError, match="\"einsum\" not implemented for 'Bool'"):
        ember.einsum("i,i", v.bool(), v.bool())
    with pytest.raises(TypeError, match="operand 0 must be a Tensor"):
        ember.einsum("i", [1, 2])


# -- tensordot ------------------------------------------------------------------------------------
TENSORDOT_CASES = [
    ((2, 3), (3, 4), 1, 1),
    ((2, 3, 4), (3, 4, 5), 2, 2),
    ((2, 3), (4, 5), 0, 0),
    ((2, 3), (2, 3), 2, 2),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0]), ([1, 2], [1, 0])),
    ((2, 3), (3, 4), ([-1], [0]), ([1], [0])),
    ((2, 3), (3, 4), [[1], [0]], ([1], [0])),
    ((2, 3), (3, 4), (1, 0), ([1], [0])),
    ((2, 0), (0, 4), 1, 1),
]


@pytest.mark.parametrize("sa,sb,dims,np_dims", TENSORDOT_CASES)
def test_tensordot_matches_numpy(sa, sb, dims, np_dims):
    a, b = _data(sa), _data(sb)
    ref = np.tensordot(a, b, np_dims)
    for ta in layouts(a):
        check(ember.tensordot(ta, ember.from_numpy(b), dims=dims), ref)
    check(ember.tensordot(ember.from_numpy(a), layouts(b)[-1], dims), ref)


def test_tensordot_broadcasts_size_one_and_checks_arguments():
    a, b = _data((2, 3)), _data((1, 4))
    ref = a.sum(1, keepdims=True) @ b
    check(ember.tensordot(ember.from_numpy(a), ember.from_numpy(b), dims=([1], [0])), ref)
    check(ember.tensordot(ember.arange(6).reshape(2, 3), ember.arange(3), dims=1),
          np.arange(6).reshape(2, 3) @ np.arange(3), dtype=ember.int64)
    a, b = ember.ones(2, 3), ember.ones(3, 4)
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0, but got dims=-1"):
        ember.tensordot(a, b, dims=-1)
    with pytest.raises(RuntimeError, match="tensordot expects dims < ndim_a or ndim_b, but got "
                                           "dims=3"):
        ember.tensordot(a, b, dims=3)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        ember.tensordot(a, b, dims=([1], [0, 1]))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has "
                                           "size 2 in dim 0 and second has size 3 in dim 0"):
        ember.tensordot(a, b, dims=([0], [0]))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has "
                                           "size 3 in dim -1 and second has size 4 in dim 0"):
        ember.tensordot(a, ember.ones(4, 5), dims=1)
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ember.tensordot(a, b.double(), dims=1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.tensordot(a, b, dims=([1], [3]))
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        ember.tensordot(a, b, dims=([1, 1], [0, 0]))


# -- PyTorch as the reference ---------------------------------------------------------------------
def test_against_torch():
    torch = pytest.importorskip("torch")
    arrays = {k: _data(s, "float32") for k, s in
              [("a", (2, 3)), ("b", (3, 4)), ("v", (3,)), ("x", (5, 2, 3)), ("y", (5, 3, 4)),
               ("z", (2, 4)), ("c", (4, 5, 3))]}
    E = {k: ember.from_numpy(v) for k, v in arrays.items()}
    T = {k: torch.from_numpy(v) for k, v in arrays.items()}
    cases = [
        lambda m, d: m.matmul(d["x"], d["b"]),
        lambda m, d: m.matmul(d["v"], d["y"]),
        lambda m, d: m.matmul(d["c"], d["v"]),
        lambda m, d: d["a"] @ d["b"],
        lambda m, d: m.addmm(d["z"], d["a"], d["b"], beta=0.5, alpha=-2),
        lambda m, d: m.baddbmm(d["z"], d["x"], d["y"], alpha=3),
        lambda m, d: m.addmv(m.select(d["a"], 1, 0), d["a"], d["v"], beta=2),
        lambda m, d: m.outer(d["v"], d["v"]),
        lambda m, d: m.einsum("bij,bjk->bki", d["x"], d["y"]),
        lambda m, d: m.einsum("...j,kj", d["x"], m.select(d["c"], 0, 0)),
        lambda m, d: m.einsum("ii", d["a"].mT @ d["a"]),
        lambda m, d: m.tensordot(d["x"], d["y"], dims=([0, 2], [0, 1])),
        lambda m, d: m.tensordot(d["a"], d["c"], dims=([1], [2])),
    ]
    for case in cases:
        got, ref = case(ember, E), case(torch, T)
        assert got.dtype.name == str(ref.dtype).replace("torch.", "")
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)
