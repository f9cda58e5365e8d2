"""The native kernel set: enough for a Linear+ReLU MLP's forward, backward and SGD step.

Every kernel has two halves:

* the *host half* (the function bound into the kernel table) runs in the caller's thread. It
  derives the output's shape and dtype from metadata only -- values may not be computed yet --
  allocates the output in the arena, queues the device half and returns at once;
* the *device half* (a ``_body`` function) runs later on the stream's worker and computes with
  numpy straight into the output's arena memory (``out=``).

Host halves are module-level functions taking the backend first; ``TABLE`` lists them and
``register(backend)`` binds them. The unary and binary math ops share one host half each and
differ only in the numpy function: ``UNARY`` and ``BINARY`` are one row per op.

A kernel receives exactly its op's arguments (``ember.runtime.get_op(name).schema``); the op
layer has already validated shapes and chosen the compute dtype. Operands in ``Tensor``
positions may be Python scalars. Ops not listed here run on the CPU fallback.
"""
from __future__ import annotations

import math
from functools import partial
from types import MethodType

import numpy as np

from ember import Tensor
from ember.runtime import broadcast_shapes, dtypes

_SCALARS = (int, float, bool, complex)
_HALF = frozenset(d.np for d in (dtypes.float16, dtypes.bfloat16))
_F32 = np.dtype(np.float32)


def _acc(dt):
    """The dtype to accumulate in: half precision sums and products in float32, as PyTorch."""
    return _F32 if dt in _HALF else dt


def _shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) else ()


def _device(*xs):
    return next(x.device for x in xs if isinstance(x, Tensor))


def _launch(be, out, name, body, *args):
    """Queue ``body(*args)`` on ``out``'s device; ``args`` hold every tensor it reads."""
    be.launch(out.device, name, body, *args)
    return out


def _broadcast_out(be, dtype, *xs):
    return be.new_tensor(broadcast_shapes(*(_shape(x) for x in xs)), dtype, _device(*xs))


# -- device-side helpers (run on the worker) --------------------------------------------------------
def _operand(be, x, dt):
    """A tensor's array in dtype ``dt``, or a scalar numpy takes weakly (NEP 50) in ``dt``."""
    if isinstance(x, Tensor):
        a = be.native(x)
        return a if a.dtype == dt else a.astype(dt)
    if x.__class__ is int and dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= x <= info.max:  # int8 + 1000 wraps, as an integer tensor op does
            return np.asarray(x).astype(dt)
    if dt.kind == "b":
        return np.asarray(x, dtype=dt)
    return x


def _into(dst, r):
    """Write a computed value into an in-place op's target."""
    if r.dtype.kind == "c" and dst.dtype.kind != "c":
        r = r.real
    np.copyto(dst, r, casting="unsafe")


# -- copies and constants -----------------------------------------------------------------------
def copy_(be, dst, src):
    return be.copy_(dst, src)


def to_copy(be, x, dtype):
    from .backend import copy_body
    out = be.new_tensor(x.shape, dtype, x.device)
    return _launch(be, out, "_to_copy", copy_body, be, out, x)


def _fill_body(be, t, value):
    a = be.native(t)
    if isinstance(value, int) and a.dtype.kind in "iu":
        value = np.asarray(value).astype(a.dtype)  # uint8 fill -1 wraps, as a cast does
    a[...] = value


def fill_(be, self, value):
    return _launch(be, self, "fill_", _fill_body, be, self, value)


def full(be, size, fill_value, dtype, device):
    out = be.new_tensor(size, dtype, device)
    return _launch(be, out, "full", _fill_body, be, out, fill_value)


# -- unary: one row per op ----------------------------------------------------------------------
def _relu(a, out=None):
    if a.dtype.kind == "b":
        return np.copyto(out, a) if out is not None else a.copy()
    return np.maximum(a, a.dtype.type(0), out=out)


def _sigmoid(a, out=None):
    r = np.negative(a, out=out)
    np.exp(r, out=r)
    np.add(r, 1, out=r)
    return np.reciprocal(r, out=r)


