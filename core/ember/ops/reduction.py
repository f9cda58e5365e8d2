"""Reductions, scans and softmax.

Kernel convention (see ``ember.kit.reduction``): ``dim`` reaches kernels as a sorted tuple of the
axes to reduce, already wrapped; a 0-d input gets ``()`` (PyTorch lets dim 0 and -1 name its one
implicit axis). ``dtype`` is the result dtype the op layer chose; the kernel casts.

* ``sum``/``prod``/``nansum``/``mean``: ``(Tensor self, int[] dim, bool keepdim, dtype dtype)``
* ``var``: ``(Tensor self, int[] dim, float correction, bool keepdim)``, real result dtype
* ``amax``/``amin``: ``(Tensor self, int[] dim, bool keepdim)``; no reduced dim is empty
* ``max_dim``/``min_dim``: ``(Tensor self, int dim, bool keepdim) -> (values, indices)``
* ``argmax``/``argmin``: ``(Tensor self, int? dim, bool keepdim)``; None = the flat index
* ``all``/``any``: ``(Tensor self, int[] dim, bool keepdim, dtype dtype)``, bool or uint8 result
* ``vector_norm``: ``(Tensor self, float ord, int[] dim, bool keepdim)``, real result dtype
* ``cumsum``/``cumprod``/``softmax``/``log_softmax``: ``(Tensor self, int dim, dtype dtype)``

``nanmean``, ``std``, ``var_mean``, ``std_mean``, ``logsumexp``, ``count_nonzero``, ``aminmax``
and the nuclear norm are composites of those.
"""
from __future__ import annotations

import math
import warnings

from .. import _dtype
from .. import return_types  # the named tuples; ops/sorting.py adds its own with _return_type
from .._dtype import COMPLEX, FLOATING, INTEGRAL
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from . import _meta
from ..return_types import _return_type  # noqa: F401 - re-exported for ops/sorting.py
from ._util import _dtype_title, normalize_dims, tensor_method

__all__ = ["sum", "mean", "prod", "nansum", "nanmean", "var", "std", "var_mean", "std_mean",
           "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "all", "any",
           "logsumexp", "norm", "count_nonzero", "cumsum", "cumprod", "softmax", "log_softmax"]


# -- argument handling --------------------------------------------------------------------------
def _check_tensor(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _dims(x, dim, op, empty_is_all=True):
    """The kernel's ``dim``. ``None`` reduces every dim; so does ``()`` unless told otherwise
    (``all``/``any`` treat ``()`` as "reduce nothing", as PyTorch does)."""
    if dim is None or empty_is_all and isinstance(dim, (list, tuple)) and not dim:
        return tuple(range(x.ndim))
    dims = normalize_dims(dim, x.ndim, op)
    return dims if x.ndim else ()


def _without(shape, dims):
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _accumulate_dtype(x, dtype):
    """sum/prod/cumsum: bool and integers accumulate in int64 unless a dtype is given."""
    if dtype is not None:
        return _dtype.as_dtype(dtype)
    return _dtype.int64 if x.dtype.category <= INTEGRAL else x.dtype


def _no_complex(x, op):
    if x.dtype.category == COMPLEX:
        raise RuntimeError(f"{op}(): does not support complex input")


def _given(dim):
    return dim is not None and not (isinstance(dim, (list, tuple)) and not dim)


def _nonempty(x, dims, op, dim_given):
    """max/min/amax/amin/argmax have no identity: every reduced dim must have elements."""
    if x.numel():
        return
    if not dim_given:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == "
                           f"0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if x._shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


# -- sum, prod, mean ----------------------------------------------------------------------------
_SUM_SCHEMA = "(Tensor self, int[] dim, bool keepdim, dtype dtype) -> Tensor"
sum_op = define("sum" + _SUM_SCHEMA, meta=_meta.reduction("sum"))
prod_op = define("prod" + _SUM_SCHEMA, meta=_meta.reduction("prod"))
nansum_op = define("nansum" + _SUM_SCHEMA, meta=_meta.reduction("nansum"))
mean_op = define("mean" + _SUM_SCHEMA, meta=_meta.reduction("mean"))


def _make_sum(name, op):
    def fn(input, dim=None, keepdim=False, *, dtype=None):
        _check_tensor(input, name)
        return op(input, _dims(input, dim, name), bool(keepdim), _accumulate_dtype(input, dtype))

    fn.__name__ = name
    return tensor_method()(fn)


sum = _make_sum("sum", sum_op)
prod = _make_sum("prod", prod_op)
nansum = _make_sum("nansum", nansum_op)


def _mean_dtype(x, dtype, op):
    if dtype is not None:
        d = _dtype.as_dtype(dtype)
        if d.category < FLOATING:
            raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: {_dtype_title(d)}")
        return d
    if x.dtype.category < FLOATING:
        raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {_dtype_title(x.dtype)}")
    return x.dtype


@tensor_method()
def mean(input, dim=None, keepdim=False, *, dtype=None):
    _check_tensor(input, "mean")
    return mean_op(input, _dims(input, dim, "mean"), bool(keepdim),
                   _mean_dtype(input, dtype, "mean"))


def _nanmean(x, dim, keepdim, dtype):
    from .elementwise import div, unary_api
    valid = unary_api["logical_not"](unary_api["isnan"](x))
    return div(nansum_op(x, dim, keepdim, dtype), sum_op(valid, dim, keepdim, dtype))


nanmean_op = define("nanmean" + _SUM_SCHEMA, composite=_nanmean)


@tensor_method()
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    _check_tensor(input, "nanmean")
    if input.dtype.category < FLOATING:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but "
                           f"got {_dtype_title(input.dtype)}")
    return nanmean_op(input, _dims(input, dim, "nanmean"), bool(keepdim),
                      _mean_dtype(input, dtype, "nanmean"))


