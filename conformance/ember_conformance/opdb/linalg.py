"""Entries for ``ember.ops.linalg``: matmul and its special cases, fused multiply-adds, outer,
vdot, tensordot and einsum (the nuclear norm, which needs ``linalg_svdvals``, is in
``reduction``).

Operands come in every layout (a layout that needs more dims than an operand has leaves it
contiguous), with broadcast batch dims, 1-D operands, empty inner and outer dims, and 0-d
operands where the op takes them.
"""
from __future__ import annotations

import math

import ember

from . import FLOATS, INTS, LAYOUTS, OpInfo, SampleInput, make_tensor

NUMERIC = FLOATS + INTS
# float32 products: a backend may block and order the inner sums as it likes
LOOSE32 = {"float32": (1e-5, 1e-5)}


def C(shapes, layout="contiguous", **kw):
    """One sample case: operands of ``shapes`` in ``layout``, keyword args ``kw``."""
    return tuple(tuple(s) for s in shapes), layout, kw


def samples(cases, low=-3.0, high=3.0, seed=0):
    """Samples of a several-operand op: operand ``j`` of case ``i`` is ``make_tensor`` with
    seed ``seed + 10 * i + j``; the case's layout applies to every operand."""
    def gen(dtype):
        for i, (shapes, layout, kw) in enumerate(cases):
            args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
            desc = f"{dtype} {' @ '.join(str(list(s)) for s in shapes)} {layout}" + \
                (f" ({args})" if args else "")
            yield SampleInput(desc, lambda dev, s=seed + 10 * i, shs=shapes, lay=layout, kw=kw,
                              dt=dtype: (
                tuple(make_tensor(s + j, sh, dt, dev, low=low, high=high, layout=lay)
                      for j, sh in enumerate(shs)), dict(kw)))
    return gen


def in_layouts(shapes, layouts=LAYOUTS, **kw):
    return [C(shapes, lay, **kw) for lay in layouts]


MATMUL = in_layouts([(3, 4), (4, 5)]) + [
    C([(4,), (4,)]), C([(4,), (4,)], "strided"), C([(3, 4), (4,)], "transposed"),
    C([(4,), (4, 5)], "expanded"), C([(2, 3, 4), (4, 5)], "strided"),
    C([(3, 4), (2, 4, 5)], "transposed"), C([(2, 1, 3, 4), (5, 4, 2)]),
    C([(2, 1, 3, 4), (5, 4, 2)], "expanded"), C([(4,), (2, 4, 3)], "transposed"),
    C([(2, 3, 4), (4,)]), C([(1, 4), (4, 1)]),
    # empty: no rows, no inner dim (a zero result), no batch, empty vectors
    C([(0, 4), (4, 5)]), C([(3, 0), (0, 5)]), C([(2, 0, 3, 4), (4, 1)]), C([(0,), (0,)]),
    # errors every backend raises: mismatched inner dims, a 0-d operand
    C([(3, 4), (5, 6)]), C([(), (4,)]),
]
MM = in_layouts([(3, 4), (4, 5)]) + [C([(0, 4), (4, 5)]), C([(3, 0), (0, 5)])]
BMM = in_layouts([(2, 3, 4), (2, 4, 5)]) + [C([(0, 3, 4), (0, 4, 5)]),
                                             C([(2, 3, 0), (2, 0, 5)])]
MV = in_layouts([(3, 4), (4,)]) + [C([(0, 4), (4,)]), C([(3, 0), (0,)])]
VEC = [C([(5,), (5,)]), C([(5,), (5,)], "strided"), C([(5,), (5,)], "expanded"),
       C([(0,), (0,)])]
OUTER = [C([(3,), (4,)]), C([(3,), (4,)], "strided"), C([(3,), (4,)], "expanded"),
         C([(0,), (4,)]), C([(1,), (1,)])]
