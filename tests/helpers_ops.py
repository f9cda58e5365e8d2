"""Shared input generators and checks for the elementwise / view / conversion tests.

Tensors are built with ``ember.from_numpy`` and read back with ``.numpy()``; layouts other than
contiguous are made with the view ops (permute, slice with a step, expand), so each check also
exercises strided and stride-0 operands.
"""
from __future__ import annotations

import numpy as np

import ember
from ember.ops.views import slice_op

rng = np.random.default_rng(1234)

# the dtypes the elementwise tests cover, by name (numpy and ember share these names)
DTYPES = ["float32", "float64", "int64", "int32", "bool", "complex64"]
FLOATS = ["float32", "float64"]
INTS = ["int64", "int32"]


def edt(name):
    """The ember dtype of a dtype name ('bool' -> ember.bool)."""
    return getattr(ember, name)


def category(name):
    return {"bool": 0, "uint8": 1, "int8": 1, "int16": 1, "int32": 1, "int64": 1, "float16": 2,
            "bfloat16": 2, "float32": 2, "float64": 2, "complex64": 3, "complex128": 3}[name]


def data(shape, dtype, low=-3.0, high=3.0, nonzero=False):
    """Random values of ``dtype`` (a name). Floats are uniform in [low, high); ints are integers
    in [low, high]; complex has both parts in [low, high). ``nonzero`` avoids zeros (divisors)."""
    shape = tuple(shape)
    if dtype == "bool":
        a = rng.random(shape) > 0.5
        if nonzero:
            a = np.ones(shape, bool)
        return np.asarray(a)
    if category(dtype) == 1:
        lo, hi = int(np.floor(low)), int(np.ceil(high))
        a = rng.integers(lo, hi + 1, shape).astype(dtype)
        if nonzero:
            a[a == 0] = 1
        return np.asarray(a)
    if category(dtype) == 3:
        a = np.asarray(rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape))
    else:
        a = np.asarray(rng.uniform(low, high, shape))
    if nonzero:
        a[np.abs(a) < 0.1] = 0.5
    return np.asarray(a.astype(dtype))


def layouts(a, kinds=("contiguous", "transposed", "stepped", "expanded")):
    """(label, tensor, values) triples holding ``a``'s values in several memory layouts:
    contiguous; a permuted view of a contiguous transpose; a stepped slice (stride 2 on the last
    dim, non-zero storage offset); and an expanded (stride-0) view. ``values`` is what the
    tensor holds (equal to ``a`` except for 'expanded', which repeats ``a``'s first row)."""
    a = np.asarray(a)
    out = []
    if "contiguous" in kinds:
        out.append(("contiguous", ember.from_numpy(a.copy()), a))
    if "transposed" in kinds and a.ndim >= 2:
        rev = tuple(range(a.ndim))[::-1]
        t = ember.from_numpy(np.ascontiguousarray(a.transpose(rev))).permute(*rev)
        assert not t.is_contiguous() or a.size <= 1 or 1 in a.shape
        out.append(("transposed", t, a))
    if "stepped" in kinds and a.ndim >= 1:
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1] + 1,), a.dtype)
        wide[..., 1::2] = a
        t = slice_op(ember.from_numpy(wide), a.ndim - 1, 1, None, 2)
        out.append(("stepped", t, a))
    if "expanded" in kinds and a.ndim >= 1 and a.shape[0] > 1:
        row = a[:1]
        t = ember.from_numpy(row.copy()).expand(*a.shape)
        out.append(("expanded", t, np.broadcast_to(row, a.shape)))
    return out


def values(t):
    """The tensor's values as a fresh numpy array."""
    return np.array(t.numpy(), copy=True)


def check(t, expected, dtype=None, rtol=None, atol=None, msg=""):
    """``t`` holds ``expected`` (shape, dtype, values; NaN matches NaN, infinities must match)."""
    expected = np.asarray(expected)
    assert isinstance(t, ember.Tensor), f"{msg}: got {type(t).__name__}"
    assert tuple(t.shape) == expected.shape, f"{msg}: shape {tuple(t.shape)} != {expected.shape}"
    if dtype is not None:
        assert t.dtype is edt(dtype) if isinstance(dtype, str) else t.dtype is dtype, \
            f"{msg}: dtype {t.dtype} != {dtype}"
    got = values(t)
    if got.dtype.kind in "biu" and expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected, err_msg=msg)
        return
    if rtol is None:
        rtol, atol = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-6),
                      "complex64": (1e-5, 1e-6)}.get(got.dtype.name, (1e-12, 1e-12))
    if got.dtype.name == "bfloat16":
        got = got.astype(np.float32)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=msg)


# -- PyTorch's type promotion, written out independently of ember._dtype --------------------------
_SIZE = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2,
         "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16}


def promote(a, b):
    """torch.promote_types for the dtype names used here."""
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        hi, lo = (a, b) if ca > cb else (b, a)
        if category(hi) == 3 and lo == "float64":
            return "complex128"
        return hi
    if ca == 1 and "uint8" in (a, b):
        other = b if a == "uint8" else a
        return "int16" if other == "int8" else other
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    return a if _SIZE[a] >= _SIZE[b] else b


def _scalar_dtype(x):
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int64"
    if isinstance(x, float):
        return "float32"  # the default dtype
    return "complex64"


def result_dtype(a, b):
    """torch.result_type(a, b) where each operand is ('tensor', dtype name, ndim) or a Python
    scalar: dimensioned tensors beat 0-d tensors beat scalars unless a lower priority operand is
    of a higher category."""
    def prio(x):
        if isinstance(x, tuple):
            return (2 if x[2] > 0 else 1), x[1]
        return 0, _scalar_dtype(x)
    (pa, da), (pb, db) = prio(a), prio(b)
    if pa == pb:
        return promote(da, db)
    (ph, dh), (pl, dl) = ((pa, da), (pb, db)) if pa > pb else ((pb, db), (pa, da))
    if category(dl) <= category(dh):
        return dh
    # the lower-priority operand's category wins; a scalar brings only its category
    if pl == 0:
        if category(dl) == 2:
            return "float32"
        if category(dl) == 3:
            return "complex128" if dh == "float64" else "complex64"
        return "int64"
    if category(dl) == 3 and category(dh) == 2:
        return "complex128" if dh == "float64" else "complex64"
    return dl


def to_float(dt):
    """The dtype a float-only op computes in for input dtype ``dt``."""
    return dt if category(dt) >= 2 else "float32"
