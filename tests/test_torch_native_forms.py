"""torch.* native forms (conv/norm/pool in native argument order), pre-linalg names, lazy
conj/neg probes, lp_pool and max_unpool: values against torch (optional) and numpy."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)


def _pair(*shape, positive=False):
    x = RNG.standard_normal(shape).astype(np.float64)
    if positive:
        x = np.abs(x) + 0.1
    return ember.tensor(x), torch.tensor(x)


def _same(a, b, tol=1e-10):
    if isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, tol)
        return
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)


def test_native_conv_norm_and_pool_forms_match_torch():
    e, t = _pair(2, 3, 8, 8)
    ew, tw = _pair(4, 3, 3, 3)
    _same(ember.conv2d(e, ew, None, 1, 1), torch.conv2d(t, tw, None, 1, 1))
    _same(ember.conv_transpose2d(e, ember.tensor(tw.numpy().transpose(1, 0, 2, 3).copy()),
                                 stride=2),
          torch.conv_transpose2d(t, tw.permute(1, 0, 2, 3).contiguous(), stride=2))
    e1, t1 = _pair(2, 3, 10)
    ew1, tw1 = _pair(5, 3, 3)
    _same(ember.conv1d(e1, ew1), torch.conv1d(t1, tw1))
    ew, tw = _pair(3)
    eb, tb = _pair(3)
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    _same(ember.batch_norm(e, ew, eb, rm, rv, True, 0.1, 1e-5, False),
          torch.batch_norm(t, tw, tb, trm, trv, True, 0.1, 1e-5, False))
    _same(rm, trm)
    _same(ember.layer_norm(e, [8, 8]), torch.layer_norm(t, [8, 8]))
    _same(ember.group_norm(e, 3, ew, eb), torch.group_norm(t, 3, tw, tb))
    _same(ember.max_pool2d(e, 2), torch.max_pool2d(t, 2))
    _same(ember.max_pool1d(e1, 3, 2), torch.max_pool1d(t1, 3, 2))
    _same(ember.max_pool1d_with_indices(e1, 3), torch.max_pool1d_with_indices(t1, 3))
    _same(ember.avg_pool1d(e1, 3), torch.avg_pool1d(t1, 3))
    _same(ember.adaptive_avg_pool1d(e1, 4), torch.adaptive_avg_pool1d(t1, 4))
    _same(ember.adaptive_max_pool1d(e1, 4), torch.adaptive_max_pool1d(t1, 4))
    e3, t3 = _pair(1, 2, 4, 4, 4)
    _same(ember.max_pool3d(e3, 2), torch.max_pool3d(t3, 2))


def test_pre_linalg_names_match_torch():
    ea, ta = _pair(4, 4)
    eb, tb = _pair(4, 2)
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        got = ember.chain_matmul(ea, ea, eb)
    with pytest.warns(UserWarning):
        _same(got, torch.chain_matmul(ta, ta, tb))
    _same(ember.frobenius_norm(ea, [0, 1]), torch.frobenius_norm(ta, [0, 1]))
    _same(ember.nuclear_norm(ea), torch.nuclear_norm(ta))
    _same(ember.nuclear_norm(ea, True), torch.nuclear_norm(ta, True))
    ep, tp = _pair(5, positive=True)
    eq, tq = _pair(5, positive=True)
    _same(ember.igamma(ep, eq), torch.igamma(tp, tq))
    _same(ep.igammac(eq), tp.igammac(tq))
    tri = np.triu(RNG.standard_normal((4, 4))) + 4 * np.eye(4)
    for upper, transpose, unit in [(True, False, False), (True, True, False),
                                   (False, False, True)]:
        m = tri if upper else tri.T.copy()
        _same(ember.triangular_solve(eb, ember.tensor(m), upper, transpose, unit),
              torch.triangular_solve(tb, torch.tensor(m), upper, transpose, unit))
    LU, piv = ember.lu(ea)
    tLU, tpiv = torch.linalg.lu_factor(ta)
    _same(LU, tLU)
    assert piv.tolist() == tpiv.tolist()
    assert len(ember.lu(ea, get_infos=True)) == 3
    _same(ember.lu_solve(eb, LU, piv), torch.lu_solve(tb, tLU, tpiv))
    _same(eb.lu_solve(LU, piv), tb.lu_solve(tLU, tpiv))
    geqrf = torch.geqrf(ta)
    _same(ember.orgqr(ember.tensor(geqrf[0].numpy()), ember.tensor(geqrf[1].numpy())),
          torch.orgqr(*geqrf))


def test_conj_and_neg_probes_and_view_copies():
    z = ember.tensor([1 + 2j, 3 - 1j])
    assert ember.is_conj(z) is False and ember.is_neg(z) is False
    assert ember.resolve_conj(z) is z or ember.equal(ember.resolve_conj(z), z)
    r = ember.view_as_real_copy(z)
    assert r.tolist() == [[1.0, 2.0], [3.0, -1.0]]
    r[0, 0] = 9.0
    assert z[0].item() == 1 + 2j   # a copy, not a view
    assert ember.view_as_complex_copy(ember.tensor([[1.0, 2.0]])).tolist() == [1 + 2j]
    w = ember.tensor([-2.0, 0.0, 3.0])
    assert w.sgn_() is w and w.tolist() == [-1.0, 0.0, 1.0]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lp_pool_matches_torch(n):
    shape = (2, 3) + (6,) * n
    e, t = _pair(*shape, positive=True)
    f, tf = getattr(F, f"lp_pool{n}d"), getattr(TF, f"lp_pool{n}d")
    for p, k, s, c in [(2.0, 2, None, False), (3.0, 3, 2, True)]:
        _same(f(e, p, k, s, c), tf(t, p, k, s, c))
    m = getattr(ember.nn, f"LPPool{n}d")(2, 2)
    _same(m(e), getattr(torch.nn, f"LPPool{n}d")(2, 2)(t))
    e.requires_grad_(True)
    assert ember.autograd.gradcheck(lambda x: f(x, 2.0, 2), (e[:1, :1],))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_matches_torch(n):
    shape = (2, 3) + (7,) * n
    e, t = _pair(*shape)
    tp = getattr(TF, f"max_pool{n}d")
    out, idx = tp(t, 2, return_indices=True)
    eo, ei = ember.tensor(out.numpy()), ember.tensor(idx.numpy())
    f, tf = getattr(F, f"max_unpool{n}d"), getattr(TF, f"max_unpool{n}d")
    _same(f(eo, ei, 2, output_size=shape[2:]), tf(out, idx, 2, output_size=shape[2:]))
    _same(f(eo[0], ei[0], 2, output_size=shape[2:]),
          tf(out[0], idx[0], 2, output_size=shape[2:]))   # unbatched
    m = getattr(ember.nn, f"MaxUnpool{n}d")(2)
    _same(m(eo, ei, shape), getattr(torch.nn, f"MaxUnpool{n}d")(2)(out, idx, shape))
    bad = ei.clone()
    bad.view(-1)[0] = 10 ** 6
    with pytest.raises(RuntimeError, match="Found an invalid max index: 1000000"):
        f(eo, bad, 2, output_size=shape[2:])
    with pytest.raises(RuntimeError, match=f"max_unpool{n}d: expected indices"):
        f(eo, ei[..., :1], 2)
