"""Entries for ``ember.ops.reduction``: sums and means, variances, extrema, logical reductions,
norms, scans and softmax.

Every sample names its dims in one of PyTorch's forms (none, an int, a negative int, a tuple or
list, ``()``) with and without ``keepdim``, on 0-d, empty and non-contiguous inputs. Ops with no
identity (``amax``, ``max``, ``argmax``, ...) also get empty inputs the reference rejects: the
backend must raise the same error type.
"""
from __future__ import annotations

import math

import numpy as np

import ember

from . import ALL_REAL, FLOATS, INTS, OpInfo, SampleInput, _laid_out, make_tensor

NUMERIC = FLOATS + INTS
# float32 results of kernels whose summation order a backend may choose freely
LOOSE32 = {"float32": (1e-5, 1e-5)}


def C(shape, layout="contiguous", **kw):
    """One sample case: an input of ``shape`` in ``layout``, called with keyword args ``kw``."""
    return tuple(shape), layout, kw


def _with_nans(seed, shape, dtype, device, low, high, layout):
    """``make_tensor``'s float values with those in the top quarter of [low, high) made NaN,
    in ``layout``."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(low, high, shape)
    v[v > low + 0.75 * (high - low)] = np.nan
    return _laid_out(v.astype(ember._dtype.as_dtype(dtype).np), layout, device)


def _input(seed, shape, dtype, device, low, high, layout, nans):
    if nans and dtype in FLOATS:
        return _with_nans(seed, shape, dtype, device, low, high, layout)
    return make_tensor(seed, shape, dtype, device, low=low, high=high, layout=layout)


def _desc(dtype, shape, layout, kw):
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    return f"{dtype}{list(shape)} {layout}" + (f" ({args})" if args else "")


def samples(cases, low=-3.0, high=3.0, int_range=None, nans=False, seed=0):
    """Samples of a one-input op: ``cases`` from ``C``; floats drawn from [low, high), integers
    from ``int_range`` (default [-3, 3]), bools half true."""
    def gen(dtype):
        lo, hi = (low, high) if dtype in FLOATS else (int_range or (-3, 3))
        for i, (shape, layout, kw) in enumerate(cases):
            yield SampleInput(
                _desc(dtype, shape, layout, kw),
                lambda dev, s=seed + i, sh=shape, lay=layout, kw=kw, dt=dtype: (
                    (_input(s, sh, dt, dev, lo, hi, lay, nans),), dict(kw)))
    return gen


# -- the dim forms ------------------------------------------------------------------------------
DIMS = [
    C(()), C((), dim=0), C((), dim=-1, keepdim=True),
    C((7,)), C((7,), "strided", dim=0, keepdim=True),
    C((3, 4)), C((3, 4), "transposed"), C((3, 4), "strided", dim=-1),
    C((3, 4), "expanded", dim=0), C((3, 4), "transposed", dim=1, keepdim=True),
    C((2, 3, 4), dim=(0, 2)), C((2, 3, 4), "transposed", dim=(-1, 0), keepdim=True),
    C((2, 3, 4), "strided", dim=[1]), C((2, 3, 4), "expanded", dim=(1, 2)),
]
EMPTY = [C((0,)), C((0, 3), dim=0), C((0, 3), dim=1, keepdim=True), C((2, 0, 3), dim=(0, 2))]
ALL_DIMS = [C((2, 3, 4), dim=()), C((3, 4), "transposed", dim=(), keepdim=True)]
SUM_CASES = DIMS + EMPTY + ALL_DIMS
# prod takes one int dim (or none)
ONE_DIM_SUM = [c for c in SUM_CASES if not isinstance(c[2].get("dim"), (tuple, list))]
# ops with no identity: empty reductions are errors the backend must raise too
NO_IDENTITY = DIMS + [C((0, 3), dim=1), C((0, 3), dim=0), C((0,))]
# max/min/argmax/argmin take one int dim (or none); the expanded inputs tie along dim 0,
# where PyTorch returns the first index
NONEMPTY_ONE_DIM = [
    C(()), C((), dim=0), C((), dim=-1, keepdim=True), C((7,), "strided", dim=0),
    C((3, 4)), C((3, 4), "transposed", dim=1), C((3, 4), "expanded", dim=0),
    C((3, 4), "strided", dim=-1, keepdim=True), C((2, 3, 4), "transposed", dim=1, keepdim=True),
    C((2, 3, 4), "expanded", dim=-3), C((0, 3), dim=1),
]
ONE_DIM = NONEMPTY_ONE_DIM + [C((0, 3), dim=0), C((0,))]
# variances need more than one element per reduced slice (0-d only with correction 0)
VAR_CASES = [
    C((), correction=0), C((7,)), C((7,), "strided", dim=0, keepdim=True, correction=0),
    C((3, 4)), C((3, 4), "transposed", dim=1), C((3, 4), "strided", dim=-1, unbiased=False),
    C((3, 4), "expanded", dim=1, keepdim=True), C((2, 3, 4), dim=(0, 2), correction=2),
    C((2, 3, 4), "transposed", dim=(-1, 0), keepdim=True), C((2, 3, 4), "strided", dim=[1]),
    C((2, 3, 4), "contiguous", dim=None, unbiased=True),
]
STD_CASES = VAR_CASES[1:]
STD_ZERO = [C((), correction=0), C((3, 4), "expanded", dim=0)]
# nanmean: an expanded input repeats its first row, so a NaN there fills a whole dim-0 slice
ALL_NAN = [c for c in SUM_CASES if c[1] == "expanded" and c[2].get("dim") == 0]
NO_ALL_NAN = [c for c in SUM_CASES if c not in ALL_NAN]
# scans and softmax: exactly one dim
SCAN_CASES = [
    C((), dim=0), C((), dim=-1), C((7,), dim=0), C((7,), "strided", dim=-1),
    C((3, 4), dim=1), C((3, 4), "transposed", dim=0), C((3, 4), "strided", dim=-1),
    C((3, 4), "expanded", dim=0), C((3, 4), "expanded", dim=1), C((2, 3, 4), "transposed", dim=1),
    C((0, 3), dim=0), C((0, 3), dim=1),
]
# no keyword arguments: every layout
PLAIN = [C((7,)), C((3, 4)), C((3, 4), "transposed"), C((3, 4), "strided"),
         C((3, 4), "expanded"), C((2, 3, 4), "transposed")]
MATRIX_CASES = [
    C((3, 4)), C((4, 3), "transposed"), C((3, 4), "strided", dim=(1, 0)),
    C((3, 4), "expanded", dim=(0, 1), keepdim=True), C((2, 3, 4), dim=(1, 2)),
    C((2, 3, 4), "transposed", dim=(0, 2), keepdim=True), C((2, 0, 3), dim=(1, 2)),
]


def _with(name, **fixed):
    """``ember.<name>`` with some keyword arguments fixed (looked up when called)."""
    def run(x, **kw):
        return getattr(ember, name)(x, **fixed, **kw)
    run.__name__ = name
    return run


def _cumsum_(x, dim):
    y = x.clone()
    out = y.cumsum_(dim)
    assert out is y, "in-place ops return self"
    return y


def _cumprod_(x, dim):
    y = x.clone()
    out = y.cumprod_(dim)
    assert out is y, "in-place ops return self"
    return y


# -- the entries ---------------------------------------------------------------------------------
S = samples(SUM_CASES)
NEAR_ONE = samples(ONE_DIM_SUM, low=0.5, high=1.5, int_range=(-2, 2))
WITH_NANS = samples(SUM_CASES, nans=True)
NAN_ONE_DIM = samples(NONEMPTY_ONE_DIM, nans=True)

OPS = [
    # sums and means
    OpInfo("sum", ember.sum, S, ALL_REAL, covers=("sum",)),
    OpInfo("sum dtype", _with("sum", dtype=ember.float64), samples(DIMS[3:10]), ALL_REAL,
           covers=("sum",)),
    OpInfo("sum int32 dtype", lambda x, **kw: x.sum(dtype=ember.int32, **kw),
           samples(DIMS[3:10]), INTS + ("bool",), covers=("sum",), differentiable=False),
    OpInfo("prod", ember.prod, NEAR_ONE, ALL_REAL, covers=("prod",), tolerances=LOOSE32),
    OpInfo("prod dtype", lambda x, **kw: x.prod(dtype=ember.float64, **kw),
           samples(DIMS[3:10], low=0.5, high=1.5), NUMERIC, covers=("prod",)),
    OpInfo("nansum", ember.nansum, WITH_NANS, ALL_REAL, covers=("nansum",)),
    OpInfo("mean", ember.mean, S, FLOATS, covers=("mean",)),
    OpInfo("mean dtype", _with("mean", dtype=ember.float64), samples(DIMS[3:10]),
           NUMERIC, covers=("mean",)),
    OpInfo("nanmean", ember.nanmean, samples(NO_ALL_NAN, nans=True), FLOATS,
           covers=("nanmean",)),
    # expanded inputs reduced along dim 0 have all-NaN slices: NaN results, gradients undefined
    OpInfo("nanmean all-NaN slices", ember.nanmean, samples(ALL_NAN, nans=True), FLOATS,
           covers=("nanmean",), differentiable=False),
    # variances
    OpInfo("var", ember.var, samples(VAR_CASES), FLOATS, covers=("var",), tolerances=LOOSE32),
    OpInfo("std", ember.std, samples(STD_CASES), FLOATS, covers=("std",), tolerances=LOOSE32),
    OpInfo("var_mean", ember.var_mean, samples(VAR_CASES), FLOATS, covers=("var_mean",),
           tolerances=LOOSE32),
    OpInfo("std_mean", ember.std_mean, samples(STD_CASES), FLOATS, covers=("std_mean",),
           tolerances=LOOSE32),
    # zero standard deviations: sqrt has no derivative at 0, so forward values only
    OpInfo("std zero", ember.std, samples(STD_ZERO), FLOATS, covers=("std",),
           differentiable=False),
    OpInfo("std_mean zero", ember.std_mean, samples(STD_ZERO), FLOATS, covers=("std_mean",),
           differentiable=False),
    OpInfo("var unbiased positional", lambda x: x.var(False), samples(PLAIN), FLOATS,
           covers=("var",), tolerances=LOOSE32),
    # extrema
    OpInfo("amax", ember.amax, samples(NO_IDENTITY), ALL_REAL, covers=("amax",)),
    OpInfo("amin", ember.amin, samples(NO_IDENTITY), ALL_REAL, covers=("amin",)),
    # NaN propagates (forward only: the gradient at a NaN maximum is a convention)
    OpInfo("amax nan", ember.amax, samples(DIMS, nans=True), FLOATS, covers=("amax",),
           differentiable=False),
    OpInfo("max", ember.max, samples(ONE_DIM), ALL_REAL,
           covers=("amax", "max_dim", "max_all")),
    OpInfo("min", ember.min, samples(ONE_DIM), ALL_REAL,
           covers=("amin", "min_dim", "min_all")),
    # NaN propagates, and its index is the one returned
    OpInfo("max nan", ember.max, NAN_ONE_DIM, FLOATS, covers=("amax", "max_dim"),
           differentiable=False),
    OpInfo("min nan", ember.min, NAN_ONE_DIM, FLOATS, covers=("amin", "min_dim"),
           differentiable=False),
    OpInfo("max other", lambda x: ember.max(x, x.flip(0)), samples(PLAIN), ALL_REAL,
           covers=("maximum",)),
    OpInfo("min other", lambda x: ember.min(x, x.flip(-1)), samples(PLAIN), ALL_REAL,
           covers=("minimum",)),
    OpInfo("aminmax", ember.aminmax, samples(ONE_DIM), ALL_REAL, covers=("aminmax",)),
    OpInfo("argmax", ember.argmax, samples(ONE_DIM), NUMERIC, covers=("argmax",),
           differentiable=False),
    OpInfo("argmin", ember.argmin, samples(ONE_DIM), NUMERIC, covers=("argmin",),
           differentiable=False),
    OpInfo("argmax nan", ember.argmax, NAN_ONE_DIM, FLOATS, covers=("argmax",),
           differentiable=False),
    # (the other entries' small integers tie often: first-index wins; here ties are rare)
    OpInfo("argmax ints", ember.argmax, samples(NONEMPTY_ONE_DIM, int_range=(-1000, 1000)),
           INTS, covers=("argmax",), differentiable=False),
    # logical
    OpInfo("all", ember.all, S, ALL_REAL, covers=("all",), differentiable=False),
    OpInfo("any", ember.any, S, ALL_REAL, covers=("any",), differentiable=False),
    OpInfo("all of comparison", lambda x, **kw: (x > -2).all(**kw), S, NUMERIC,
           covers=("all",), differentiable=False),
    OpInfo("any of comparison", lambda x, **kw: (x > 2).any(**kw), S, NUMERIC,
           covers=("any",), differentiable=False),
    OpInfo("count_nonzero", ember.count_nonzero,
           samples([c for c in SUM_CASES if "keepdim" not in c[2] and c[2].get("dim") != ()]),
           ALL_REAL, covers=("count_nonzero",), differentiable=False),
    # logsumexp and norms
    OpInfo("logsumexp", ember.logsumexp,
           samples([c for c in SUM_CASES if c[2].get("dim") not in (None, ())]), NUMERIC,
           covers=("logsumexp",)),
    OpInfo("logsumexp large", lambda x, **kw: ember.logsumexp(x * 300, **kw),
           samples([C((3, 4), dim=1), C((2, 3, 4), "transposed", dim=(0, 2))]), FLOATS,
           covers=("logsumexp",)),
    OpInfo("norm", ember.norm, S, FLOATS, covers=("vector_norm",)),
    # an expanded matrix is rank-deficient: the nuclear norm has no gradient there (the singular
    # vectors of the zero singular values, and so U V^H, are LAPACK's choice)
    OpInfo("norm nuc", _with("norm", p="nuc"), samples(MATRIX_CASES[:3] + MATRIX_CASES[4:]),
           FLOATS,
           covers=("nuclear_norm", "linalg_svdvals"), tolerances=LOOSE32),
    OpInfo("norm fro", _with("norm", p="fro"), samples(MATRIX_CASES), FLOATS,
           covers=("vector_norm",)),
    OpInfo("norm dtype", _with("norm", dtype=ember.float64), samples(DIMS[3:10]),
           ("float32",), covers=("vector_norm",)),
]
for _p in (1, 3, 0.5, 0, math.inf, -math.inf):
    OPS.append(OpInfo(f"norm p={_p}", _with("norm", p=_p),
                      samples(DIMS + EMPTY if _p > 0 and math.isfinite(_p) else NO_IDENTITY),
                      FLOATS, covers=("vector_norm",), tolerances=LOOSE32))
def _softmax_data(log):
    """(log_)softmax's backward op on its output, with a gradient made from the input."""
    forward = ember.log_softmax if log else ember.softmax
    backward = ember._log_softmax_backward_data if log else ember._softmax_backward_data

    def run(x, dim):
        return backward(x.sin(), forward(x, dim), dim, x.dtype)
    return run


