"""The native kernel set: enough for a Linear+ReLU MLP's forward, backward and SGD step.

Every kernel has two halves:

* the *host half* (the function registered in the kernel table) runs in the caller's thread.
  It derives the output's shape and dtype from metadata only -- values may not be computed
  yet -- allocates the output in the arena, queues the device half and returns at once;
* the *device half* runs later on the stream's worker and computes with numpy straight into
  the output's arena memory (``out=``).

A kernel receives exactly its op's arguments (see ``ember.dispatch.dispatcher.get_op(name)
.schema``); the op layer has already validated shapes and chosen the compute dtype. Operands in
``Tensor`` positions may be Python scalars. Ops not listed here run on the CPU fallback.
"""
from __future__ import annotations

import math

import numpy as np

from ember import _dtype
from ember._tensor import Tensor

_SCALARS = (int, float, bool, complex)
_HALF = frozenset(d.np for d in (_dtype.float16, _dtype.bfloat16))
_F32 = np.dtype(np.float32)


def _acc(dt):
    """The dtype to accumulate in: half precision sums and products in float32, as PyTorch."""
    return _F32 if dt in _HALF else dt


def _shape(x):
    return x._shape if isinstance(x, Tensor) else ()


def _device(*xs):
    return next(x.device for x in xs if isinstance(x, Tensor))