UNARY = {"neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh,
         "relu": _relu, "sigmoid": _sigmoid}


def _unary_body(be, f, out, x, dt):
    f(_operand(be, x, dt), out=be.native(out))


def unary(be, name, f, x, compute):
    out = be.new_tensor(x.shape, compute, x.device)
    return _launch(be, out, name, _unary_body, be, f, out, x, compute.np)


def _unary_body_(be, f, x):
    a = be.native(x)
    if a.dtype.kind in "fc":
        f(a, out=a)
    else:
        _into(a, f(a))


def unary_(be, name, f, x, compute):
    return _launch(be, x, name, _unary_body_, be, f, x)


# -- binary: arithmetic and comparisons, one row per op -----------------------------------------
def _pow(a, b, out=None):
    if isinstance(b, np.ndarray) and b.dtype.kind in "iu" and b.size and (b < 0).any():
        # integer a ** -n, as PyTorch computes it: 1 for a == 1, +-1 for a == -1 (by the parity
        # of n), else 0 (the op layer refuses negative *scalar* exponents)
        neg = b < 0
        r = np.power(a, np.where(neg, 0, b))
        small = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        r = np.where(neg, small, r).astype(r.dtype)
        return r if out is None else np.copyto(out, r)
    return np.power(a, b, out=out)


BINARY = {"mul": np.multiply, "pow": _pow, "maximum": np.maximum, "minimum": np.minimum,
          "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _binary_body(be, f, out, a, b, dt):
    f(_operand(be, a, dt), _operand(be, b, dt), out=be.native(out))


def binary(be, name, f, out_dtype, a, b, compute):
    out = _broadcast_out(be, out_dtype or compute, a, b)
    return _launch(be, out, name, _binary_body, be, f, out, a, b, compute.np)


def _binary_body_(be, f, a, b, dt):
    _into(be.native(a), f(_operand(be, a, dt), _operand(be, b, dt)))


def binary_(be, name, f, a, b, compute):
    return _launch(be, a, name, _binary_body_, be, f, a, b, compute.np)


# -- add and sub (with alpha) -------------------------------------------------------------------
def _scaled(be, y, alpha, dt):
    if alpha.__class__ is int and alpha == 1:
        return y
    # a scalar operand is scaled in Python precision, then taken like any scalar operand
    return _operand(be, y * alpha, dt) if y.__class__ in _SCALARS else \
        np.multiply(y, _operand(be, alpha, dt))


def _add_sub_body(be, f, out, a, b, alpha, dt):
    f(_operand(be, a, dt), _scaled(be, _operand(be, b, dt), alpha, dt), out=be.native(out))


def add_sub(be, name, f, a, b, alpha, compute):
    out = _broadcast_out(be, compute, a, b)
    return _launch(be, out, name, _add_sub_body, be, f, out, a, b, alpha, compute.np)


def _add_sub_body_(be, f, a, b, alpha, dt):
    x = be.native(a)
    y = _scaled(be, _operand(be, b, dt), alpha, dt)
    if x.dtype == dt:
        f(x, y, out=x)  # the optimizer's p.sub_(lr * g) path: no temporary
    else:
        _into(x, f(x.astype(dt), y))


def add_sub_(be, name, f, a, b, alpha, compute):
    return _launch(be, a, name, _add_sub_body_, be, f, a, b, alpha, compute.np)


# -- division -----------------------------------------------------------------------------------
def _div(x, y, mode):
    if mode is None:
        return np.true_divide(x, y)
    if mode == "floor":
        return np.floor_divide(x, y)
    if (x.dtype if x.__class__ not in _SCALARS else y.dtype).kind in "iu":
        q = np.floor_divide(x, y)  # truncation for integers: floor, then fix negatives
        return q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))
    return np.trunc(np.true_divide(x, y))


def _check_int_divisor(be, b, mode, compute):
    """Integer division by zero raises in PyTorch's CPU kernels; deciding it needs the divisor's
    values, so this is one of the few places the host waits for the device."""
    if mode is None or compute.np.kind not in "iu":
        return
    if isinstance(b, Tensor):
        values = be.to_numpy(b)
        if values.size and not values.all():
            raise RuntimeError("ZeroDivisionError")
    elif b == 0:
        raise RuntimeError("ZeroDivisionError")