# -- var, std -----------------------------------------------------------------------------------
var_op = define("var(Tensor self, int[] dim, float correction, bool keepdim) -> Tensor",
                meta=_meta.reduction("var", "real"))


def _sqrt(x):
    from .elementwise import unary_api
    return unary_api["sqrt"](x)


std_op = define("std(Tensor self, int[] dim, float correction, bool keepdim) -> Tensor",
                composite=lambda x, dim, c, keepdim: _sqrt(var_op(x, dim, c, keepdim)))
var_mean_op = define("var_mean(Tensor self, int[] dim, float correction, bool keepdim) -> "
                     "(Tensor, Tensor)",
                     composite=lambda x, dim, c, keepdim: (var_op(x, dim, c, keepdim),
                                                           mean_op(x, dim, keepdim, x.dtype)))
std_mean_op = define("std_mean(Tensor self, int[] dim, float correction, bool keepdim) -> "
                     "(Tensor, Tensor)",
                     composite=lambda x, dim, c, keepdim: (_sqrt(var_op(x, dim, c, keepdim)),
                                                           mean_op(x, dim, keepdim, x.dtype)))


def _var_args(op, input, dim, unbiased, keepdim, correction):
    _check_tensor(input, op)
    if isinstance(dim, bool):  # var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{op}() received an invalid combination of arguments: unbiased was "
                            f"given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: pass either "
                        f"'unbiased' or 'correction', not both")
    if input.dtype.category < FLOATING:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims(input, dim, op)
    c = correction if correction is not None else 0 if unbiased is False else 1
    if math.prod(input._shape[d] for d in dims) - c <= 0:
        warnings.warn(f"{op.split('_')[0]}(): degrees of freedom is <= 0. Correction should be "
                      f"strictly less than the reduction factor (input numel divided by output "
                      f"numel).", UserWarning, stacklevel=3)
    return input, dims, float(c), bool(keepdim)


def _make_var(name, op):
    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return op(*_var_args(name, input, dim, unbiased, keepdim, correction))

    fn.__name__ = name
    return fn


var = tensor_method()(_make_var("var", var_op))
std = tensor_method()(_make_var("std", std_op))
var_mean = _make_var("var_mean", var_mean_op)
std_mean = _make_var("std_mean", std_mean_op)


# -- extrema ------------------------------------------------------------------------------------
_EXTREME_SCHEMA = "(Tensor self, int[] dim, bool keepdim) -> Tensor"
amax_op = define("amax" + _EXTREME_SCHEMA, meta=_meta.reduction("amax", "same"))
amin_op = define("amin" + _EXTREME_SCHEMA, meta=_meta.reduction("amin", "same"))
max_dim_op = define("max_dim(Tensor self, int dim, bool keepdim) -> (Tensor values, Tensor "
                    "indices)", meta=_meta.extreme_dim("max_dim"))
min_dim_op = define("min_dim(Tensor self, int dim, bool keepdim) -> (Tensor values, Tensor "
                    "indices)", meta=_meta.extreme_dim("min_dim"))


def _make_amax(name, op):
    def fn(input, dim=(), keepdim=False):
        _check_tensor(input, name)
        _no_complex(input, name)
        dims = _dims(input, dim, name)
        _nonempty(input, dims, name, _given(dim))
        return op(input, dims, bool(keepdim))

    fn.__name__ = name
    return tensor_method()(fn)


amax = _make_amax("amax", amax_op)
amin = _make_amax("amin", amin_op)