def register(backend):  # noqa: C901 - one table, read top to bottom
    K, native, new = backend.kernels.register, backend.native, backend.new_tensor

    def launch(out, name, body, *args):
        """Queue ``body(*args)`` on ``out``'s device; ``args`` hold every tensor it reads."""
        backend.launch(out.device, name, body, *args)
        return out

    # -- device-side helpers --------------------------------------------------------------------
    def operand(x, dt):
        """A tensor's array in dtype ``dt``, or a scalar numpy takes weakly (NEP 50) in ``dt``."""
        if isinstance(x, Tensor):
            a = native(x)
            return a if a.dtype == dt else a.astype(dt)
        if x.__class__ is int and dt.kind in "iu":
            info = np.iinfo(dt)
            if not info.min <= x <= info.max:  # int8 + 1000 wraps, as an integer tensor op does
                return np.asarray(x).astype(dt)
        if dt.kind == "b":
            return np.asarray(x, dtype=dt)
        return x

    def into(dst, r):
        """Write a computed value into an in-place op's target."""
        if r.dtype.kind == "c" and dst.dtype.kind != "c":
            r = r.real
        np.copyto(dst, r, casting="unsafe")

    # -- copies and constants -------------------------------------------------------------------
    def copy_(dst, src):
        return backend.copy_(dst, src)

    def to_copy(x, dtype):
        from .backend import _copy
        out = new(x._shape, dtype, x.device)
        return launch(out, "_to_copy", _copy, backend, out, x)

    def fill_body(t, value):
        a = native(t)
        if isinstance(value, int) and a.dtype.kind in "iu":
            value = np.asarray(value).astype(a.dtype)  # uint8 fill -1 wraps, as a cast does
        a[...] = value

    def fill_(self, value):
        return launch(self, "fill_", fill_body, self, value)

    def full(size, fill_value, dtype, device):
        out = new(size, dtype, device)
        return launch(out, "full", fill_body, out, fill_value)

    K("copy_", copy_)
    K("_to_copy", to_copy)
    K("fill_", fill_)
    K("full", full)

    # -- unary ----------------------------------------------------------------------------------
    def _relu(a, out=None):
        if a.dtype.kind == "b":
            return np.copyto(out, a) if out is not None else a.copy()
        return np.maximum(a, a.dtype.type(0), out=out)

    def _sigmoid(a, out=None):
        r = np.negative(a, out=out)
        np.exp(r, out=r)
        np.add(r, 1, out=r)
        return np.reciprocal(r, out=r)

    unary = {"neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
             "tanh": np.tanh, "relu": _relu, "sigmoid": _sigmoid}

    def make_unary(name, f):
        def body(out, x, dt):
            f(operand(x, dt), out=native(out))

        def kernel(x, compute):
            out = new(x._shape, compute, x.device)
            return launch(out, name, body, out, x, compute.np)

        def body_(x):
            a = native(x)
            if a.dtype.kind in "fc":
                f(a, out=a)
            else:
                into(a, f(a))

        def kernel_(x):
            return launch(x, name + "_", body_, x)

        K(name, kernel)
        K(name + "_", kernel_)

    for name, f in unary.items():
        make_unary(name, f)

    # -- binary: arithmetic and comparisons -----------------------------------------------------
    def _pow(a, b, out=None):
        if isinstance(b, np.ndarray) and b.dtype.kind in "iu" and b.size and (b < 0).any():
            # integer a ** -n, as PyTorch computes it: 1 for a == 1, +-1 for a == -1 (by the
            # parity of n), else 0 (the op layer refuses negative *scalar* exponents)
            neg = b < 0
            r = np.power(a, np.where(neg, 0, b))
            small = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
            r = np.where(neg, small, r).astype(r.dtype)
            return r if out is None else np.copyto(out, r)
        return np.power(a, b, out=out)

    binary = {"mul": np.multiply, "pow": _pow, "maximum": np.maximum, "minimum": np.minimum,
              "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal}
    comparisons = {"eq", "ne", "lt", "le", "gt", "ge"}

    def broadcast_out(dtype, *xs):
        shape = np.broadcast_shapes(*(_shape(x) for x in xs))
        return new(shape, dtype, _device(*xs))

    def make_binary(name, f):
        result_bool = name in comparisons

        def body(out, a, b, dt):
            f(operand(a, dt), operand(b, dt), out=native(out))

        def kernel(a, b, compute):
            out = broadcast_out(_dtype.bool_ if result_bool else compute, a, b)
            return launch(out, name, body, out, a, b, compute.np)

        def body_(a, b, dt):
            into(native(a), f(operand(a, dt), operand(b, dt)))

        def kernel_(a, b, compute):
            return launch(a, name + "_", body_, a, b, compute.np)

        K(name, kernel)
        K(name + "_", kernel_)

    for name, f in binary.items():
        make_binary(name, f)

    def scaled(y, alpha, dt):
        if alpha.__class__ is int and alpha == 1:
            return y
        # a scalar operand is scaled in Python precision, then taken like any scalar operand
        return operand(y * alpha, dt) if y.__class__ in _SCALARS else \
            np.multiply(y, operand(alpha, dt))

    def make_add_sub(name, f):
        def body(out, a, b, alpha, dt):
            f(operand(a, dt), scaled(operand(b, dt), alpha, dt), out=native(out))

        def kernel(a, b, alpha, compute):
            out = broadcast_out(compute, a, b)
            return launch(out, name, body, out, a, b, alpha, compute.np)

        def body_(a, b, alpha, dt):
            x = native(a)
            y = scaled(operand(b, dt), alpha, dt)
            if x.dtype == dt:
                f(x, y, out=x)  # the optimizer's p.sub_(lr * g) path: no temporary
            else:
                into(x, f(x.astype(dt), y))

        def kernel_(a, b, alpha, compute):
            return launch(a, name + "_", body_, a, b, alpha, compute.np)

        K(name, kernel)
        K(name + "_", kernel_)

    make_add_sub("add", np.add)
    make_add_sub("sub", np.subtract)

    def _div(x, y, mode):
        if mode is None:
            return np.true_divide(x, y)
        if mode == "floor":
            return np.floor_divide(x, y)
        if (x.dtype if x.__class__ not in _SCALARS else y.dtype).kind in "iu":
            q = np.floor_divide(x, y)  # truncation for integers: floor, then fix negatives
            return q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))
        return np.trunc(np.true_divide(x, y))

    def check_int_divisor(b, mode, compute):
        """Integer division by zero raises in PyTorch's CPU kernels; deciding it needs the
        divisor's values, so this is one of the few places the host waits for the device."""
        if mode is None or compute.np.kind not in "iu":
            return
        if isinstance(b, Tensor):
            values = backend.to_numpy(b)
            if values.size and not values.all():
                raise RuntimeError("ZeroDivisionError")
        elif b == 0:
            raise RuntimeError("ZeroDivisionError")

    def div_body(out, a, b, mode, dt):
        np.copyto(native(out), _div(operand(a, dt), operand(b, dt), mode), casting="unsafe")

    def div(a, b, mode, compute):
        check_int_divisor(b, mode, compute)
        out = broadcast_out(compute, a, b)
        return launch(out, "div", div_body, out, a, b, mode, compute.np)

    def div_(a, b, mode, compute):
        check_int_divisor(b, mode, compute)
        return launch(a, "div_", div_body, a, a, b, mode, compute.np)

    K("div", div)
    K("div_", div_)

    def where_body(out, cond, a, b, dt):
        o = native(out)
        np.copyto(o, operand(b, dt), casting="unsafe")
        np.copyto(o, operand(a, dt), casting="unsafe", where=native(cond))

    def where(cond, a, b, compute):
        out = broadcast_out(compute, cond, a, b)
        return launch(out, "where", where_body, out, cond, a, b, compute.np)

    K("where", where)

    # -- reductions -----------------------------------------------------------------------------
    def reduced_shape(shape, dims, keepdim):
        if keepdim:
            return tuple(1 if i in dims else n for i, n in enumerate(shape))
        return tuple(n for i, n in enumerate(shape) if i not in dims)

    def sum_body(out, x, dim, keepdim, count):
        o = native(out)
        acc = _acc(o.dtype)
        target = o if acc == o.dtype else np.empty(o.shape, acc)
        np.sum(native(x), axis=dim, keepdims=keepdim, dtype=acc, out=target)
        if count is not None:  # mean = sum / n; n == 0 gives nan, quietly
            np.true_divide(target, count, out=target)
        if target is not o:
            np.copyto(o, target, casting="unsafe")

    def sum_(x, dim, keepdim, dtype):
        out = new(reduced_shape(x._shape, dim, keepdim), dtype, x.device)
        return launch(out, "sum", sum_body, out, x, dim, keepdim, None)

    def mean(x, dim, keepdim, dtype):
        out = new(reduced_shape(x._shape, dim, keepdim), dtype, x.device)
        count = math.prod(x._shape[d] for d in dim)
        return launch(out, "mean", sum_body, out, x, dim, keepdim, count)

    K("sum", sum_)
    K("mean", mean)

    # -- matmul ---------------------------------------------------------------------------------
    def matmul_shape(a, b):
        if len(a) == 1 and len(b) == 1:
            return ()
        if len(a) == 1:
            return b[:-2] + b[-1:]
        if len(b) == 1:
            return a[:-1]
        return np.broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])

    def matmul_body(out, a, b):
        o, x, y = native(out), native(a), native(b)
        if o.dtype in _HALF:
            np.copyto(o, np.matmul(x.astype(_F32), y.astype(_F32)), casting="unsafe")
        else:
            np.matmul(x, y, out=o)

    def matmul(a, b):
        out = new(matmul_shape(a._shape, b._shape), a.dtype, a.device)
        return launch(out, "matmul", matmul_body, out, a, b)

    K("matmul", matmul)
