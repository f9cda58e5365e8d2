"""Entries for the compositions of the numeric compositions (``ops/differences.py``, the scans, statistics and products), ``ops/structure.py`` and
``ops/view_copies.py`` (issue #25): values on the backend under test against the CPU,
gradients and double backward against finite differences where differentiable. They cover no
registry op of their own. ``bincount`` and ``histc`` read their input's values for the output
length/range (as PyTorch's do), so their inputs are made inside the entry."""
from __future__ import annotations

import ember

from . import FLOATS, OpInfo, SampleInput, make_tensor
from ._cases import entry

_LOOSE = {"float32": (1e-4, 1e-5)}
_INTS = ("int64", "int32")
_DEV = ("fn", lambda dev, dt: dev)


def _long(values):
    return ("fn", lambda dev, dt: ember.tensor(values, dtype=ember.int64, device=dev))


def _sorted(values):
    return ("fn", lambda dev, dt: ember.tensor(values, dtype=dt, device=dev))


def _mask(values):
    return ("fn", lambda dev, dt: ember.tensor(values, dtype=ember.bool, device=dev))


def _bincount(dev, **kw):
    return ember.bincount(ember.tensor([3, 0, 2, 3, 7, 3], device=dev), **kw)


def _histc(dev, dtype=ember.float64, **kw):
    x = ember.tensor([-1.5, 0.2, 0.7, 0.7, 2.0, 3.1, -0.4], dtype=dtype, device=dev)
    return ember.histc(x, **kw)