def _div_body(be, out, a, b, mode, dt):
    np.copyto(be.native(out), _div(_operand(be, a, dt), _operand(be, b, dt), mode),
              casting="unsafe")


def div(be, a, b, mode, compute):
    _check_int_divisor(be, b, mode, compute)
    out = _broadcast_out(be, compute, a, b)
    return _launch(be, out, "div", _div_body, be, out, a, b, mode, compute.np)


def div_(be, a, b, mode, compute):
    _check_int_divisor(be, b, mode, compute)
    return _launch(be, a, "div_", _div_body, be, a, a, b, mode, compute.np)


def _where_body(be, out, cond, a, b, dt):
    o = be.native(out)
    np.copyto(o, _operand(be, b, dt), casting="unsafe")
    np.copyto(o, _operand(be, a, dt), casting="unsafe", where=be.native(cond))


def where(be, cond, a, b, compute):
    out = _broadcast_out(be, compute, cond, a, b)
    return _launch(be, out, "where", _where_body, be, out, cond, a, b, compute.np)


# -- reductions ---------------------------------------------------------------------------------
def _reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def _sum_body(be, out, x, dim, keepdim, count):
    o = be.native(out)
    acc = _acc(o.dtype)
    target = o if acc == o.dtype else np.empty(o.shape, acc)
    np.sum(be.native(x), axis=dim, keepdims=keepdim, dtype=acc, out=target)
    if count is not None:  # mean = sum / n; n == 0 gives nan, quietly
        np.true_divide(target, count, out=target)
    if target is not o:
        np.copyto(o, target, casting="unsafe")


def sum_(be, x, dim, keepdim, dtype):
    out = be.new_tensor(_reduced_shape(x.shape, dim, keepdim), dtype, x.device)
    return _launch(be, out, "sum", _sum_body, be, out, x, dim, keepdim, None)


def mean(be, x, dim, keepdim, dtype):
    shape = x.shape
    out = be.new_tensor(_reduced_shape(shape, dim, keepdim), dtype, x.device)
    count = math.prod(shape[d] for d in dim)
    return _launch(be, out, "mean", _sum_body, be, out, x, dim, keepdim, count)


# -- matmul -------------------------------------------------------------------------------------
def _matmul_shape(a, b):
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return b[:-2] + b[-1:]
    if len(b) == 1:
        return a[:-1]
    return broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])


def _matmul_body(be, out, a, b):
    o, x, y = be.native(out), be.native(a), be.native(b)
    if o.dtype in _HALF:
        np.copyto(o, np.matmul(x.astype(_F32), y.astype(_F32)), casting="unsafe")
    else:
        np.matmul(x, y, out=o)


def matmul(be, a, b):
    out = be.new_tensor(_matmul_shape(tuple(a.shape), tuple(b.shape)), a.dtype, a.device)
    return _launch(be, out, "matmul", _matmul_body, be, out, a, b)


#: the kernels that are not rows of UNARY/BINARY
TABLE = {"copy_": copy_, "_to_copy": to_copy, "fill_": fill_, "full": full, "div": div,
         "div_": div_, "where": where, "sum": sum_, "mean": mean, "matmul": matmul}


def register(backend) -> None:
    """Bind every kernel of this module into ``backend.kernels``."""
    K = backend.kernels.register
    for name, fn in TABLE.items():
        K(name, MethodType(fn, backend))
    for name, f in UNARY.items():
        K(name, partial(unary, backend, name, f))
        K(name + "_", partial(unary_, backend, name + "_", f))
    for name, f in BINARY.items():
        K(name, partial(binary, backend, name, f, dtypes.bool_ if name in COMPARISONS else None))
        K(name + "_", partial(binary_, backend, name + "_", f))
    for name, f in (("add", np.add), ("sub", np.subtract)):
        K(name, partial(add_sub, backend, name, f))
        K(name + "_", partial(add_sub_, backend, name + "_", f))