def _make_max(name, all_op, dim_op, binary):
    result = getattr(return_types, name)

    def fn(input, dim=None, keepdim=False, *, other=None):
        _check_tensor(input, name)
        if isinstance(dim, Tensor):  # max(input, other): the elementwise maximum
            dim, other = None, dim
        if other is not None:
            return binary(input, other)
        _no_complex(input, name)
        if dim is None:
            _nonempty(input, (), name, False)
            return all_op(input, tuple(range(input.ndim)), False)
        d = _wrap_dim(dim, input.ndim, name)
        if input.ndim:
            _nonempty(input, (d,), name, True)
        return result(*dim_op(input, d, bool(keepdim)))

    fn.__name__ = name
    return tensor_method()(fn)


def _binary(name):
    def fn(a, b):
        from .elementwise import binary_api
        return binary_api[name](a, b)
    return fn


max = _make_max("max", amax_op, max_dim_op, _binary("maximum"))
min = _make_max("min", amin_op, min_dim_op, _binary("minimum"))

aminmax_op = define("aminmax(Tensor self, int[] dim, bool keepdim) -> (Tensor min, Tensor max)",
                    composite=lambda x, dim, keepdim: (amin_op(x, dim, keepdim),
                                                       amax_op(x, dim, keepdim)))


@tensor_method()
def aminmax(input, *, dim=None, keepdim=False):
    _check_tensor(input, "aminmax")
    _no_complex(input, "aminmax")
    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        d = _wrap_dim(dim, input.ndim, "aminmax")
        dims = (d,) if input.ndim else ()
    if not input.numel():
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        for d in dims:
            if input._shape[d] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return return_types.aminmax(*aminmax_op(input, dims, bool(keepdim)))


_ARG_SCHEMA = "(Tensor self, int? dim, bool keepdim) -> Tensor"
argmax_op = define("argmax" + _ARG_SCHEMA, meta=_meta.arg_extreme("argmax"))
argmin_op = define("argmin" + _ARG_SCHEMA, meta=_meta.arg_extreme("argmin"))


def _make_arg(name, op):
    def fn(input, dim=None, keepdim=False):
        _check_tensor(input, name)
        if input.dtype is _dtype.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        _no_complex(input, name)
        if dim is None:
            if not input.numel():
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 f"input.numel() == 0.")
            return op(input, None, bool(keepdim))
        d = _wrap_dim(dim, input.ndim, name)
        if not input.ndim:
            return op(input, None, bool(keepdim))
        if input._shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        return op(input, d, bool(keepdim))

    fn.__name__ = name
    return tensor_method()(fn)


argmax = _make_arg("argmax", argmax_op)
argmin = _make_arg("argmin", argmin_op)


# -- all, any -----------------------------------------------------------------------------------
_LOGICAL_SCHEMA = "(Tensor self, int[] dim, bool keepdim, dtype dtype) -> Tensor"
all_op = define("all" + _LOGICAL_SCHEMA, meta=_meta.reduction("all"))
any_op = define("any" + _LOGICAL_SCHEMA, meta=_meta.reduction("any"))


def _make_logical(name, op):
    def fn(input, dim=None, keepdim=False):
        _check_tensor(input, name)
        dtype = _dtype.uint8 if input.dtype is _dtype.uint8 else _dtype.bool_
        return op(input, _dims(input, dim, name, empty_is_all=False), bool(keepdim), dtype)

    fn.__name__ = name
    return tensor_method()(fn)


all = _make_logical("all", all_op)
any = _make_logical("any", any_op)


# -- logsumexp, norms, count_nonzero -------------------------------------------------------------
def _logsumexp(x, dim, keepdim):
    from .elementwise import add, sub, unary_api, where
    from .views import reshape
    exp, log = unary_api["exp"], unary_api["log"]
    if not x.numel():  # sum over nothing is 0: log gives -inf, as PyTorch does
        return log(sum_op(exp(x), dim, keepdim, x.dtype))
    m = amax_op(x, dim, True)
    m = where(unary_api["isinf"](m), 0.0, m)  # keeps inf - inf out of the shift
    r = add(log(sum_op(exp(sub(x, m)), dim, True, x.dtype)), m)
    return r if keepdim else reshape(r, _without(x._shape, dim))


logsumexp_op = define("logsumexp(Tensor self, int[] dim, bool keepdim) -> Tensor",
                      composite=_logsumexp)


@tensor_method()
def logsumexp(input, dim, keepdim=False):
    _check_tensor(input, "logsumexp")
    _no_complex(input, "logsumexp")
    x = input if input.dtype.category == FLOATING else input.to(_dtype.get_default_dtype())
    return logsumexp_op(x, _dims(x, dim, "logsumexp"), bool(keepdim))


vector_norm_op = define("vector_norm(Tensor self, float ord, int[] dim, bool keepdim) -> Tensor",
                        meta=_meta.vector_norm)