OPS = [
    entry("diff", lambda x, *a, **kw: ember.diff(x, *a, **kw),
          ("n 2 dim 0", [((4, 5), "x"), ("const", 2), ("const", 0)], {}),
          ("prepend, append", [((3, 4), "l")],
           dict(dim=1, prepend=None, append=None)),
          ("bool", [((3, 5), "b")], {})),
    entry("trapezoid", lambda y, *a, **kw: ember.trapezoid(y, *a, **kw),
          ("dx", [((3, 5), "x")], dict(dx=0.5)),
          ("x samples", [((3, 5), "l"), _sorted([0.0, 0.3, 0.35, 1.0, 2.0])], {})),
    entry("cumulative_trapezoid", lambda y, *a, **kw: ember.cumulative_trapezoid(y, *a, **kw),
          ("x samples dim 0", [((4, 3), "x"), _sorted([0.0, 0.5, 0.75, 2.0])], dict(dim=0))),
    entry("cummax", lambda x, d: ember.cummax(x, d), ("dim 1", [((3, 6), "x"), ("const", 1)], {}),
          ("dim 0", [((5, 2), "l"), ("const", 0)], {}), dtypes=("float32", "float64") + _INTS,
          grad_dtypes=("float32", "float64"), covers=("cummax",)),
    entry("cummin", lambda x, d: ember.cummin(x, d), ("dim 1", [((3, 6), "x"), ("const", 1)], {}),
          dtypes=("float32", "float64") + _INTS, grad_dtypes=("float32", "float64"),
          covers=("cummin",)),
    entry("logcumsumexp", lambda x, d: ember.logcumsumexp(x, d),
          ("dim 1", [((3, 6), ("f", -20.0, 20.0)), ("const", 1)], {}),
          ("dim 0", [((4, 2), "l"), ("const", 0)], {}), tolerances=_LOOSE),
    entry("trace", ember.trace, ("[4,3]", [((4, 3), "l")], {})),
    entry("kron", ember.kron, ("2-D x 3-D", [((2, 3), "x"), ((2, 2, 2), "x")], {})),
    entry("inner", ember.inner, ("[4,5] x [3,5]", [((4, 5), "x"), ((3, 5), "l")], {}),
          tolerances=_LOOSE),
    entry("rot90", lambda x, k, dims: ember.rot90(x, k, dims),
          ("k 1", [((3, 4, 2), "x"), ("const", 1), ("const", (0, 1))], {}),
          ("k -1 (1, 2)", [((3, 4, 2), "x"), ("const", -1), ("const", (1, 2))], {})),
    entry("renorm", lambda x, p, d, m: ember.renorm(x, p, d, m),
          ("p 2 dim 0", [((4, 5), "x"), ("const", 2.0), ("const", 0), ("const", 1.0)], {}),
          ("p 1 dim 1", [((4, 5), "l"), ("const", 1.0), ("const", 1), ("const", 2.0)], {}),
          ("p 3 dim 0, a large maxnorm", [((3, 4), "x"), ("const", 3.0), ("const", 0),
                                          ("const", 10.0)], {}),
          covers=("renorm",), tolerances=_LOOSE),
    entry("cov", lambda x, **kw: ember.cov(x, **kw), ("rows", [((3, 6), "x")], {}),
          ("weights, correction 0", [((3, 5), "l")],
           dict(correction=0)), tolerances=_LOOSE),
    entry("corrcoef", ember.corrcoef, ("rows", [((3, 6), "x")], {}), tolerances=_LOOSE),
    entry("heaviside", ember.heaviside,
          ("zeros", [_sorted([-1.0, 0.0, 2.0, 0.0, -0.5]), ((5,), "x")], {}),
          differentiable=False),
    entry("gcd", ember.gcd, ("signs, zeros", [((6,), ("i", -30, 30)), ((6,), ("i", -12, 12))],
                             {}),
          ("broadcast", [((2, 3), ("i", 0, 40)), ((3,), ("i", 0, 9))], {}), dtypes=_INTS,
          differentiable=False),
    entry("lcm", ember.lcm, ("signs, zeros", [((6,), ("i", -30, 30)), ((6,), ("i", -12, 12))],
                             {}), dtypes=_INTS, differentiable=False),
    entry("ldexp", ember.ldexp, ("int exponents", [((5,), "x"), ((5,), ("i", -3, 3))], {}),
          ("float exponents", [((2, 3), "x"), ((3,), "l")], {}), covers=("ldexp",)),
    entry("sinc", ember.sinc, ("with 0", [_sorted([0.0, 0.25, -1.5, 2.0, 0.7])], {}),
          ("[3,4]", [((3, 4), "l")], {})),
    entry("float_power", ember.float_power,
          ("positive bases", [((3, 4), ("f", 0.1, 2.0)), ((3, 4), "x")], {})),
    entry("rsub", lambda a, b, **kw: ember.rsub(a, b, **kw),
          ("alpha 2", [((3, 4), "x"), ((4,), "l")], dict(alpha=2))),
    entry("diag_embed", lambda x, *a: ember.diag_embed(x, *a),
          ("offset 1, dims (0, 2)", [((3, 4), "x"), ("const", 1), ("const", 0),
                                     ("const", 2)], {}),
          ("offset -2", [((2, 3), "l"), ("const", -2)], {})),
    entry("diagflat", lambda x, *a: ember.diagflat(x, *a),
          ("offset 1", [((2, 2), "l"), ("const", 1)], {})),
    entry("block_diag", lambda a, b, c: ember.block_diag(a, b, c),
          ("2-D, 1-D, 0-D", [((2, 3), "x"), ((4,), "l"), ((), "x")], {})),
    entry("cartesian_prod", lambda a, b: ember.cartesian_prod(a, b),
          ("3 x 2", [((3,), "x"), ((2,), "l")], {})),
    entry("combinations", lambda x, **kw: ember.combinations(x, **kw),
          ("r 2", [((5,), "x")], {}),
          ("r 3 with replacement", [((3,), "l")], dict(r=3, with_replacement=True))),
    entry("meshgrid", lambda a, b, c: ember.meshgrid(a, b, c, indexing="xy"),
          ("xy", [((3,), "x"), ((2,), "l"), ((4,), "x")], {})),
    entry("take_along_dim", lambda x, i, *a: ember.take_along_dim(x, i, *a),
          ("dim 1 broadcast", [((4, 5), "x"), _long([[0, 4], [1, 1], [3, 2], [2, 0]]),
                               ("const", 1)], {}),
          ("flat", [((3, 4), "l"), _long([0, 11, 5])], {})),
    entry("index_fill", lambda x, d, i, v: ember.index_fill(x, d, i, v),
          ("dim 1", [((4, 5), "x"), ("const", 1), _long([0, -1]), ("const", -2.0)], {})),
    entry("masked_scatter", lambda x, m, s: x.masked_scatter(m, s),
          ("broadcast mask", [((3, 4), "x"), _mask([True, False, True, True]),
                              ((12,), "l")], {})),
    entry("put", lambda x, i, s, **kw: ember.put(x, i, s, **kw),
          ("negative index", [((3, 4), "x"), _long([0, 5, -1]), ((3,), "x")], {}),
          ("accumulate", [((3, 4), "l"), _long([0, 5, 0]), ((3,), "x")],
           dict(accumulate=True))),
    entry("isin", lambda a, b, **kw: ember.isin(a, b, **kw),
          ("ints", [((3, 4), ("i", -5, 5)), ((5,), ("i", -5, 5))], {}),
          ("invert", [((6,), ("i", -5, 5)), ((2,), ("i", -5, 5))], dict(invert=True)),
          dtypes=_INTS, differentiable=False),
    entry("searchsorted", lambda s, v, **kw: ember.searchsorted(s, v, **kw),
          ("left", [_sorted([-1.0, -0.5, 0.0, 0.5, 1.0]), ((2, 3), "x")], {}),
          ("right, int32", [_sorted([-1.0, -0.5, 0.0, 0.5, 1.0]), ((4,), "x")],
           dict(right=True, out_int32=True)),
          ("2-D rows", [_sorted([[-1.0, 0.0, 1.0], [-0.2, 0.2, 0.9]]), ((2, 4), "x")],
           dict(side="right")),
          differentiable=False),
    entry("bucketize", lambda v, b, **kw: ember.bucketize(v, b, **kw),
          ("right", [((3, 4), "x"), _sorted([-1.0, 0.0, 0.5])], dict(right=True)),
          differentiable=False),
    entry("bincount", _bincount, ("plain", [_DEV], {}), ("minlength", [_DEV],
                                                         dict(minlength=12)),
          dtypes=("float64",), differentiable=False),
    entry("histc", _histc, ("data range", [_DEV], dict(bins=4)),
          ("given range", [_DEV], dict(bins=3, min=0, max=1)),
          dtypes=("float64",), differentiable=False),
    entry("select_scatter", lambda x, s, d, i: ember.select_scatter(x, s, d, i),
          ("dim 1", [((3, 4), "x"), ((3,), "l"), ("const", 1), ("const", 2)], {})),
    entry("slice_scatter", lambda x, s, **kw: ember.slice_scatter(x, s, **kw),
          ("step 2", [((4, 5), "x"), ((4, 3), "l")], dict(dim=1, start=0, end=5, step=2))),
    entry("diagonal_scatter", lambda x, s, o: ember.diagonal_scatter(x, s, o),
          ("offset 1", [((4, 5), "x"), ((4,), "l"), ("const", 1)], {})),
    entry("split_with_sizes", lambda x: ember.split_with_sizes(x, [1, 3], 1),
          ("dim 1", [((3, 4), "l")], {})),
    entry("hsplit", lambda x: ember.hsplit(x, [1, 3]), ("indices", [((3, 4), "x")], {})),
    entry("vsplit", lambda x: ember.vsplit(x, 2), ("halves", [((4, 3), "l")], {})),
    entry("dsplit", lambda x: ember.dsplit(x, [1]), ("indices", [((2, 2, 3), "x")], {})),
    entry("unsafe_chunk", lambda x: ember.unsafe_chunk(x, 2, 1), ("dim 1", [((3, 4), "x")], {})),
]
_COPIES = [
    ("diagonal_copy", lambda x: ember.diagonal_copy(x, 1), (3, 4)),
    ("t_copy", ember.t_copy, (3, 4)),
    ("permute_copy", lambda x: ember.permute_copy(x, (2, 0, 1)), (2, 3, 4)),
    ("expand_copy", lambda x: ember.expand_copy(x, (2, 3, 4)), (3, 1)),
    ("unfold_copy", lambda x: ember.unfold_copy(x, 1, 2, 1), (3, 4)),
    ("narrow_copy", lambda x: ember.narrow_copy(x, 1, 1, 2), (3, 4)),
    ("view_copy", lambda x: ember.view_copy(x.contiguous(), (4, 3)), (3, 4)),
    ("select_copy", lambda x: ember.select_copy(x, 0, 1), (3, 4)),
    ("slice_copy", lambda x: ember.slice_copy(x, 1, 0, 4, 2), (3, 4)),
    ("squeeze_copy", lambda x: ember.squeeze_copy(x, 1), (3, 1, 4)),
    ("unsqueeze_copy", lambda x: ember.unsqueeze_copy(x, 1), (3, 4)),
    ("transpose_copy", lambda x: ember.transpose_copy(x, 0, 1), (3, 4)),
    ("unbind_copy", lambda x: ember.unbind_copy(x, 1), (3, 4)),
    ("split_copy", lambda x: ember.split_copy(x, 2, 1), (3, 4)),
    ("as_strided_copy", lambda x: ember.as_strided_copy(x.contiguous(), (2, 2), (1, 2)), (3, 4)),
]
OPS += [entry(name, fn, ("[" + ",".join(map(str, shape)) + "]", [(shape, "l")], {}))
        for name, fn, shape in _COPIES]