SCAN = samples(SCAN_CASES)
OPS += [
    # scans
    OpInfo("cumsum", ember.cumsum, SCAN, ALL_REAL, covers=("cumsum",)),
    OpInfo("cumsum dtype", _with("cumsum", dtype=ember.float64), SCAN, NUMERIC,
           covers=("cumsum",)),
    OpInfo("cumsum_", _cumsum_, SCAN, NUMERIC, covers=("cumsum",), differentiable=False),
    OpInfo("cumprod", ember.cumprod, samples(SCAN_CASES, low=0.5, high=1.5, int_range=(-2, 2)),
           ALL_REAL, covers=("cumprod",), tolerances=LOOSE32),
    OpInfo("cumprod_", _cumprod_, samples(SCAN_CASES, low=0.5, high=1.5, int_range=(-2, 2)),
           NUMERIC, covers=("cumprod",), differentiable=False, tolerances=LOOSE32),
    # softmax
    OpInfo("softmax", ember.softmax, SCAN, FLOATS, covers=("softmax",)),
    OpInfo("log_softmax", ember.log_softmax, SCAN, FLOATS, covers=("log_softmax",)),
    OpInfo("softmax large", lambda x, **kw: ember.softmax(x * 300, **kw), SCAN, FLOATS,
           covers=("softmax",)),
    OpInfo("log_softmax large", lambda x, **kw: ember.log_softmax(x * 300, **kw), SCAN, FLOATS,
           covers=("log_softmax",)),
    OpInfo("_softmax_backward_data", _softmax_data(False), SCAN, FLOATS,
           covers=("_softmax_backward_data",)),
    OpInfo("_log_softmax_backward_data", _softmax_data(True), SCAN, FLOATS,
           covers=("_log_softmax_backward_data",)),
    OpInfo("softmax dtype", _with("softmax", dtype=ember.float64), SCAN, ("float32",),
           covers=("softmax",)),
    OpInfo("log_softmax dtype", _with("log_softmax", dtype=ember.float64), SCAN,
           ("float32",), covers=("log_softmax",)),
]
