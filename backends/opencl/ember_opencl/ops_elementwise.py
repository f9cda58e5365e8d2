"""Kernels of the elementwise family (``ember.ops.elementwise``): argument handling around the
bodies of ``math_unary`` / ``math_binary``, all launched through ``codegen.run``.

The op layer has validated shapes and chosen the compute dtype; kernels allocate the output
(C-contiguous, broadcast shape) and launch. In-place kernels write through ``self``'s strides.
"""
from __future__ import annotations

import numpy as np

from ember.runtime import dtypes as D
from ember import Tensor
from ember.runtime import broadcast_shapes

from . import math_binary as MB
from . import math_unary as MU
from .codegen import run

_INT_KINDS = (D.BOOL, D.INTEGRAL)


def _shape(*xs):
    out = ()
    for x in xs:
        if isinstance(x, Tensor) and x._shape != out:
            out = broadcast_shapes(out, x._shape)
    return out


def _first_tensor(*xs):
    for x in xs:
        if isinstance(x, Tensor):
            return x
    raise TypeError("opencl: an elementwise kernel got no tensor")


def _no_overlap(out, x):
    """``x`` itself, or a private copy when it shares memory with ``out`` through another
    layout (``a.add_(a.t())``): work-items run in any order, so the read must not race."""
    if isinstance(x, Tensor) and x._storage is out._storage and \
            (x._stride != out._stride or x._offset != out._offset or x._shape != out._shape):
        return x.clone()
    return x