def _fill_diagonal(x, value, wrap=False):
    y = x.clone()
    return y.fill_diagonal_(value, wrap=wrap)


OPS += [
    entry("addbmm", lambda m, a, b, **kw: ember.addbmm(m, a, b, **kw),
          ("beta, alpha", [((3, 4), "x"), ((2, 3, 5), "x"), ((2, 5, 4), "l")],
           dict(beta=0.5, alpha=2.0)), tolerances=_LOOSE),
    entry("addr", lambda m, a, b, **kw: ember.addr(m, a, b, **kw),
          ("alpha 3", [((3, 4), "l"), ((3,), "x"), ((4,), "x")], dict(alpha=3.0))),
    entry("adjoint", ember.adjoint, ("[2,3,4]", [((2, 3, 4), "x")], {})),
    entry("nextafter", ember.nextafter,
          ("toward", [((3, 4), "x"), ((3, 4), "l")], {}), differentiable=False,
          covers=("_nextafter_linked",)),
    entry("frexp", ember.frexp, ("[3,4]", [((3, 4), ("f", -50.0, 50.0))], {}),
          differentiable=False, covers=("_frexp_linked",)),
    entry("quantile", lambda x, q, **kw: ember.quantile(x, q, **kw),
          ("dim 1, q tensor", [((3, 7), "x"), _sorted([0.1, 0.45, 0.9])], dict(dim=1)),
          ("flat, nearest", [((4, 3), "l"), ("const", 0.3)], dict(interpolation="nearest")),
          tolerances=_LOOSE),
    entry("nanquantile", lambda x, q, **kw: ember.nanquantile(x, q, **kw),
          ("dim 0", [((5, 3), "x"), ("const", 0.25)], dict(dim=0, keepdim=True)),
          tolerances=_LOOSE),
    entry("unique_consecutive", lambda x, **kw: ember.unique_consecutive(x, **kw),
          ("runs", [_long([1, 1, 2, 2, 3, 1, 1, 2])], dict(return_inverse=True,
                                                         return_counts=True)),
          dtypes=("float64",), differentiable=False),
    entry("nonzero_static", lambda x, **kw: ember.nonzero_static(x, **kw),
          ("padded", [((3, 4), ("i", -1, 1))], dict(size=10)),
          ("truncated", [((3, 4), ("i", -1, 1))], dict(size=2)),
          dtypes=_INTS, differentiable=False),
    entry("histogram", lambda x, **kw: ember.histogram(x, **kw),
          ("range", [((20,), "x")], dict(bins=5, range=(-1.0, 1.0))),
          ("edges, density", [((20,), "l")],
           dict(bins=None, range=None, density=True)) if False else
          ("weighted", [((20,), "l")], dict(bins=4, range=(-1.5, 1.5))),
          differentiable=False),
    entry("gradient", lambda x, **kw: ember.gradient(x, **kw),
          ("spacing 0.5, edge 2", [((4, 5), "x")], dict(spacing=0.5, edge_order=2)),
          ("coordinates dim 1", [((3, 4), "l")],
           dict(dim=1, spacing=None)) if False else
          ("dim 1", [((3, 4), "l")], dict(dim=1))),
    entry("unravel_index", lambda i: ember.unravel_index(i, (2, 3, 4)),
          ("flat", [_long([0, 5, 23, -1])], {}), dtypes=("float64",), differentiable=False),
    entry("fill_diagonal_", _fill_diagonal,
          ("wide", [((3, 5), "x"), ("const", 2.5)], {}),
          ("tall wrap", [((7, 3), "l"), ("const", -1.0)], dict(wrap=True))),
]

