"""ember.linalg: values against numpy/scipy (and torch when installed), torch's errors
(LinAlgError naming the batch element), out=, broadcasting, derivatives (gradcheck,
gradgradcheck, the gauge checks), and the OpenCL kernels against the CPU."""
import warnings

import numpy as np
import pytest
import scipy.linalg as sl

import ember
from ember.runtime import CPUFallbackWarning

L = ember.linalg
RNG = np.random.default_rng(0)


def T(a, **kw):
    return ember.tensor(np.asarray(a), **kw)


def _np(t):
    return t.detach().cpu().numpy()


def _spd(n, b=()):
    x = RNG.standard_normal(b + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


# -- values --------------------------------------------------------------------------------------
def test_solvers_and_inverse():
    A, B = RNG.standard_normal((3, 4, 4)), RNG.standard_normal((3, 4, 2))
    np.testing.assert_allclose(_np(L.solve(T(A), T(B))), np.linalg.solve(A, B), rtol=1e-10)
    b = B[0, :, 0]  # a vector right-hand side, broadcast over A's batch
    np.testing.assert_allclose(_np(L.solve(T(A), T(b))),
                               np.linalg.solve(A, np.broadcast_to(b[:, None], (3, 4, 1)))[..., 0],
                               rtol=1e-10)
    X = _np(L.solve(T(A), T(np.swapaxes(B, -1, -2)), left=False))
    np.testing.assert_allclose(X @ A, np.swapaxes(B, -1, -2), atol=1e-10)
    np.testing.assert_allclose(_np(L.inv(T(A))), np.linalg.inv(A), rtol=1e-10)
    # broadcasting batch dims of A and B
    np.testing.assert_allclose(_np(L.solve(T(A[:1]), T(B))), np.linalg.solve(A[:1], B),
                               rtol=1e-10)
    U = np.triu(A) + 4 * np.eye(4)
    np.testing.assert_allclose(_np(L.solve_triangular(T(U), T(B), upper=True)),
                               np.stack([sl.solve_triangular(u, b) for u, b in zip(U, B)]),
                               rtol=1e-10)
    Lo = np.tril(A)
    np.testing.assert_allclose(
        _np(L.solve_triangular(T(Lo), T(B), upper=False, unitriangular=True)),
        np.stack([sl.solve_triangular(lo, b, lower=True, unit_diagonal=True)
                  for lo, b in zip(Lo, B)]), rtol=1e-10)


def test_lu_family():
    A = RNG.standard_normal((2, 5, 5))
    P, Lo, U = L.lu(T(A))
    np.testing.assert_allclose(_np(P @ Lo @ U), A, atol=1e-12)
    for a, p, lo, u in zip(A, _np(P), _np(Lo), _np(U)):
        sp, sl_, su = sl.lu(a)
        np.testing.assert_allclose(p, sp)
        np.testing.assert_allclose(lo, sl_, atol=1e-12)
        np.testing.assert_allclose(u, su, atol=1e-12)
    LU, piv = L.lu_factor(T(A))
    assert piv.dtype is ember.int32 and int(piv.min()) >= 1
    b = RNG.standard_normal((2, 5, 3))
    np.testing.assert_allclose(_np(L.lu_solve(LU, piv, T(b))), np.linalg.solve(A, b), rtol=1e-10)
    np.testing.assert_allclose(_np(L.lu_solve(LU, piv, T(b), adjoint=True)),
                               np.linalg.solve(np.swapaxes(A, -1, -2), b), rtol=1e-10)
    for shape in ((3, 5), (5, 3)):  # rectangular LU
        a = RNG.standard_normal(shape)
        P, Lo, U = L.lu(T(a))
        np.testing.assert_allclose(_np(P @ Lo @ U), a, atol=1e-12)
    P2, L2, U2 = ember.lu_unpack(*L.lu_factor(T(A)))
    np.testing.assert_allclose(_np(P2 @ L2 @ U2), A, atol=1e-12)


def test_decompositions():
    A = RNG.standard_normal((2, 5, 3))
    Q, R = L.qr(T(A))
    np.testing.assert_allclose(_np(Q @ R), A, atol=1e-12)
    np.testing.assert_allclose(_np(Q.mT @ Q), np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-12)
    Qc, Rc = L.qr(T(A), mode="complete")
    assert tuple(Qc.shape) == (2, 5, 5) and tuple(Rc.shape) == (2, 5, 3)
    assert tuple(L.qr(T(A), mode="r").Q.shape) == (0,)
    U, S, Vh = L.svd(T(A), full_matrices=False)
    np.testing.assert_allclose(_np((U * S.unsqueeze(-2)) @ Vh), A, atol=1e-12)
    np.testing.assert_allclose(_np(S), np.linalg.svd(A, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(_np(L.svdvals(T(A))), np.linalg.svd(A, compute_uv=False),
                               rtol=1e-12)
    H = _spd(4, (2,))
    w, V = L.eigh(T(H))
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(H), rtol=1e-12)
    np.testing.assert_allclose(_np(V @ (w.unsqueeze(-1) * V.mT)), H, atol=1e-10)
    np.testing.assert_allclose(_np(L.eigvalsh(T(H), UPLO="U")), np.linalg.eigvalsh(H),
                               rtol=1e-12)
    C = _np(L.cholesky(T(H)))
    np.testing.assert_allclose(C, np.linalg.cholesky(H), rtol=1e-12)
    np.testing.assert_allclose(_np(L.cholesky(T(H), upper=True)),
                               np.swapaxes(C, -1, -2), rtol=1e-12)
    G = RNG.standard_normal((4, 4))
    ev, evec = L.eig(T(G))
    assert ev.dtype is ember.complex128
    np.testing.assert_allclose(_np(T(G).to(ember.complex128) @ evec), _np(evec * ev), atol=1e-10)
    np.testing.assert_allclose(np.sort_complex(_np(L.eigvals(T(G)))),
                               np.sort_complex(np.linalg.eigvals(G)), rtol=1e-10)
    S3 = _spd(3)
    LD, piv = L.ldl_factor(T(S3))
    b = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(_np(L.ldl_solve(LD, piv, T(b))), np.linalg.solve(S3, b),
                               rtol=1e-10)
    tau = RNG.standard_normal(3)
    geqrf = sl.lapack.dgeqrf(A[0])
    np.testing.assert_allclose(_np(L.householder_product(T(geqrf[0]), T(geqrf[1]))),
                               sl.lapack.dorgqr(geqrf[0], geqrf[1])[0], atol=1e-12)
    assert tau.shape == (3,)


def test_matrix_functions_and_norms():
    A = RNG.standard_normal((2, 4, 4))
    np.testing.assert_allclose(_np(L.det(T(A))), np.linalg.det(A), rtol=1e-10)
    s, lad = L.slogdet(T(A))
    ws, wl = np.linalg.slogdet(A)
    np.testing.assert_allclose(_np(s), ws)
    np.testing.assert_allclose(_np(lad), wl, rtol=1e-12)
    np.testing.assert_allclose(_np(L.matrix_exp(T(A))), sl.expm(A), rtol=1e-10)
    np.testing.assert_allclose(_np(L.matrix_power(T(A), 5)), np.linalg.matrix_power(A, 5),
                               rtol=1e-10)
    np.testing.assert_allclose(_np(L.matrix_power(T(A), -2)), np.linalg.matrix_power(A, -2),
                               rtol=1e-8)
    B = RNG.standard_normal((5, 3))
    np.testing.assert_allclose(_np(L.pinv(T(B))), np.linalg.pinv(B), rtol=1e-10)
    b = RNG.standard_normal((5, 2))
    np.testing.assert_allclose(_np(L.lstsq(T(B), T(b)).solution), np.linalg.lstsq(B, b)[0],
                               rtol=1e-10)
    assert int(L.matrix_rank(T(np.outer(B[:, 0], B[:, 1])))) == 1
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        np.testing.assert_allclose(_np(L.matrix_norm(T(A), ord_)), np.linalg.norm(A, ord_, (-2, -1)),
                                   rtol=1e-10)
    np.testing.assert_allclose(float(L.norm(T(A))), np.linalg.norm(A.ravel()), rtol=1e-12)
    np.testing.assert_allclose(_np(L.vector_norm(T(A), 3, dim=-1)),
                               np.linalg.norm(A, 3, -1), rtol=1e-12)
    np.testing.assert_allclose(_np(L.cond(T(A))), np.linalg.cond(A), rtol=1e-10)
    np.testing.assert_allclose(_np(L.cond(T(A), 1)), np.linalg.cond(A, 1), rtol=1e-10)
    u, v = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    np.testing.assert_allclose(_np(L.cross(T(u), T(v))), np.cross(u, v), rtol=1e-12)
    np.testing.assert_allclose(_np(L.vecdot(T(u), T(v))), (u * v).sum(-1), rtol=1e-12)
    M = [RNG.standard_normal(s) for s in ((2, 3), (3, 6), (6, 2))]
    np.testing.assert_allclose(_np(L.multi_dot([T(m) for m in M])), np.linalg.multi_dot(M),
                               rtol=1e-12)
    x = RNG.standard_normal(4)
    np.testing.assert_allclose(_np(L.vander(T(x))), np.vander(x, increasing=True), rtol=1e-12)
    a = RNG.standard_normal((6, 2, 3))
    np.testing.assert_allclose(_np(L.tensorinv(T(a), ind=1)), np.linalg.tensorinv(a, ind=1),
                               rtol=1e-10)
    A4 = RNG.standard_normal((2, 3, 6))
    b4 = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(_np(L.tensorsolve(T(A4), T(b4))), np.linalg.tensorsolve(A4, b4),
                               rtol=1e-10)
    np.testing.assert_array_equal(_np(L.diagonal(T(A), offset=1)), np.diagonal(A, 1, -2, -1))
    H = _spd(3)
    np.testing.assert_allclose(float(ember.logdet(T(H))), np.linalg.slogdet(H)[1], rtol=1e-12)
    assert np.isnan(float(ember.logdet(T(-np.eye(3)))))


def test_against_torch():
    torch = pytest.importorskip("torch")
    A = RNG.standard_normal((3, 4, 4))
    H = _spd(4, (3,))
    for name, args in [("det", (A,)), ("slogdet", (A,)), ("inv", (A,)), ("matrix_exp", (A,)),
                       ("cholesky", (H,)), ("eigvalsh", (H,)), ("svdvals", (A,)),
                       ("pinv", (A[..., :3],)), ("lu_factor", (A,)), ("qr", (A,)),
                       ("matrix_rank", (A,)), ("cond", (A,)), ("solve", (A, A[..., :2]))]:
        got = getattr(L, name)(*(T(a) for a in args))
        want = getattr(torch.linalg, name)(*(torch.tensor(a) for a in args))
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_np(g), w.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


# -- errors --------------------------------------------------------------------------------------
def test_linalg_error_names_the_batch_element():
    assert issubclass(L.LinAlgError, RuntimeError)
    S = np.stack([np.eye(3), np.eye(3), np.zeros((3, 3))])
    with pytest.raises(L.LinAlgError, match=r"^linalg.inv: \(Batch element 2\): The diagonal "
                                            r"element 1 is zero, the inversion could not be "
                                            r"completed because the input matrix is singular.$"):
        L.inv(T(S))
    with pytest.raises(L.LinAlgError, match=r"^linalg.inv: The diagonal element 1 is zero"):
        L.inv(T(np.zeros((3, 3))))
    with pytest.raises(L.LinAlgError, match=r"^torch.linalg.solve: \(Batch element 2\): The "
                                            r"solver failed because the input matrix is "
                                            r"singular.$"):
        L.solve(T(S), T(np.ones((3, 3, 1))))
    with pytest.raises(L.LinAlgError, match=r"^linalg.cholesky: \(Batch element 0\): The "
                                            r"factorization could not be completed because the "
                                            r"input is not positive-definite \(the leading "
                                            r"minor of order 1 is not positive-definite\).$"):
        L.cholesky(T(-S))
    with pytest.raises(RuntimeError, match=r"torch.linalg.lu_factor: \(Batch element 2\): "
                                           r"U\[1,1\] is zero"):
        L.lu_factor(T(S))
    # the _ex variants report instead of raising
    assert _np(L.inv_ex(T(S)).info).tolist() == [0, 0, 1]
    assert _np(L.cholesky_ex(T(-S)).info).tolist() == [1, 1, 1]
    assert _np(L.solve_ex(T(S), T(np.ones((3, 3, 1)))).info).tolist() == [0, 0, 1]
    with pytest.raises(L.LinAlgError):
        L.inv_ex(T(S), check_errors=True)


@pytest.mark.parametrize("call,message", [
    (lambda: L.inv(T(np.ones((2, 3)))), "linalg.inv: A must be batches of square matrices, but "
                                        "they are 2 by 3 matrices"),
    (lambda: L.inv(T(np.ones(3))), "linalg.inv: The input tensor A must have at least 2 "
                                   "dimensions."),
    (lambda: L.inv(ember.ones(3, 3, dtype=ember.int64)),
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: L.inv(ember.ones(3, 3, dtype=ember.float16)),
     "linalg.inv: Low precision dtypes not supported. Got Half"),
    (lambda: L.solve(T(np.ones((3, 3))), T(np.ones(4))),
     r"linalg.solve: Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x1\)"),
    (lambda: L.solve(T(np.ones((3, 3))), T(np.ones((2, 4, 3)))),
     r"linalg.solve: Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x3\)"),
    (lambda: L.svd(T(np.ones(3))), "linalg.svd: The input tensor A must have at least 2 "
                                   "dimensions."),
    (lambda: L.qr(T(np.ones((3, 2))), mode="x"),
     "qr received unrecognized mode 'x' but expected one of 'reduced' \\(default\\), 'r', or "
     "'complete'"),
    (lambda: L.eigh(T(np.eye(3)), UPLO="X"), "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda: L.cross(T(np.ones((3, 2))), T(np.ones((3, 2)))),
     "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    (lambda: L.lstsq(T(np.ones((3, 2))), T(np.ones((4, 2)))),
     r"torch.linalg.lstsq: input.size\(-2\) should match other.size\(-2\)"),
    (lambda: L.matrix_power(T(np.ones((2, 3))), 2),
     "linalg.matrix_power: A must be batches of square matrices"),
    (lambda: L.solve_triangular(T(np.ones((3, 3))), T(np.ones(3)), upper=True),
     "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."),
])
def test_bad_input_gets_torchs_error(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_error_messages_match_torch():
    torch = pytest.importorskip("torch")
    S = np.stack([np.eye(3), np.zeros((3, 3))])
    for fn, args in [("inv", (S,)), ("cholesky", (-S,)), ("solve", (S, np.ones((2, 3, 1)))),
                     ("inv", (np.ones((2, 3)),)), ("det", (np.ones((2, 3)),)),
                     ("lu_factor", (S,)), ("eigh", (np.ones((2, 3)),))]:
        with pytest.raises(Exception) as te:
            getattr(torch.linalg, fn)(*(torch.tensor(a) for a in args))
        with pytest.raises(Exception) as ee:
            getattr(L, fn)(*(T(a) for a in args))
        assert str(ee.value) == str(te.value)
        assert isinstance(ee.value, L.LinAlgError) == isinstance(te.value,
                                                                 torch.linalg.LinAlgError)


def test_out_arguments():
    A = T(RNG.standard_normal((3, 3)))
    out = ember.empty(0, dtype=ember.float64)
    r = L.inv(A, out=out)
    assert r is out and tuple(out.shape) == (3, 3)
    Q, R = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64)
    L.qr(A, out=(Q, R))
    np.testing.assert_allclose(_np(Q @ R), _np(A), atol=1e-12)


# -- derivatives ---------------------------------------------------------------------------------
def _leaf(*shape, dtype=ember.float64):
    return ember.tensor(RNG.standard_normal(shape), dtype=dtype, requires_grad=True)


GRADS = [
    ("solve", lambda A, B: L.solve(A, B), [(2, 3, 3), (2, 3, 2)]),
    ("inv", L.inv, [(3, 3)]), ("det", L.det, [(2, 3, 3)]),
    ("slogdet", lambda A: L.slogdet(A).logabsdet, [(3, 3)]),
    ("lu", lambda A: L.lu(A)[1:], [(3, 4)]), ("lu tall", lambda A: L.lu_factor(A)[0], [(4, 2)]),
    ("cholesky", lambda X: L.cholesky(X @ X.mT + 3 * ember.eye(3, dtype=X.dtype)), [(3, 3)]),
    ("qr", L.qr, [(4, 3)]), ("qr wide", L.qr, [(2, 4)]),
    ("eigh", lambda X: L.eigh(X + X.mT), [(3, 3)]),
    ("svd", lambda A: L.svd(A, full_matrices=False), [(4, 3)]),
    ("svdvals", L.svdvals, [(3, 4)]),
    ("solve_triangular", lambda A, B: L.solve_triangular(A, B, upper=False, left=False),
     [(3, 3), (2, 3)]),
    ("matrix_exp", L.matrix_exp, [(3, 3)]), ("pinv", L.pinv, [(4, 3)]),
    ("householder_product", L.householder_product, [(4, 3), (2,)]),
    ("lstsq", lambda A, B: L.lstsq(A, B).solution, [(4, 3), (4, 2)]),
    ("lu_solve", lambda A, B: L.lu_solve(*L.lu_factor(A), B, adjoint=True), [(3, 3), (3, 2)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRADS)
def test_gradcheck_and_gradgradcheck(name, fn, shapes):
    xs = [_leaf(*s) for s in shapes]
    assert ember.autograd.gradcheck(fn, xs)
    assert ember.autograd.gradgradcheck(fn, xs)


def _re(z):
    """The real part as a differentiable op (a cast: ``Tensor.real`` is a plain view)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return z.to(ember.float64)


def test_complex_derivatives_and_gauge_checks():
    X, Y = _leaf(3, 3), _leaf(3, 3)

    def cplx(x, y):
        return x + y * 1j

    assert ember.autograd.gradcheck(lambda x, y: L.svdvals(cplx(x, y)), (X, Y))
    assert ember.autograd.gradcheck(lambda x, y: _re(L.det(cplx(x, y))), (X, Y))
    assert ember.autograd.gradcheck(lambda x, y: _re(L.inv(cplx(x, y))), (X, Y))
    assert ember.autograd.gradcheck(
        lambda x, y: (lambda U, S, Vh: _re(U @ Vh))(*L.svd(cplx(x, y))), (X, Y))
    # a loss that depends on the phase of a singular vector has no derivative
    A = cplx(X, Y)
    U, S, Vh = L.svd(A)
    with pytest.raises(RuntimeError, match="svd_backward: The singular vectors in the complex "
                                           "case are specified up to multiplication by e\\^{i "
                                           "phi}"):
        _re(U[:, 0]).sum().backward()
    w, V = L.eigh(A + A.mH)
    with pytest.raises(RuntimeError, match="linalg_eigh_backward: The eigenvectors in the "
                                           "complex case are specified up to multiplication"):
        _re(V).sum().backward()
    w, V = L.eigh(A + A.mH)
    _re(V * V.conj()).sum().backward()  # |V|^2 does not depend on the phase: fine


def test_eig_gradient_of_a_real_input_is_real():
    A = _leaf(3, 3)
    w, V = L.eig(A @ A.mT + ember.eye(3, dtype=A.dtype))
    _re(w).sum().backward()
    assert A.grad.dtype is ember.float64
    np.testing.assert_allclose(_np(A.grad), 2 * _np(A), rtol=1e-8)  # d tr(A A^T) / dA


def test_svd_of_repeated_singular_values_gives_finite_gradients_for_s_alone():
    A = ember.eye(3, dtype=ember.float64).requires_grad_()
    L.svd(A).S.sum().backward()  # U and Vh unused: their zero gradients must not become nan
    np.testing.assert_allclose(_np(A.grad), np.eye(3))


# -- OpenCL ----------------------------------------------------------------------------------------
OPENCL = pytest.mark.skipif(not ember.opencl.is_available(), reason="no OpenCL device")
NATIVE = [
    ("lu_factor", lambda A, B: L.lu_factor(A)), ("solve", lambda A, B: L.solve(A, B)),
    ("inv", lambda A, B: L.inv(A)), ("det", lambda A, B: L.det(A)),
    ("slogdet", lambda A, B: L.slogdet(A)),
    ("cholesky", lambda A, B: L.cholesky(A @ A.mT + 8 * ember.eye(8, dtype=A.dtype,
                                                                    device=A.device))),
    ("qr", lambda A, B: L.qr(A)), ("qr complete", lambda A, B: L.qr(A[..., :5], "complete")),
    ("eigvalsh", lambda A, B: L.eigvalsh(A + A.mT)),
    ("eigh |V|", lambda A, B: (lambda w, V: (w, V.abs()))(*L.eigh(A + A.mT))),
    ("svd", lambda A, B: (lambda U, S, Vh: (S, U.abs(), Vh.abs()))(
        *L.svd(A[..., :5], full_matrices=False))),
    ("solve_triangular", lambda A, B: L.solve_triangular(A, B, upper=True)),
    ("lu_solve adjoint", lambda A, B: L.lu_solve(*L.lu_factor(A), B, adjoint=True)),
    ("matrix_exp", lambda A, B: L.matrix_exp(A * 0.3)), ("pinv", lambda A, B: L.pinv(A)),
]


@OPENCL
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", NATIVE)
def test_opencl_kernels_match_the_cpu_without_fallback(name, fn, dtype):
    a, b = RNG.standard_normal((3, 8, 8)), RNG.standard_normal((3, 8, 2))
    dt = getattr(ember, dtype)
    want = fn(T(a, dtype=dt), T(b, dtype=dt))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CPUFallbackWarning)
        got = fn(T(a, dtype=dt, device="opencl"), T(b, dtype=dt, device="opencl"))
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    tol = 1e-9 if dtype == "float64" else 2e-3
    for g, w in zip(got, want):
        assert g.device.type == "opencl"
        np.testing.assert_allclose(_np(g), _np(w), rtol=tol, atol=tol, err_msg=name)


@OPENCL
def test_opencl_errors_and_large_matrices():
    S = np.stack([np.eye(3), np.zeros((3, 3))])
    with pytest.raises(L.LinAlgError, match=r"\(Batch element 1\)"):
        L.inv(T(S, device="opencl"))
    with pytest.raises(L.LinAlgError, match="leading minor of order 1"):
        L.cholesky(T(-S, device="opencl"))
    # above the Jacobi size the eigen/singular values come from the CPU's LAPACK
    from ember_opencl import ops_linalg_decomp
    n = ops_linalg_decomp.JACOBI_MAX + 2
    H = _spd(n)
    np.testing.assert_allclose(_np(L.eigvalsh(T(H, device="opencl"))), np.linalg.eigvalsh(H),
                               rtol=1e-10)
    a = RNG.standard_normal((200, 200))
    np.testing.assert_allclose(_np(L.det(T(a, device="opencl"))), np.linalg.det(a), rtol=1e-8)


@OPENCL
def test_opencl_gradients_match_the_cpu():
    a = RNG.standard_normal((2, 4, 4))
    grads = []
    for dev in ("cpu", "opencl"):
        A = T(a, device=dev).requires_grad_()
        (L.inv(A).sum() + L.slogdet(A).logabsdet.sum() + L.eigvalsh(A + A.mT).sum() +
         L.svdvals(A).sum()).backward()
        grads.append(_np(A.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-8, atol=1e-10)


# -- ember.func ------------------------------------------------------------------------------------
def test_vmap_of_decompositions_and_solvers_matches_the_batched_call():
    from ember.func import vmap
    A, B = T(_spd(4, (3,))), T(RNG.standard_normal((3, 4, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a batching rule, not the per-example fallback
        L_ = vmap(L.cholesky)(A)
        X = vmap(L.solve)(A, B)
        Xu = vmap(lambda b: L.solve(A[0], b))(B)  # an unbatched matrix, batched right sides
        w, V = vmap(L.eigh)(A)
    np.testing.assert_allclose(_np(L_), np.linalg.cholesky(_np(A)), rtol=1e-12)
    np.testing.assert_allclose(_np(X), np.linalg.solve(_np(A), _np(B)), rtol=1e-10)
    np.testing.assert_allclose(_np(Xu), np.linalg.solve(_np(A)[0], _np(B)), rtol=1e-10)
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(_np(A)), rtol=1e-12)


def test_vmap_names_the_singular_example():
    from ember.func import vmap
    A = np.stack([np.eye(3), np.zeros((3, 3)), np.eye(3)])
    with pytest.raises(L.LinAlgError, match=r"linalg.inv: \(Batch element 1\)"):
        vmap(L.inv)(T(A))


@pytest.mark.parametrize("fn", ["eigh", "svd"])
def test_jvp_of_singular_and_eigen_vectors_against_central_differences(fn):
    # the jvps are the transposed backward formulas, evaluated at a zero cotangent: they must
    # stay linear there (distinct eigen/singular values)
    from ember.func import jvp
    a = _spd(4) if fn == "eigh" else RNG.standard_normal((5, 3))
    da = RNG.standard_normal(a.shape)
    if fn == "eigh":
        da = da + da.T

    def f(x):
        if fn == "eigh":
            w, V = L.eigh(x)
            return V * V[..., :1, :].sign()  # a fixed sign per vector: differentiable
        U, S, Vh = L.svd(x, full_matrices=False)
        return U * U[..., :1, :].sign()

    _, tangent = jvp(f, (T(a),), (T(da),))
    h = 1e-6
    fd = (_np(f(T(a + h * da))) - _np(f(T(a - h * da)))) / (2 * h)
    np.testing.assert_allclose(_np(tangent), fd, rtol=1e-5, atol=1e-6)