ADDMM = [C([b, (3, 4), (4, 5)], lay) for b in [(3, 5), (5,)] for lay in LAYOUTS] + [
    C([(1, 5), (3, 4), (4, 5)], "transposed"), C([(3, 1), (3, 4), (4, 5)], "strided"),
    C([(), (3, 4), (4, 5)]), C([(0, 5), (0, 4), (4, 5)]), C([(3, 5), (3, 0), (0, 5)]),
]
BADDBMM = [C([(2, 3, 5), (2, 3, 4), (2, 4, 5)], lay) for lay in LAYOUTS] + [
    C([(3, 5), (2, 3, 4), (2, 4, 5)], "transposed"), C([(5,), (2, 3, 4), (2, 4, 5)], "strided"),
    C([(1, 1, 5), (2, 3, 4), (2, 4, 5)]), C([(), (2, 3, 4), (2, 4, 5)], "expanded"),
    C([(0, 3, 5), (0, 3, 4), (0, 4, 5)]), C([(2, 3, 5), (2, 3, 0), (2, 0, 5)]),
]
ADDMV = [C([(3,), (3, 4), (4,)], lay) for lay in LAYOUTS] + [
    C([(1,), (3, 4), (4,)], "transposed"), C([(), (3, 4), (4,)], "strided"),
    C([(0,), (0, 4), (4,)]), C([(3,), (3, 0), (0,)]),
]
ADDR = [C([(3, 4), (3,), (4,)], lay) for lay in LAYOUTS] + [
    C([(4,), (3,), (4,)], "strided"), C([(), (3,), (4,)]), C([(0, 4), (0,), (4,)])]
ADDBMM = [C([(3, 5), (2, 3, 4), (2, 4, 5)], lay) for lay in LAYOUTS] + [
    C([(5,), (2, 3, 4), (2, 4, 5)], "transposed"), C([(3, 5), (0, 3, 4), (0, 4, 5)]),
    C([(3, 5), (2, 3, 0), (2, 0, 5)])]
TRACE = in_layouts([(4, 3)]) + [C([(3, 5)], "transposed"), C([(0, 3)])]


def _full(cases, shape):
    """Only the cases whose ``self`` already has the result's ``shape`` (in-place calls)."""
    return [c for c in cases if c[0][0] == shape]


def _scaled(cases, **kw):
    return [(shapes, lay, {**c_kw, **kw}) for shapes, lay, c_kw in cases]


def _inplace(name):
    def run(x, *args, **kw):
        y = x.clone()
        out = getattr(y, name)(*args, **kw)
        assert out is y, "in-place ops return self"
        return y
    return run


def _beta0_nan(fn):
    """beta=0 ignores ``self``, NaN and inf included."""
    def run(x, *args):
        return fn(ember.where(x > 0, math.nan, x), *args, beta=0, alpha=2)
    return run


def _fn(name):
    def run(*args, **kw):
        return getattr(ember, name)(*args, **kw)
    run.__name__ = name
    return run


TENSORDOT = [
    C([(3, 4, 5), (4, 5, 2)], dims=2), C([(3, 4, 5), (4, 5, 2)], "transposed", dims=2),
    C([(3, 4), (4, 5)], "strided", dims=1), C([(3, 4), (2, 5)], dims=0),
    C([(3, 4, 5), (5, 3, 2)], "expanded", dims=([0, 2], [1, 0])),
    C([(3, 4), (4, 2)], dims=([-1], [0])), C([(2, 3), (3, 2)], dims=[[1, 0], [0, 1]]),
    C([(0, 4), (4, 5)], dims=1), C([(3, 0), (0, 5)], dims=1), C([(), ()], dims=0),
]

