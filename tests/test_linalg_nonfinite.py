"""linalg on NaN, infinity and empty matrices: PyTorch 2.13's answers (errors included), the same
on every backend, and never a finite value made up from a NaN (``ops/linalg/nonfinite.py``)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

nan, inf = math.nan, math.inf
NAN_DIAG = [[nan, 1.0], [1.0, 2.0]]          # the matrix
NAN_LOW = [[2.0, 1.0], [nan, 2.0]]           # NaN below the diagonal only
NAN_UP = [[2.0, nan], [1.0, 2.0]]            # NaN above the diagonal only
INF_DIAG = [[inf, 1.0], [1.0, 2.0]]
NAN_BATCH = [[[2.0, 1.0], [1.0, 2.0]], [[nan, 1.0], [1.0, 2.0]]]  # batch element 1 has NaN


def _devices():
    out = ["cpu"]
    if ember.opencl.is_available():
        out.append("opencl")
    return out


DEVICES = _devices()


def _pair(values, device):
    return ember.tensor(values, device=device), torch.tensor(values)


def _np(x):
    return x.cpu().numpy() if isinstance(x, ember.Tensor) else x.detach().numpy()


def _same(got, want, tol=1e-5):
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol, equal_nan=True)


# -- the SVD family: NaN raises, naming the op and the batch element -----------------------------
SVD_OPS = {
    "linalg.svd": (lambda m, a: m.linalg.svd(a)),
    "linalg.svdvals": (lambda m, a: m.linalg.svdvals(a)),
    "linalg.matrix_norm": (lambda m, a: m.linalg.matrix_norm(a, ord=2)),
    "linalg.matrix_norm:-2": (lambda m, a: m.linalg.matrix_norm(a, ord=-2)),
    "linalg.matrix_norm:nuc": (lambda m, a: m.linalg.matrix_norm(a, ord="nuc")),
    "linalg.cond": (lambda m, a: m.linalg.cond(a)),
    "linalg.pinv": (lambda m, a: m.linalg.pinv(a)),
    "linalg.matrix_rank": (lambda m, a: m.linalg.matrix_rank(a)),
    "norm": (lambda m, a: m.norm(a, p="nuc")),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("values", [NAN_DIAG, NAN_LOW, NAN_UP], ids=["diag", "low", "up"])
@pytest.mark.parametrize("api", list(SVD_OPS))
def test_svd_family_raises_on_nan_like_torch(api, values, device):
    a, t = _pair(values, device)
    fn = SVD_OPS[api]
    with pytest.raises(torch.linalg.LinAlgError, match="contained non-finite values"):
        fn(torch, t)
    with pytest.raises(ember.linalg.LinAlgError) as e:
        fn(ember, a)
    msg = str(e.value)
    assert msg.startswith(api.split(":")[0] + ":"), msg
    assert "failed to converge because the input matrix contained non-finite values" in msg
    assert "SVD did not converge" not in msg


@pytest.mark.parametrize("device", DEVICES)
def test_svd_error_names_the_batch_element(device):
    a, t = _pair(NAN_BATCH, device)
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        torch.linalg.svdvals(t)
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.svdvals: \(Batch element 1\)"):
        ember.linalg.svdvals(a)


@pytest.mark.parametrize("device", DEVICES)
def test_lstsq_on_nan_raises_naming_lstsq(device):
    a, _ = _pair(NAN_DIAG, device)
    with pytest.raises(ember.linalg.LinAlgError, match="lstsq: The algorithm failed to "
                                                       "converge because the input matrix "
                                                       "contained non-finite values"):
        ember.linalg.lstsq(a, a)


@pytest.mark.parametrize("device", DEVICES)
def test_svd_of_infinity_is_nan_like_torch(device):
    a, t = _pair(INF_DIAG, device)
    _same(ember.linalg.svdvals(a), torch.linalg.svdvals(t))
    _same(ember.linalg.matrix_norm(a, ord=2), torch.linalg.matrix_norm(t, ord=2))
    U, S, Vh = ember.linalg.svd(a)
    _same(S, torch.linalg.svd(t).S)
    assert bool(U.isnan().all()) and bool(Vh.isnan().all())  # never made-up vectors


@pytest.mark.parametrize("device", DEVICES)
def test_svd_of_finite_batch_beside_infinite_matrix(device):
    vals = [[[3.0, 0.0], [0.0, 1.0]], INF_DIAG]
    a, t = _pair(vals, device)
    _same(ember.linalg.svdvals(a), torch.linalg.svdvals(t))


# -- inverse and solve: a NaN anywhere makes the whole result NaN --------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("values", [NAN_DIAG, NAN_LOW, NAN_UP, NAN_BATCH],
                         ids=["diag", "low", "up", "batch"])
def test_inv_and_solve_of_nan_match_torch(values, device):
    a, t = _pair(values, device)
    _same(ember.linalg.inv(a), torch.linalg.inv(t))
    r, tr = ember.linalg.inv_ex(a), torch.linalg.inv_ex(t)
    _same(r.inverse, tr.inverse)
    assert r.info.cpu().tolist() == tr.info.tolist()
    _same(ember.linalg.solve(a, a), torch.linalg.solve(t, t))
    rhs = ember.ones(a.shape[:-1], device=device)
    _same(ember.linalg.solve(a, rhs), torch.linalg.solve(t, torch.ones(t.shape[:-1])))
    assert bool(ember.linalg.inv(a)[..., 1, :].isnan().any())  # the issue: the row kept its NaN


def test_inv_of_nan_is_the_same_on_every_backend():
    if len(DEVICES) < 2:
        pytest.skip("one backend")
    outs = [_np(ember.linalg.inv(ember.tensor(NAN_BATCH, device=d))) for d in DEVICES]
    np.testing.assert_array_equal(np.isnan(outs[0]), np.isnan(outs[1]))


# -- Cholesky: a NaN pivot is "not positive-definite", at LAPACK's order ------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("values,upper", [(NAN_DIAG, False), (NAN_LOW, False), (NAN_UP, True),
                                          (NAN_BATCH, False), (NAN_BATCH, True)],
                         ids=["diag", "low", "up-upper", "batch", "batch-upper"])
def test_cholesky_of_nan_raises_like_torch(values, upper, device):
    a, t = _pair(values, device)
    with pytest.raises(torch.linalg.LinAlgError) as te:
        torch.linalg.cholesky(t, upper=upper)
    with pytest.raises(ember.linalg.LinAlgError) as ee:
        ember.linalg.cholesky(a, upper=upper)
    assert str(ee.value) == str(te.value)
    L, info = ember.linalg.cholesky_ex(a, upper=upper)
    tL, tinfo = torch.linalg.cholesky_ex(t, upper=upper)
    assert info.cpu().tolist() == tinfo.tolist()
    _same(L, tL)


@pytest.mark.parametrize("device", DEVICES)
def test_cholesky_nan_outside_the_read_triangle_is_ignored(device):
    a, t = _pair(NAN_UP, device)  # the lower factor never reads the upper triangle
    _same(ember.linalg.cholesky(a), torch.linalg.cholesky(t))


# -- eigh / eigvalsh: non-finite in the read triangle gives NaN, on every backend ---------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("values,uplo", [(NAN_LOW, "L"), (NAN_UP, "U"), (INF_DIAG, "L")],
                         ids=["low-L", "up-U", "inf"])
def test_eigvalsh_of_nonfinite_matches_torch(values, uplo, device):
    a, t = _pair(values, device)
    _same(ember.linalg.eigvalsh(a, UPLO=uplo), torch.linalg.eigvalsh(t, UPLO=uplo))
    w, V = ember.linalg.eigh(a, UPLO=uplo)
    _same(w, torch.linalg.eigh(t, UPLO=uplo).eigenvalues)
    assert bool(V.isnan().all())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("values,uplo", [(NAN_UP, "L"), (NAN_LOW, "U")], ids=["up-L", "low-U"])
def test_eigvalsh_ignores_the_unread_triangle(values, uplo, device):
    a, t = _pair(values, device)
    _same(ember.linalg.eigvalsh(a, UPLO=uplo), torch.linalg.eigvalsh(t, UPLO=uplo))


@pytest.mark.parametrize("device", DEVICES)
def test_eigvalsh_nan_on_the_diagonal_is_nan_not_made_up(device):
    # torch's LAPACK returns finite eigenvalues ([-1.41, 1.41]) for this matrix, made up from a
    # NaN: ember returns NaN, the same on every backend (docs/security.md's "never finite
    # garbage"); the finite batch element is unaffected
    a = ember.tensor(NAN_BATCH, device=device)
    w = ember.linalg.eigvalsh(a)
    assert bool(w[1].isnan().all())
    _same(w[0], torch.linalg.eigvalsh(torch.tensor(NAN_BATCH[0])))


def test_eigvalsh_of_nan_is_the_same_on_every_backend():
    if len(DEVICES) < 2:
        pytest.skip("one backend")
    outs = [_np(ember.linalg.eigvalsh(ember.tensor(NAN_BATCH, device=d))) for d in DEVICES]
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, equal_nan=True)


def test_nonfinite_rule_under_vmap():
    a = ember.tensor(NAN_BATCH)
    w = ember.func.vmap(ember.linalg.eigvalsh)(a)
    assert bool(w[1].isnan().all()) and not bool(w[0].isnan().any())
    with pytest.raises(ember.linalg.LinAlgError, match="non-finite"):
        ember.func.vmap(ember.linalg.svdvals)(a)


# -- empty matrices ----------------------------------------------------------------------------
EMPTY = [(0, 0), (2, 0, 0), (0, 3), (3, 0)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", EMPTY, ids=str)
@pytest.mark.parametrize("ord", [2, "nuc", "fro", 1, inf])
def test_matrix_norm_of_empty_matches_torch(shape, ord, device):
    want = torch.linalg.matrix_norm(torch.zeros(shape), ord=ord)
    got = ember.linalg.matrix_norm(ember.zeros(shape, device=device), ord=ord)
    assert tuple(got.shape) == tuple(want.shape)
    _same(got, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)], ids=str)
def test_matrix_norm_min_of_empty_raises_naming_the_op(shape, device):
    with pytest.raises(IndexError):
        torch.linalg.matrix_norm(torch.zeros(shape), ord=-2)
    with pytest.raises(IndexError, match="linalg.matrix_norm: Expected reduction dim"):
        ember.linalg.matrix_norm(ember.zeros(shape, device=device), ord=-2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 4)], ids=str)
def test_cond_of_empty_matches_torch(shape, device):
    _same(ember.linalg.cond(ember.zeros(shape, device=device)),
          torch.linalg.cond(torch.zeros(shape)))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)], ids=str)
def test_decompositions_of_empty_match_torch(shape, device):
    a, t = ember.zeros(shape, device=device), torch.zeros(shape)
    for name in ("svdvals", "inv", "cholesky", "eigvalsh"):
        got, want = getattr(ember.linalg, name)(a), getattr(torch.linalg, name)(t)
        assert tuple(got.shape) == tuple(want.shape), name
    for got, want in zip(ember.linalg.svd(a), torch.linalg.svd(t)):
        assert tuple(got.shape) == tuple(want.shape)


@pytest.mark.parametrize("device", DEVICES)
def test_slogdet_of_nan_has_sign_zero_like_torch(device):
    a, t = _pair(NAN_LOW, device)
    sign, lad = ember.linalg.slogdet(a)
    tsign, tlad = torch.linalg.slogdet(t)
    _same(sign, tsign)
    _same(lad, tlad)
