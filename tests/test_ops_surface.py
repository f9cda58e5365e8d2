"""The compositions of the numeric compositions (``ops/differences.py``, scans, statistics, products), ``ops/structure.py`` and ``ops/view_copies.py``
against torch (values, dtypes, shapes and gradients), and their errors."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)
CASES = []


def E(a):
    return ember.tensor(a)


def Tt(a):
    return torch.tensor(a)


def cmp(name, fn_e, fn_t, *args, grad=True):
    CASES.append(pytest.param(fn_e, fn_t, args, grad, id=name))


x=rng.standard_normal((4,5)); y=rng.standard_normal((3,5)); v=rng.standard_normal(5)
I=rng.integers(-20,20,(6,)); J=rng.integers(-20,20,(6,))
xs=x.copy(); xs[1,2]=xs[1,1]
cmp("diff", lambda a: ember.diff(a,2,0), lambda a: torch.diff(a,2,0), x)
cmp("diff_prepend", lambda a,b: ember.diff(a,dim=1,prepend=b[:, :2], append=b[:,:1]), lambda a,b: torch.diff(a,dim=1,prepend=b[:, :2],append=b[:,:1]), x, x)
cmp("diff_bool", lambda a: ember.diff(a), lambda a: torch.diff(a), x>0)
cmp("trace", ember.trace, torch.trace, x)
cmp("sinc", ember.sinc, torch.sinc, np.array([0.0,0.5,-1.3,2.0]))
cmp("logcumsumexp", lambda a: ember.logcumsumexp(a,1), lambda a: torch.logcumsumexp(a,1), x*30)
cmp("cummax", lambda a: ember.cummax(a,1), lambda a: torch.cummax(a,1), np.round(xs))
cmp("cummin", lambda a: ember.cummin(a,0), lambda a: torch.cummin(a,0), np.round(xs))
xn=x.copy(); xn[2,1]=np.nan
cmp("cummax nan", lambda a: ember.cummax(a,1), lambda a: torch.cummax(a,1), xn, grad=False)
cmp("cummax int", lambda a: ember.cummax(a,0), lambda a: torch.cummax(a,0), I, grad=False)
cmp("rot90", lambda a: ember.rot90(a), lambda a: torch.rot90(a), x)
cmp("rot90 k3", lambda a: ember.rot90(a,-1,[1,0]), lambda a: torch.rot90(a,-1,[1,0]), x)
cmp("kron", ember.kron, torch.kron, x[:2,:3], rng.standard_normal((2,2,2)))
cmp("inner", ember.inner, torch.inner, x, y)
cmp("renorm", lambda a: ember.renorm(a,2,0,1.0), lambda a: torch.renorm(a,2,0,1.0), x)
cmp("renorm p1", lambda a: ember.renorm(a,1,1,1.5), lambda a: torch.renorm(a,1,1,1.5), x)
cmp("trapezoid", lambda a: ember.trapezoid(a, dx=0.5), lambda a: torch.trapezoid(a, dx=0.5), x)
cmp("trapz_x", lambda a,b: ember.trapz(a, b), lambda a,b: torch.trapz(a, b), x, np.sort(v))
cmp("cumulative_trapezoid", lambda a,b: ember.cumulative_trapezoid(a, b, dim=1), lambda a,b: torch.cumulative_trapezoid(a, b, dim=1), x, np.sort(v))
cmp("cov", ember.cov, torch.cov, x)
cmp("cov_w", lambda a,f,w: ember.cov(a, correction=0, fweights=f, aweights=w), lambda a,f,w: torch.cov(a, correction=0, fweights=f, aweights=w), x, np.array([1,2,1,3,1]), np.array([.5,1.,2.,1.,.3]))
cmp("cov_w1", lambda a,f,w: ember.cov(a, fweights=f, aweights=w), lambda a,f,w: torch.cov(a, fweights=f, aweights=w), x, np.array([1,2,1,3,1]), np.array([.5,1.,2.,1.,.3]))
cmp("cov1d", ember.cov, torch.cov, v)
cmp("corrcoef", ember.corrcoef, torch.corrcoef, x)
cmp("diag_embed", lambda a: ember.diag_embed(a,1,0,2), lambda a: torch.diag_embed(a,1,0,2), x)
cmp("diag_embed2", lambda a: ember.diag_embed(a,-2), lambda a: torch.diag_embed(a,-2), x)
cmp("diagflat", lambda a: ember.diagflat(a,1), lambda a: torch.diagflat(a,1), x[:2,:2])
cmp("block_diag", lambda a,b,c: ember.block_diag(a,b,c), lambda a,b,c: torch.block_diag(a,b,c), x[:2], v, np.array(3.0))
cmp("block_diag int", lambda a,b: ember.block_diag(a,b), lambda a,b: torch.block_diag(a,b), I[:2], np.ones((2,2)))
cmp("cartesian_prod", lambda a,b: ember.cartesian_prod(a,b), lambda a,b: torch.cartesian_prod(a,b), v[:3], v[:2])
cmp("combinations", lambda a: ember.combinations(a), lambda a: torch.combinations(a), v)
cmp("combinations_r", lambda a: ember.combinations(a,3,True), lambda a: torch.combinations(a,3,True), v[:3])
cmp("meshgrid", lambda a,b: ember.meshgrid(a,b,indexing="xy"), lambda a,b: torch.meshgrid(a,b,indexing="xy"), v[:3], v[:2])
cmp("meshgrid3", lambda a,b,c: ember.meshgrid(a,b,c,indexing="xy"), lambda a,b,c: torch.meshgrid(a,b,c,indexing="xy"), v[:3], v[:2], v[:4])
idx=rng.integers(0,5,(4,2))
cmp("take_along_dim", lambda a,i: ember.take_along_dim(a,i,1), lambda a,i: torch.take_along_dim(a,i,1), x, idx)
cmp("take_along_dim b", lambda a,i: ember.take_along_dim(a,i,1), lambda a,i: torch.take_along_dim(a,i,1), x, idx[:1])
cmp("take_along_dim none", lambda a,i: ember.take_along_dim(a,i), lambda a,i: torch.take_along_dim(a,i), x, idx)
cmp("index_fill", lambda a,i: ember.index_fill(a,1,i,-2.0), lambda a,i: torch.index_fill(a,1,i,-2.0), x, np.array([0,-1]))
m=rng.random((4,5))>0.5
cmp("masked_scatter", lambda a,mm,s: a.masked_scatter(mm,s), lambda a,mm,s: a.masked_scatter(mm,s), x, m, rng.standard_normal(20))
cmp("masked_scatter bc", lambda a,mm,s: a.masked_scatter(mm,s), lambda a,mm,s: a.masked_scatter(mm,s), x, m[0], rng.standard_normal(20))
cmp("put", lambda a,i,s: a.put(i,s), lambda a,i,s: a.put(i,s), x, np.array([0,3,-1]), np.array([1.,2,3]))
cmp("put acc", lambda a,i,s: a.put(i,s,True), lambda a,i,s: a.put(i,s,True), x, np.array([0,3,0]), np.array([1.,2,3]))
cmp("isin", lambda a,b: ember.isin(a,b), lambda a,b: torch.isin(a,b), I, J)
cmp("isin inv", lambda a,b: ember.isin(a,b,invert=True), lambda a,b: torch.isin(a,b,invert=True), I, J[:3])
s=np.sort(rng.standard_normal(6)); q=rng.standard_normal((2,3)); q[0,0]=s[2]
cmp("searchsorted", lambda a,b: ember.searchsorted(a,b), lambda a,b: torch.searchsorted(a,b), s, q)
cmp("searchsorted r", lambda a,b: ember.searchsorted(a,b,right=True), lambda a,b: torch.searchsorted(a,b,right=True), s, q)
cmp("searchsorted nd", lambda a,b: ember.searchsorted(a,b,side="right", out_int32=True), lambda a,b: torch.searchsorted(a,b,side="right", out_int32=True), np.sort(x,1), q[:, :2].repeat(2,0))
cmp("searchsorted scalar", lambda a: ember.searchsorted(a,0.1), lambda a: torch.searchsorted(a,0.1), s)
cmp("bucketize", lambda a,b: ember.bucketize(a,b,right=True), lambda a,b: torch.bucketize(a,b,right=True), q, s)
cmp("bincount", lambda a: ember.bincount(a,minlength=3), lambda a: torch.bincount(a,minlength=3), np.abs(I))
cmp("bincount w", lambda a,w: ember.bincount(a,w), lambda a,w: torch.bincount(a,w), np.abs(I), rng.standard_normal(6).astype(np.float32), grad=False)
cmp("histc", lambda a: ember.histc(a,7), lambda a: torch.histc(a,7), x, grad=False)
cmp("histc r", lambda a: ember.histc(a,4,-1,1), lambda a: torch.histc(a,4,-1,1), x, grad=False)
cmp("heaviside", lambda a,b: ember.heaviside(a,b), lambda a,b: torch.heaviside(a,b), np.array([-1.,0,2,0]), np.array([.5,.7,.1,.2]), grad=False)
cmp("gcd", ember.gcd, torch.gcd, I, J)
cmp("lcm", ember.lcm, torch.lcm, I, J)
cmp("ldexp", ember.ldexp, torch.ldexp, x[0], np.array([1,2,-1,0,3]), grad=False)  # torch: 0 gradient for negative int exponents
cmp("float_power", ember.float_power, torch.float_power, np.abs(x).astype(np.float32), 2.5)
cmp("rsub", lambda a,b: ember.rsub(a,b,alpha=2), lambda a,b: torch.rsub(a,b,alpha=2), x, x)
cmp("rsub scalar", lambda a: ember.rsub(a,3), lambda a: torch.rsub(a,3), x)
cmp("select_scatter", lambda a,b: ember.select_scatter(a,b,0,1), lambda a,b: torch.select_scatter(a,b,0,1), x, v)
cmp("slice_scatter", lambda a,b: ember.slice_scatter(a,b,1,0,5,2), lambda a,b: torch.slice_scatter(a,b,1,0,5,2), x, x[:, :3])
cmp("diagonal_scatter", lambda a,b: ember.diagonal_scatter(a,b,1), lambda a,b: torch.diagonal_scatter(a,b,1), x, v[:4])
cmp("hsplit", lambda a: ember.hsplit(a,[1,3]), lambda a: torch.hsplit(a,[1,3]), x)
cmp("vsplit", lambda a: ember.vsplit(a,2), lambda a: torch.vsplit(a,2), x)
cmp("split_with_sizes", lambda a: ember.split_with_sizes(a,[2,3],1), lambda a: torch.split_with_sizes(a,[2,3],1), x)
cmp("diagonal_copy", lambda a: ember.diagonal_copy(a,1), lambda a: torch.diagonal_copy(a,1), x)
cmp("t_copy", ember.t_copy, torch.t_copy, x)
cmp("expand_copy", lambda a: ember.expand_copy(a,(2,5)), lambda a: torch.expand_copy(a,(2,5)), v)
cmp("unfold_copy", lambda a: ember.unfold_copy(a,1,2,2), lambda a: torch.unfold_copy(a,1,2,2), x)
cmp("narrow_copy", lambda a: ember.narrow_copy(a,1,1,2), lambda a: torch.narrow_copy(a,1,1,2), x)
cmp("view_copy", lambda a: ember.view_copy(a,(5,4)), lambda a: torch.view_copy(a,(5,4)), x)
cmp("isreal", ember.isreal, torch.isreal, x, grad=False)


@pytest.mark.parametrize("fn_e,fn_t,args,grad", CASES)
def test_against_torch(fn_e, fn_t, args, grad):
    ea = [E(a) if isinstance(a, np.ndarray) else a for a in args]
    ta = [Tt(a) if isinstance(a, np.ndarray) else a for a in args]
    if grad:
        for x in ea + ta:
            if hasattr(x, "is_floating_point") and x.is_floating_point():
                x.requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ge, gt = fn_e(*ea), fn_t(*ta)

    def flat(o):
        return list(o) if isinstance(o, (tuple, list)) else [o]
    assert len(flat(ge)) == len(flat(gt))
    for a, b in zip(flat(ge), flat(gt)):
        bn, an = b.detach().numpy(), a.detach().numpy()
        assert an.shape == bn.shape
        assert str(an.dtype) == str(bn.dtype)
        np.testing.assert_allclose(an, bn, rtol=1e-7, atol=1e-9, equal_nan=True)
    o_e = [o for o in flat(ge) if o.is_floating_point()]
    o_t = [o for o in flat(gt) if o.is_floating_point()]
    if grad and o_e and o_e[0].requires_grad:
        sum(o.sum() for o in o_e).backward()
        sum(o.sum() for o in o_t).backward()
        for x, y in zip(ea, ta):
            if getattr(y, "grad", None) is not None:
                np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_predicates_and_errors():
    x = E(np.ones((2, 3)))
    assert ember.is_signed(E(np.array([1]))) and not ember.is_signed(x.bool())
    assert ember.get_device(x) == -1 and x.is_same_size(E(np.zeros((2, 3))))
    assert ember.is_nonzero(E(np.array([1.0])))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        ember.is_nonzero(x)
    with pytest.raises(RuntimeError, match="different dtypes"):
        ember.heaviside(x, x.int())
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        ember.gcd(x.float(), x.float())
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.bincount(E(np.array([1, -1])))
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 3"):
        ember.split_with_sizes(x, [1, 1], 1)
    with pytest.raises(RuntimeError, match="src to have a size equal to the slice"):
        ember.select_scatter(x, E(np.ones(2)), 0, 0)
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        ember.searchsorted(E(np.zeros((2, 3))), E(np.zeros((3, 3))))
    with pytest.warns(UserWarning, match="indexing argument"):
        ember.meshgrid(E(np.ones(2)), E(np.ones(3)))