EINSUM = [  # (equation, operand shapes, layouts)
    ("ij,jk->ik", [(3, 4), (4, 5)], LAYOUTS),
    ("ij,jk", [(3, 4), (4, 5)], ("contiguous",)),
    ("ii->i", [(4, 4)], ("contiguous", "transposed")),
    ("ii", [(4, 4)], ("strided",)),
    ("ij->ji", [(3, 4)], ("contiguous", "transposed")),
    ("ij->", [(3, 4)], ("expanded",)),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], ("contiguous", "transposed", "strided")),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)], ("contiguous", "transposed")),
    ("b...,...->b...", [(2, 3, 4), (4,)], ("contiguous",)),
    ("i,j->ij", [(3,), (4,)], ("contiguous", "strided")),
    ("i,i->", [(4,), (4,)], ("contiguous", "expanded")),
    ("ij,ij->ij", [(3, 4), (1, 4)], ("contiguous",)),
    ("bn,anm,bm->ba", [(2, 3), (5, 3, 4), (2, 4)], ("contiguous", "transposed")),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], ("contiguous",)),
    ("iij->j", [(3, 3, 2)], ("contiguous",)),
    ("i,->i", [(3,), ()], ("contiguous",)),
    (",->", [(), ()], ("contiguous",)),
    ("ij,jk->ik", [(0, 4), (4, 5)], ("contiguous",)),
    ("ij,jk->ik", [(3, 0), (0, 5)], ("contiguous",)),
    ("i->", [(0,)], ("contiguous",)),
]


def _einsum_samples(dtype):
    seed = 500
    for eq, shapes, layouts in EINSUM:
        for lay in layouts:
            seed += 10
            yield SampleInput(f"{dtype} {eq} {[list(s) for s in shapes]} {lay}",
                              lambda dev, s=seed, eq=eq, shs=shapes, lay=lay, dt=dtype: (
                                  (eq,) + tuple(make_tensor(s + j, sh, dt, dev, layout=lay)
                                                for j, sh in enumerate(shs)), {}))


def _einsum(eq, *operands):
    return ember.einsum(eq, *operands)


def _einsum_sublist(a, b):
    return ember.einsum(a, [0, 1], b, [1, 2], [0, 2])


def _einsum_list(a, b):
    return ember.einsum("bij,bkj->bik", [a, b])


