"""dtypes and PyTorch's type-promotion rules.

A dtype is an interned object (``ember.float32``); it knows its itemsize, its category and the
numpy dtype that represents it on host. Promotion follows PyTorch: ``promote_types`` is the
pairwise lattice, ``result_type`` adds the category rule that Python scalars and 0-d tensors do
not upcast dimensioned tensors of the same category.
"""
from __future__ import annotations

import numpy as np

try:  # bfloat16 on host; numpy has no native bfloat16
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    _ml_dtypes = None

# categories, ordered: a higher category wins in result_type
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3


class dtype:
    __slots__ = ("name", "itemsize", "category", "is_signed", "np", "_rank", "__weakref__")

    def __init__(self, name, itemsize, category, is_signed, np_dtype, rank):
        self.name = name
        self.itemsize = itemsize
        self.category = category
        self.is_signed = is_signed
        self.np = np_dtype
        self._rank = rank

    @property
    def is_floating_point(self):
        return self.category == FLOATING

    @property
    def is_complex(self):
        return self.category == COMPLEX

    def to_real(self):
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        return {float16: complex64, bfloat16: complex64, float32: complex64,
                float64: complex128}.get(self, self)

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _np_or_none(name):
    if name == "bfloat16":
        return np.dtype(_ml_dtypes.bfloat16) if _ml_dtypes is not None else None
    return np.dtype(name)


_SPECS = [
    # name, itemsize, category, signed, rank within category
    ("bool", 1, BOOL, False, 0),
    ("uint8", 1, INTEGRAL, False, 1),
    ("int8", 1, INTEGRAL, True, 1),
    ("int16", 2, INTEGRAL, True, 2),
    ("int32", 4, INTEGRAL, True, 3),
    ("int64", 8, INTEGRAL, True, 4),
    ("float16", 2, FLOATING, True, 1),
    ("bfloat16", 2, FLOATING, True, 1),
    ("float32", 4, FLOATING, True, 2),
    ("float64", 8, FLOATING, True, 3),
    ("complex64", 8, COMPLEX, True, 2),
    ("complex128", 16, COMPLEX, True, 3),
]

_ALL = {n: dtype(n, s, c, sg, _np_or_none(n), r) for n, s, c, sg, r in _SPECS}
bool_ = _ALL["bool"]
uint8 = _ALL["uint8"]
int8 = _ALL["int8"]
int16 = _ALL["int16"]
int32 = _ALL["int32"]
int64 = _ALL["int64"]
float16 = _ALL["float16"]
bfloat16 = _ALL["bfloat16"]
float32 = _ALL["float32"]
float64 = _ALL["float64"]
complex64 = _ALL["complex64"]
complex128 = _ALL["complex128"]

all_dtypes = tuple(_ALL.values())
# PyTorch's aliases
ALIASES = {
    "bool": bool_, "uint8": uint8, "int8": int8, "int16": int16, "short": int16, "int32": int32,
    "int": int32, "int64": int64, "long": int64, "float16": float16, "half": float16,
    "bfloat16": bfloat16, "float32": float32, "float": float32, "float64": float64,
    "double": float64, "complex64": complex64, "cfloat": complex64, "complex128": complex128,
    "cdouble": complex128,
}


def _by_name(name):
    return _ALL[name]


_FROM_NP = {d.np: d for d in all_dtypes if d.np is not None}


def from_numpy_dtype(np_dtype) -> dtype:
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert numpy dtype {np.dtype(np_dtype)} to an ember dtype; supported: "
            f"{', '.join(d.name for d in all_dtypes)}") from None


def as_dtype(value, api=None) -> dtype:
    """Accept an ember dtype, a numpy dtype, a Python type or a name; raise TypeError otherwise
    (naming ``api``, the public function given the dtype, when known)."""
    if value.__class__ is dtype:
        return value
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return get_default_dtype()
    if value is complex:
        return _default_complex()
    if isinstance(value, str):
        if value in ALIASES:
            return ALIASES[value]
        raise TypeError(f"{api}(): unknown dtype name {value!r}" if api else
                        f"unknown dtype name {value!r}")
    try:
        return from_numpy_dtype(value)
    except TypeError:
        if api:
            raise TypeError(f"{api}(): argument 'dtype' must be ember.dtype, not "
                            f"{type(value).__name__} ({value!r})") from None
        raise TypeError(f"expected an ember dtype, got {value!r}") from None


# -- default dtype ------------------------------------------------------------------------------
_default = [float32]


def get_default_dtype() -> dtype:
    return _default[0]


def set_default_dtype(d) -> None:
    d = as_dtype(d)
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def _default_complex():
    return complex128 if _default[0] is float64 else complex64


# -- promote_types: the pairwise lattice --------------------------------------------------------
_SIGNED_BY_RANK = {1: int8, 2: int16, 3: int32, 4: int64}
_FLOAT_BY_RANK = {2: float32, 3: float64}
_COMPLEX_BY_RANK = {2: complex64, 3: complex128}


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOATING and lo is float64:
            return complex128
        return hi
    cat = a.category
    if cat == INTEGRAL:
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            # uint8 with a signed type needs a signed type that holds 0..255
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    if cat == FLOATING:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    return a if a._rank > b._rank else b  # complex


_PROMOTE = {(a, b): _promote_pair(a, b) for a in all_dtypes for b in all_dtypes}


def promote_types(a: dtype, b: dtype) -> dtype:
    return _PROMOTE[(a, b)]


# -- result_type: the category rule for tensors, 0-d tensors and Python scalars -----------------
def _combine_categories(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        # a floating dimensioned operand keeps its precision when a lower-priority complex joins
        return higher.to_complex() if higher.category == FLOATING else lower
    if higher.category == FLOATING:
        return higher
    if higher is bool_ or lower.category == FLOATING:
        return _PROMOTE[(higher, lower)]
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes on when it meets nothing else (torch.tensor(value))."""
    t = value.__class__
    if t is bool:
        return bool_
    if t is int:
        return int64
    if t is float:
        return _default[0]
    if t is complex:
        return _default_complex()
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default[0]
    if isinstance(value, (complex, np.complexfloating)):
        return _default_complex()
    raise TypeError(f"expected a Tensor or a Python number, got {type(value).__name__}")


def result_type(*operands) -> dtype:
    """PyTorch's result_type over tensors and Python scalars."""
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if d is not None and d.__class__ is dtype:
            if x.ndim:
                dim = d if dim is None else _PROMOTE[(dim, d)]
            else:
                zero = d if zero is None else _PROMOTE[(zero, d)]
        else:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else _PROMOTE[(wrapped, d)]
    return _combine_categories(dim, _combine_categories(zero, wrapped))


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's same-kind rule: no cast to a lower category (float->int, complex->float, x->bool)."""
    return from_.category <= to.category


def finfo_eps(d: dtype) -> float:
    return float(np.finfo(d.np).eps)