def register(backend):  # noqa: C901 - one table, read top to bottom
    K = backend.kernels.register
    sq = backend._sq
    new = backend._new

    # -- unary ----------------------------------------------------------------------------------
    def make_unary(name, body, pred):
        def kernel(x, compute):
            st, q = sq(x.device)
            rt = D.bool_ if pred else compute.to_real() if name == "abs" else compute
            out = new(st, x._shape, rt, x.device)
            return run(st, q, body, out, (x,), (compute,), compute, rt)

        def kernel_(x, compute):
            st, q = sq(x.device)
            if name in ("floor", "ceil", "trunc") and x.dtype.category in _INT_KINDS:
                return x
            return run(st, q, body, x, (x,), (x.dtype,), x.dtype, x.dtype)

        K(name, kernel)
        if not pred:
            K(name + "_", kernel_)

    for name, body in MU.UNARY.items():
        make_unary(name, body, name in MU.PREDICATES)

    def _round(x, decimals, out):
        st, q = sq(x.device)
        dt = x.dtype
        if decimals == 0 or (decimals > 0 and dt.category != D.FLOATING):
            return run(st, q, MU.ROUND["0"], out, (x,), (dt,), dt, dt)
        if decimals > 0:
            return run(st, q, MU.ROUND["pos"], out, (x,), (dt,), dt, dt,
                       params=((10.0 ** decimals, dt),))
        pd = dt if dt.category == D.FLOATING else st.wide
        return run(st, q, MU.ROUND["neg"], out, (x,), (dt,), dt, dt,
                   params=((10.0 ** -decimals, pd),))

    K("round", lambda x, decimals: _round(x, decimals, new(sq(x.device)[0], x._shape, x.dtype,
                                                           x.device)))
    K("round_", lambda x, decimals: _round(x, decimals, x))

    def _nan_to_num(x, nan, posinf, neginf, out):
        st, q = sq(x.device)
        dt = x.dtype
        if dt.category != D.FLOATING:
            return backend.copy_(out, x) if out is not x else x
        info = np.finfo(dt.np)
        params = ((nan, dt), (float(info.max) if posinf is None else posinf, dt),
                  (float(info.min) if neginf is None else neginf, dt))
        return run(st, q, MU.NAN_TO_NUM, out, (x,), (dt,), dt, dt, params=params)

    K("nan_to_num", lambda x, nan, posinf, neginf: _nan_to_num(
        x, nan, posinf, neginf, new(sq(x.device)[0], x._shape, x.dtype, x.device)))
    K("nan_to_num_", lambda x, nan, posinf, neginf: _nan_to_num(x, nan, posinf, neginf, x))

    def act(body, ct_of=None, params=lambda *a: ()):
        """An activation: compute dtype given by the op (``compute``) or the input's own."""
        def kernel(x, *args):
            st, q = sq(x.device)
            ct = args[-1] if ct_of is None else ct_of(st, x)
            out = new(st, x._shape, ct if ct_of is None else x.dtype, x.device)
            return run(st, q, body, out, (x,), (ct,), ct, ct,
                       params=tuple((v, ct) for v in params(*args)))
        return kernel

    def own(st, x):
        return x.dtype
    gelu, gelu_tanh = act(MU.GELU), act(MU.GELU_TANH)
    K("gelu", lambda x, approximate, compute: (gelu_tanh if approximate == "tanh" else gelu)(
        x, compute))
    K("softplus", act(MU.SOFTPLUS, params=lambda beta, threshold, compute: (beta, threshold)))
    K("leaky_relu", act(MU.LEAKY_RELU, own, params=lambda slope: (slope,)))
    K("elu", act(MU.ELU, own, params=lambda alpha, scale, input_scale: (
        alpha * scale, scale, input_scale)))
    K("hardtanh", act(MU.HARDTANH, lambda st, x: x.dtype if x.dtype.category == D.FLOATING
                      else st.wide, params=lambda lo, hi: (lo, hi)))

    # -- binary ---------------------------------------------------------------------------------
    def check_divisor(name, b, compute):
        """Raise like the CPU kernel for a zero integer divisor. A tensor ``b`` is scanned on
        the device, which blocks until the scan is done: that read-back is the one wait an op
        makes, and only integer division makes it."""
        if name not in MB.CHECKED or compute.category != D.INTEGRAL:
            return
        if not isinstance(b, Tensor):
            if b == 0:
                raise RuntimeError("ZeroDivisionError")
            return
        st, q = sq(b.device)
        run(st, q, MB.ANY_ZERO, b, (b,), (compute,), compute, compute, check=True)

    def make_binary(name, body, to_bool):
        def kernel(a, b, compute):
            t = _first_tensor(a, b)
            st, q = sq(t.device)
            rt = D.bool_ if to_bool else compute
            check_divisor(name, b, compute)
            out = new(st, _shape(a, b), rt, t.device)
            return run(st, q, body, out, (a, b), (compute, compute), compute, rt)

        def kernel_(a, b, compute):
            st, q = sq(a.device)
            check_divisor(name, b, compute)
            return run(st, q, body, a, (a, _no_overlap(a, b)), (compute, compute), compute,
                       D.bool_ if to_bool else compute)

        K(name, kernel)
        K(name + "_", kernel_)

    for name, body in MB.BINARY.items():
        make_binary(name, body, name in MB.TO_BOOL)

    def make_add_sub(name, plain, scaled):
        def launch(a, b, alpha, compute, out):
            t = _first_tensor(a, b)
            st, q = sq(t.device)
            params = ()
            body = plain
            if not (alpha.__class__ is int and alpha == 1):
                if isinstance(b, Tensor):
                    body, params = scaled, ((alpha, compute),)
                else:
                    b = b * alpha  # as the CPU does: the scalar product in Python precision
            if out is None:
                out = new(st, _shape(a, b), compute, t.device)
            else:
                b = _no_overlap(out, b)
            return run(st, q, body, out, (a, b), (compute, compute), compute, compute,
                       params=params)

        K(name, lambda a, b, alpha, compute: launch(a, b, alpha, compute, None))
        K(name + "_", lambda a, b, alpha, compute: launch(a, b, alpha, compute, a))

    make_add_sub("add", MB.ADD, MB.ADD_ALPHA)
    make_add_sub("sub", MB.SUB, MB.SUB_ALPHA)

    def div(a, b, mode, compute, out=None):
        t = _first_tensor(a, b)
        st, q = sq(t.device)
        if mode is not None:
            check_divisor("floor_divide", b, compute)
        if out is None:
            out = new(st, _shape(a, b), compute, t.device)
        else:
            b = _no_overlap(out, b)
        return run(st, q, MB.DIV[mode], out, (a, b), (compute, compute), compute, compute)

    K("div", div)
    K("div_", lambda a, b, mode, compute: div(a, b, mode, compute, a))

    # -- where / clamp --------------------------------------------------------------------------
    def where(cond, a, b, compute):
        st, q = sq(cond.device)
        out = new(st, _shape(cond, a, b), compute, cond.device)
        return run(st, q, MB.WHERE, out, (cond, a, b), (D.bool_, compute, compute), compute,
                   compute)

    K("where", where)

    def clamp(x, lo, hi, compute, out=None):
        st, q = sq(x.device)
        body = MB.CLAMP[(lo is not None, hi is not None)]
        inputs = tuple(v for v in (x, lo, hi) if v is not None)
        if out is None:
            out = new(st, _shape(*inputs), compute, x.device)
        else:
            inputs = (x,) + tuple(_no_overlap(out, v) for v in inputs[1:])
        return run(st, q, body, out, inputs, (compute,) * len(inputs), compute, compute)

    K("clamp", clamp)
    K("clamp_", lambda x, lo, hi, compute: clamp(x, lo, hi, compute, x))