MATMUL_T = dict(tolerances=LOOSE32)
OPS = [
    # with gradients, matmul takes torch's decomposition: the vector @ matrix squeeze, folded
    # products viewed back (_unsafe_view), batch operands expanded and reshaped
    OpInfo("matmul", _fn("matmul"), samples(MATMUL), NUMERIC,
           covers=("matmul", "_squeeze_row", "_unsafe_view", "_reshape_alias", "expand"),
           **MATMUL_T),
    OpInfo("matmul operator", lambda a, b: a @ b, samples(MATMUL[:4]), NUMERIC,
           covers=("matmul",), **MATMUL_T),
    OpInfo("mm", _fn("mm"), samples(MM), NUMERIC, covers=("matmul",), **MATMUL_T),
    OpInfo("bmm", _fn("bmm"), samples(BMM), NUMERIC, covers=("matmul",), **MATMUL_T),
    OpInfo("mv", _fn("mv"), samples(MV), NUMERIC, covers=("matmul",), **MATMUL_T),
    OpInfo("dot", _fn("dot"), samples(VEC), NUMERIC, covers=("matmul",), **MATMUL_T),
    OpInfo("vdot", _fn("vdot"), samples(VEC), NUMERIC, covers=("vdot",), **MATMUL_T),
    OpInfo("outer", _fn("outer"), samples(OUTER), NUMERIC, covers=("outer",)),
    OpInfo("ger", _fn("ger"), samples(OUTER[:2]), NUMERIC, covers=("outer",)),
    # fused multiply-adds: beta * self + alpha * (a @ b)
    OpInfo("addmm", _fn("addmm"), samples(ADDMM), NUMERIC, covers=("addmm",), **MATMUL_T),
    OpInfo("addmm scaled", _fn("addmm"), samples(_scaled(ADDMM[:6], beta=2, alpha=-3)),
           NUMERIC, covers=("addmm",), **MATMUL_T),
    OpInfo("addmm float scalars", _fn("addmm"),
           samples(_scaled(ADDMM[:6], beta=0.5, alpha=1.5)), NUMERIC, covers=("addmm",),
           **MATMUL_T),  # integer tensors truncate the scalars
    OpInfo("addmm beta=0 nan", _beta0_nan(_fn("addmm")), samples(ADDMM[:6]), FLOATS,
           covers=("addmm",), **MATMUL_T),
    OpInfo("addmm_", _inplace("addmm_"), samples(_scaled(_full(ADDMM, (3, 5)), beta=2, alpha=-1)),
           NUMERIC, covers=("addmm", "addmm_"), differentiable=False, **MATMUL_T),
    OpInfo("baddbmm", _fn("baddbmm"), samples(BADDBMM), NUMERIC, covers=("baddbmm",),
           **MATMUL_T),
    OpInfo("baddbmm scaled", _fn("baddbmm"), samples(_scaled(BADDBMM[:6], beta=-1, alpha=2)),
           NUMERIC, covers=("baddbmm",), **MATMUL_T),
    OpInfo("baddbmm beta=0 nan", _beta0_nan(_fn("baddbmm")), samples(BADDBMM[:6]), FLOATS,
           covers=("baddbmm",), **MATMUL_T),
    OpInfo("baddbmm_", _inplace("baddbmm_"), samples(_scaled(_full(BADDBMM, (2, 3, 5)), alpha=2)),
           NUMERIC, covers=("baddbmm", "baddbmm_"), differentiable=False, **MATMUL_T),
    OpInfo("addmv", _fn("addmv"), samples(ADDMV), NUMERIC, covers=("addmv",), **MATMUL_T),
    OpInfo("addmv scaled", _fn("addmv"), samples(_scaled(ADDMV[:6], beta=3, alpha=-2)),
           NUMERIC, covers=("addmv",), **MATMUL_T),
    OpInfo("addmv beta=0 nan", _beta0_nan(_fn("addmv")), samples(ADDMV[:6]), FLOATS,
           covers=("addmv",), **MATMUL_T),
    OpInfo("addmv_", _inplace("addmv_"), samples(_scaled(_full(ADDMV, (3,)), beta=0.5)), FLOATS,
           covers=("addmv", "addmv_"), differentiable=False, **MATMUL_T),
    OpInfo("addr", _fn("addr"), samples(ADDR), NUMERIC, covers=("addr",), **MATMUL_T),
    OpInfo("addr scaled", _fn("addr"), samples(_scaled(ADDR[:6], beta=0.5, alpha=-2)), FLOATS,
           covers=("addr",), **MATMUL_T),
    OpInfo("addr beta=0 nan", _beta0_nan(_fn("addr")), samples(ADDR[:4]), FLOATS,
           covers=("addr",), **MATMUL_T),
    OpInfo("addbmm", _fn("addbmm"), samples(ADDBMM), NUMERIC, covers=("addbmm",), **MATMUL_T),
    OpInfo("addbmm scaled", _fn("addbmm"), samples(_scaled(ADDBMM[:6], beta=-1, alpha=0.5)),
           FLOATS, covers=("addbmm",), **MATMUL_T),
    OpInfo("addbmm beta=0 nan", _beta0_nan(_fn("addbmm")), samples(ADDBMM[:4]), FLOATS,
           covers=("addbmm",), **MATMUL_T),
    OpInfo("addr_", _inplace("addr_"), samples(_scaled(_full(ADDR, (3, 4)), beta=2, alpha=-1)),
           NUMERIC, covers=("addr", "addr_"), differentiable=False, **MATMUL_T),
    OpInfo("addbmm_", _inplace("addbmm_"), samples(_scaled(_full(ADDBMM, (3, 5)), alpha=2)),
           NUMERIC, covers=("addbmm", "addbmm_"), differentiable=False, **MATMUL_T),
    OpInfo("trace", _fn("trace"), samples(TRACE), NUMERIC, covers=("trace",)),
    # contractions
    OpInfo("tensordot", _fn("tensordot"), samples(TENSORDOT), NUMERIC, covers=("tensordot",),
           **MATMUL_T),
    # int32 left out: PyTorch's int32 einsum result dtype depends on its contraction path
    # (int64 where it sums one operand first, sometimes an error); ember keeps the dtype
    OpInfo("einsum", _einsum, _einsum_samples, FLOATS + ("int64",), covers=("einsum",),
           **MATMUL_T),
    OpInfo("einsum sublist", _einsum_sublist, samples(in_layouts([(3, 4), (4, 5)])), NUMERIC,
           covers=("einsum",), **MATMUL_T),
    OpInfo("einsum operand list", _einsum_list,
           samples(in_layouts([(2, 3, 4), (2, 5, 4)])), NUMERIC, covers=("einsum",),
           **MATMUL_T),
]