_SCATTER_INDEX = _long([[0, 4, 4, 1], [2, 2, 0, 3], [1, 1, 1, 1]])
OPS += [
    entry(f"scatter_reduce {reduce}",
          lambda x, i, s, reduce=reduce, **kw: ember.scatter_reduce(x, 1, i, s, reduce, **kw),
          ("include_self", [((4, 5), "x"), _SCATTER_INDEX, ((3, 4), "l")], {}),
          ("exclude self", [((3, 5), "l"), _SCATTER_INDEX, ((3, 4), "x")],
           dict(include_self=False)),
          tolerances=_LOOSE)
    for reduce in ("sum", "prod", "mean", "amax", "amin")]
OPS += [
    entry(f"index_reduce {reduce}",
          lambda x, i, s, reduce=reduce, **kw: ember.index_reduce(x, 0, i, s, reduce, **kw),
          ("include_self", [((5, 3), "x"), _long([0, 4, 0, 2]), ((4, 3), "l")], {}),
          tolerances=_LOOSE)
    for reduce in ("prod", "mean", "amax", "amin")]
OPS += [
    entry("histogramdd", lambda x, **kw: ember.histogramdd(x, **kw),
          ("3 x 2 bins", [((30, 2), "x")], dict(bins=[3, 2], range=[-1.5, 1.5, -1.0, 1.0])),
          differentiable=False),
]