def _nuclear_norm(x, dim, keepdim):
    from .linalg import svdvals_op
    from .views import movedim, unsqueeze
    s = svdvals_op(movedim(x, dim, (-2, -1)))
    r = sum_op(s, (s.ndim - 1,), False, s.dtype)
    if keepdim:
        for d in sorted(dim):
            r = unsqueeze(r, d)
    return r


nuclear_norm_op = define("nuclear_norm(Tensor self, int[] dim, bool keepdim) -> Tensor",
                         composite=_nuclear_norm)


def _fmt_ord(p):
    return int(p) if math.isfinite(p) and p == int(p) else p


@tensor_method()
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    _check_tensor(input, "norm")
    if input.dtype.category < FLOATING:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype_title(input.dtype)}")
    x = input if dtype is None else input.to(_dtype.as_dtype(dtype))
    if p is None:
        p = "fro"
    if isinstance(p, str):
        if p == "nuc":
            r = nuclear_norm_op(x, _matrix_dims(x, dim), bool(keepdim))
            return r if out is None else _write_out(out, r, "norm")
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        p = 2
    ord = float(p)
    dims = _dims(x, dim, "norm")
    if (ord < 0 or ord == math.inf) and x.numel() == 0:
        if not _given(dim):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on an "
                               f"empty tensor because the operation does not have an identity")
        for d in dims:
            if x._shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on "
                                   f"the dimension {d} because this dimension is empty and the "
                                   f"operation does not have an identity")
    r = vector_norm_op(x, ord, dims, bool(keepdim))
    return r if out is None else _write_out(out, r, "norm")


def _matrix_dims(x, dim):
    if dim is None:
        dim = tuple(range(x.ndim))
    if not isinstance(dim, (list, tuple)) or len(dim) != 2:
        got = " ".join(str(d) for d in dim) if isinstance(dim, (list, tuple)) else dim
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {got}")
    d0, d1 = (_wrap_dim(d, x.ndim, "norm") for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def _write_out(out, r, op):
    from ._util import write_out
    return write_out(out, r, op)


def _count_nonzero(x, dim):
    from .elementwise import binary_api
    return sum_op(binary_api["ne"](x, 0), dim, False, _dtype.int64)


count_nonzero_op = define("count_nonzero(Tensor self, int[] dim) -> Tensor",
                          composite=_count_nonzero)


@tensor_method()
def count_nonzero(input, dim=None):
    _check_tensor(input, "count_nonzero")
    return count_nonzero_op(input, _dims(input, dim, "count_nonzero"))


# -- scans --------------------------------------------------------------------------------------
cumsum_op = define("cumsum(Tensor self, int dim, dtype dtype) -> Tensor",
                   meta=_meta.along_dim("cumsum"))
cumprod_op = define("cumprod(Tensor self, int dim, dtype dtype) -> Tensor",
                    meta=_meta.along_dim("cumprod"))


def _make_scan(name, op):
    def fn(input, dim, *, dtype=None):
        _check_tensor(input, name)
        d = _wrap_dim(dim, input.ndim, name)
        dt = _accumulate_dtype(input, dtype)
        if dt is _dtype.bool_:
            raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
        return op(input, d, dt)

    def fn_(self, dim, *, dtype=None):
        if dtype is not None and _dtype.as_dtype(dtype) is not self.dtype:
            from .linalg import _cpp
            raise RuntimeError(f"Bad in-place call: input tensor dtype {_cpp(self.dtype)} and "
                               f"output tensor dtype {_cpp(_dtype.as_dtype(dtype))} should match")
        if self.dtype is _dtype.bool_:
            raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
        return self.copy_(op(self, _wrap_dim(dim, self.ndim, name + "_"), self.dtype))

    fn.__name__, fn_.__name__ = name, name + "_"
    setattr(Tensor, name + "_", fn_)
    return tensor_method()(fn)


cumsum = _make_scan("cumsum", cumsum_op)
cumprod = _make_scan("cumprod", cumprod_op)


# -- softmax ------------------------------------------------------------------------------------
softmax_op = define("softmax(Tensor self, int dim, dtype dtype) -> Tensor",
                    meta=_meta.along_dim("softmax"))
log_softmax_op = define("log_softmax(Tensor self, int dim, dtype dtype) -> Tensor",
                        meta=_meta.along_dim("log_softmax"))


def _make_softmax(name, op):
    def fn(input, dim, dtype=None):
        _check_tensor(input, name)
        d = _wrap_dim(dim, input.ndim, name)
        dt = input.dtype if dtype is None else _dtype.as_dtype(dtype)
        if dt.category != FLOATING:
            raise NotImplementedError(f"\"{name}\" not implemented for '{_dtype_title(dt)}'")
        _no_complex(input, name)
        return op(input, d, dt)

    fn.__name__ = name
    return tensor_method()(fn)


softmax = _make_softmax("softmax", softmax_op)
log_softmax = _make_softmax("log_softmax", log_softmax_op)