def _lowrank_product(which):
    """A rank-2 matrix's reconstruction from svd_lowrank / pca_lowrank with q above the rank:
    exact whatever random start the algorithm drew, so devices can be compared. Forward only:
    a zero singular value makes the SVD's derivative singular (tests/test_lowrank.py checks
    gradients on a full-rank matrix), and a random start refuses vmap's randomness="error"
    (as torch's)."""
    def run(a, b):
        m = a @ b
        if which == "pca":
            u, s, v = ember.pca_lowrank(m, q=3, center=False)
        else:
            u, s, v = ember.svd_lowrank(m, q=3)
        return u @ ember.diag(s) @ v.mH
    run.__name__ = f"{which}_lowrank"
    return run


def _lowrank_samples(dtype):
    yield SampleInput(f"{dtype} (5x2)@(2x4)", lambda dev, dt=dtype: (
        (make_tensor(301, (5, 2), dt, dev), make_tensor(302, (2, 4), dt, dev)), {}))


_LOWRANK = dict(covers=(), differentiable=False, vmap=False,
                tolerances={"float32": (1e-3, 1e-4), "float64": (1e-6, 1e-8)})
OPS += [OpInfo("svd_lowrank", _lowrank_product("svd"), _lowrank_samples, FLOATS, **_LOWRANK),
        OpInfo("pca_lowrank", _lowrank_product("pca"), _lowrank_samples, FLOATS, **_LOWRANK)]


def _householder_samples(dtype):
    for i, shape in enumerate(((5, 3), (2, 3, 4))):
        yield SampleInput(f"{dtype}{list(shape)}", lambda dev, s=shape, i=i, dt=dtype: (
            (make_tensor(330 + i, s, dt, dev),), {}))


def _ormqr(x):
    """Q^T @ x with Q from a fixed matrix's geqrf: differentiable in x (geqrf has no
    derivative, as torch's)."""
    m = x.shape[-2]
    fixed = ember.linspace(-1.0, 2.0, m * 3, dtype=x.dtype, device=x.device).reshape(m, 3)
    a, tau = ember.geqrf(fixed.sin() + ember.eye(m, 3, dtype=x.dtype, device=x.device))
    return ember.ormqr(a, tau, x, True, True)


OPS += [OpInfo("geqrf", lambda x: tuple(ember.geqrf(x)), _householder_samples, FLOATS,
               covers=(), differentiable=False, vmap=False,
               tolerances={"float32": (1e-4, 1e-5)}),
        OpInfo("ormqr", _ormqr, _householder_samples, FLOATS, covers=(), vmap=False,
               tolerances={"float32": (1e-4, 1e-5)})]


def _lobpcg(x):
    """The 2 largest eigenvalues of a well-separated symmetric matrix built from x (random
    start, so only the converged values are compared)."""
    n = x.shape[-1]
    spread = ember.arange(n, dtype=x.dtype, device=x.device)
    return ember.lobpcg(x @ x.mT / n + ember.diag(spread), k=2)[0]


OPS += [OpInfo("lobpcg", _lobpcg,
               lambda dtype: iter([SampleInput(f"{dtype}[12, 12]", lambda dev, dt=dtype: (
                   (make_tensor(340, (12, 12), dt, dev),), {}))]),
               FLOATS, covers=(), differentiable=False, vmap=False,
               tolerances={"float32": (1e-3, 1e-3), "float64": (1e-6, 1e-6)})]