# torch.* native forms, pre-linalg names and the pooling extras (ops/linalg/legacy.py,
# nn/_pool.py): compositions of registry ops, so every backend runs them natively
def _unpool(x):
    from ember.nn import functional as F
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    return F.max_unpool2d(values, indices, 2, output_size=x.shape[-2:])


def _triangular(b, a):
    n = a.shape[-1]
    tri = a.triu() + 4 * ember.eye(n, dtype=a.dtype, device=a.device)
    return ember.triangular_solve(b, tri, True, True)[0]


OPS += [
    entry("lp_pool2d", lambda x, **kw: ember.nn.functional.lp_pool2d(x, 2.0, 2, **kw),
          ("p 2 window 2", [((2, 3, 6, 5), "x")], {}),
          ("stride 1 ceil_mode", [((1, 2, 5, 5), "l")], dict(stride=1, ceil_mode=True)),
          tolerances=_LOOSE),
    entry("max_unpool2d", _unpool, ("[2,3,6,7]", [((2, 3, 6, 7), "x")], {})),
    entry("triangular_solve", _triangular,
          ("transposed upper", [((4, 2), "x"), ((4, 4), "x")], {}), tolerances=_LOOSE),
]


# -- fractional max pooling (nn/_fractional_pool.py): fixed samples, so devices agree -----------
def _fractional(nsp):
    def run(x):
        planes = x.shape[:2]
        samples = ember.linspace(0.05, 0.95, planes[0] * planes[1] * nsp, dtype=x.dtype,
                                 device=x.device).reshape(*planes, nsp)
        fn = getattr(ember.nn.functional, f"fractional_max_pool{nsp}d")
        return fn(x, 2, output_size=(3,) * nsp, _random_samples=samples)
    run.__name__ = f"fractional_max_pool{nsp}d"
    return run


def _fractional_samples(shape):
    def samples(dtype):
        for i, layout in enumerate(("contiguous", "transposed")):
            yield SampleInput(f"{dtype}{list(shape)} {layout}", lambda dev, i=i, lay=layout,
                              dt=dtype: ((make_tensor(640 + i, shape, dt, dev, layout=lay),),
                                         {}))
    return samples


OPS += [OpInfo("fractional_max_pool2d", _fractional(2), _fractional_samples((2, 2, 7, 6)),
               FLOATS, covers=()),
        OpInfo("fractional_max_pool3d", _fractional(3), _fractional_samples((1, 2, 5, 6, 5)),
               FLOATS, covers=())]
