"""What the reduction family shares: argument handling, the meta functions (output shape and
dtype without reading data) and the helpers its derivative formulas use."""
from __future__ import annotations

from ... import _dtype
from ..._dtype import COMPLEX, INTEGRAL
from .. import _grad, _meta
from .._util import normalize_dims, require_tensor


# -- argument handling --------------------------------------------------------------------------
def check_tensor(x, op):
    require_tensor(x, op)


def reduce_dims(x, dim, op, empty_is_all=True):
    """The kernel's ``dim``. ``None`` reduces every dim; so does ``()`` unless told otherwise
    (``all``/``any`` treat ``()`` as "reduce nothing", as PyTorch does)."""
    if dim is None or empty_is_all and isinstance(dim, (list, tuple)) and not dim:
        return tuple(range(x.ndim))
    dims = normalize_dims(dim, x.ndim, op)
    return dims if x.ndim else ()


def without(shape, dims):
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def accumulate_dtype(x, dtype):
    """sum/prod/cumsum: bool and integers accumulate in int64 unless a dtype is given."""
    if dtype is not None:
        return _dtype.as_dtype(dtype)
    return _dtype.int64 if x.dtype.category <= INTEGRAL else x.dtype


def no_complex(x, op):
    if x.dtype.category == COMPLEX:
        raise RuntimeError(f"{op}(): does not support complex input")


def given(dim):
    return dim is not None and not (isinstance(dim, (list, tuple)) and not dim)


def nonempty(x, dims, op, dim_given):
    """max/min/amax/amin/argmax have no identity: every reduced dim must have elements."""
    if x.numel():
        return
    if not dim_given:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == "
                           f"0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if x._shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


# -- meta functions -----------------------------------------------------------------------------
def dims_ok(op, x, dims):
    for d in dims:
        if not 0 <= d < max(x.ndim, 1):
            raise IndexError(f"{op}: dim {d} out of range for a tensor of shape "
                             f"{list(x._shape)}")
    return dims


def reduction_meta(op: str, result: str = "dtype"):
    """``op(Tensor self, int[] dim, [...,] bool keepdim, [dtype dtype])`` with the reduced dims
    already wrapped. ``result``: "dtype" = the dtype argument (sum, all…), "same" = self's
    dtype (amax), "real" = self's real dtype (var)."""
    def meta(x, dim, *rest):
        _meta.tensor_arg(op, x)
        keepdim = next(r for r in rest if r.__class__ is bool)
        shape = _meta.reduced(x._shape, dims_ok(op, x, tuple(dim)), keepdim)
        d = rest[-1] if result == "dtype" else x.dtype if result == "same" else \
            _meta.real_of(x.dtype)
        return shape, d
    return meta


def along_dim_meta(op: str):
    """Scans and softmax: ``op(Tensor self, int dim, dtype dtype)``, self's shape."""
    def meta(x, dim, dtype):
        _meta._check_dim(op, dim, x.ndim)
        return _meta.shape_of(x), dtype
    return meta


# -- derivative helpers -------------------------------------------------------------------------
def is_full(self, dim, keepdim, *rest):
    """A reduction over every dim to a 0-d result (PyTorch's overload 0 of sum, mean, prod)."""
    return len(dim) == self.ndim and not keepdim


def overload_name(prefix):
    """``SumBackward0`` for a full reduction, ``SumBackward1`` over dims."""
    return lambda self, dim, keepdim, *rest: \
        f"{prefix}Backward{0 if is_full(self, dim, keepdim) else 1}"


def restore(g, shape, dim, keepdim):
    """A reduction's output gradient broadcast back to the input's ``shape``."""
    return _grad.expand_to(_grad.unsqueeze_dims(g, shape, dim, keepdim), shape)
