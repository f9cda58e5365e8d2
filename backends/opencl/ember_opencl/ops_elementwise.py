"""Kernels of the elementwise family (``ember.ops.elementwise``): argument handling around the
bodies of ``math_unary`` / ``math_binary``, all launched through ``codegen.run``.

The op layer has validated shapes and chosen the compute dtype; kernels allocate the output
(C-contiguous, broadcast shape) and launch. In-place kernels write through ``self``'s strides.
"""
from __future__ import annotations

import numpy as np

from ember import Tensor
from ember.kit.binding import bind, bind_with
from ember.runtime import broadcast_shapes, layout_of, shape_of, storage_of
from ember.runtime import dtypes as D

from . import math_binary as MB
from . import math_unary as MU
from .codegen import run

_INT_KINDS = (D.BOOL, D.INTEGRAL)


def broadcast_shape(*xs):
    """The broadcast shape of the tensors among ``xs`` (scalars take no part)."""
    out = ()
    for x in xs:
        if isinstance(x, Tensor):
            shape = shape_of(x)
            if shape != out:
                out = broadcast_shapes(out, shape)
    return out


def _first_tensor(*xs):
    for x in xs:
        if isinstance(x, Tensor):
            return x
    raise TypeError("opencl: an elementwise kernel got no tensor")


def no_overlap(out, x):
    """``x`` itself, or a private copy when it shares memory with ``out`` through another
    layout (``a.add_(a.t())``): work-items run in any order, so the read must not race."""
    if isinstance(x, Tensor) and storage_of(x) is storage_of(out) and \
            layout_of(x) != layout_of(out):
        return x.clone()
    return x


# -- unary ------------------------------------------------------------------------------------
def unary(be, body, predicate, real, x, compute):
    """A unary op into a new tensor: bool for a predicate, real for abs of a complex."""
    st, q = be.state_queue(x.device)
    rt = D.bool_ if predicate else compute.to_real() if real else compute
    out = be.new_tensor(st, shape_of(x), rt, x.device)
    return run(st, q, body, out, (x,), (compute,), compute, rt)


def unary_(be, body, integer_identity, x, compute):
    """A unary op in place; floor/ceil/trunc leave an integer tensor as it is."""
    st, q = be.state_queue(x.device)
    if integer_identity and x.dtype.category in _INT_KINDS:
        return x
    return run(st, q, body, x, (x,), (x.dtype,), x.dtype, x.dtype)


def _round_into(be, x, decimals, out):
    st, q = be.state_queue(x.device)
    dt = x.dtype
    if decimals == 0 or (decimals > 0 and dt.category != D.FLOATING):
        return run(st, q, MU.ROUND["0"], out, (x,), (dt,), dt, dt)
    if decimals > 0:
        return run(st, q, MU.ROUND["pos"], out, (x,), (dt,), dt, dt,
                   params=((10.0 ** decimals, dt),))
    pd = dt if dt.category == D.FLOATING else st.wide
    return run(st, q, MU.ROUND["neg"], out, (x,), (dt,), dt, dt,
               params=((10.0 ** -decimals, pd),))


def round_kernel(be, x, decimals):
    st = be.state_queue(x.device)[0]
    return _round_into(be, x, decimals, be.new_tensor(st, shape_of(x), x.dtype, x.device))


def round_inplace(be, x, decimals):
    return _round_into(be, x, decimals, x)


def _nan_to_num_into(be, x, nan, posinf, neginf, out):
    st, q = be.state_queue(x.device)
    dt = x.dtype
    if dt.category != D.FLOATING:
        return be.copy_(out, x) if out is not x else x
    info = np.finfo(dt.np)
    params = ((nan, dt), (float(info.max) if posinf is None else posinf, dt),
              (float(info.min) if neginf is None else neginf, dt))
    return run(st, q, MU.NAN_TO_NUM, out, (x,), (dt,), dt, dt, params=params)


def nan_to_num(be, x, nan, posinf, neginf):
    st = be.state_queue(x.device)[0]
    out = be.new_tensor(st, shape_of(x), x.dtype, x.device)
    return _nan_to_num_into(be, x, nan, posinf, neginf, out)


def nan_to_num_(be, x, nan, posinf, neginf):
    return _nan_to_num_into(be, x, nan, posinf, neginf, x)


# -- activations: the compute dtype is the op's (``compute``, its last argument) or the input's
def _activation(be, body, ct, out_dtype, x, params):
    st, q = be.state_queue(x.device)
    out = be.new_tensor(st, shape_of(x), out_dtype, x.device)
    return run(st, q, body, out, (x,), (ct,), ct, ct, params=tuple((v, ct) for v in params))


def gelu(be, x, approximate, compute):
    body = MU.GELU_TANH if approximate == "tanh" else MU.GELU
    return _activation(be, body, compute, compute, x, ())


def softplus(be, x, beta, threshold, compute):
    return _activation(be, MU.SOFTPLUS, compute, compute, x, (beta, threshold))


def leaky_relu(be, x, slope):
    return _activation(be, MU.LEAKY_RELU, x.dtype, x.dtype, x, (slope,))


def elu(be, x, alpha, scale, input_scale):
    return _activation(be, MU.ELU, x.dtype, x.dtype, x, (alpha * scale, scale, input_scale))


def hardtanh(be, x, lo, hi):
    ct = x.dtype if x.dtype.category == D.FLOATING else be.state_queue(x.device)[0].wide
    return _activation(be, MU.HARDTANH, ct, x.dtype, x, (lo, hi))


# -- binary -------------------------------------------------------------------------------------
def check_divisor(be, name, b, compute):
    """Raise like the CPU kernel for a zero integer divisor. A tensor ``b`` is scanned on
    the device, which blocks until the scan is done: that read-back is the one wait an op
    makes, and only integer division makes it."""
    if name not in MB.CHECKED or compute.category != D.INTEGRAL:
        return
    if not isinstance(b, Tensor):
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        return
    st, q = be.state_queue(b.device)
    run(st, q, MB.ANY_ZERO, b, (b,), (compute,), compute, compute, check=True)


def _power_by_constant(name, a, b, compute):
    """The one-operand body of a float ``a ** b`` for a constant ``b`` of ``MB.POW_BY``, else
    None."""
    if name == "pow" and b.__class__ in (int, float) and b in MB.POW_BY and \
            compute.category == D.FLOATING and isinstance(a, Tensor):
        return MB.POW_BY[b]
    return None


def binary(be, name, body, to_bool, a, b, compute):
    t = _first_tensor(a, b)
    st, q = be.state_queue(t.device)
    rt = D.bool_ if to_bool else compute
    power = _power_by_constant(name, a, b, compute)
    if power is not None:
        out = be.new_tensor(st, shape_of(a), rt, t.device)
        return run(st, q, power, out, (a,), (compute,), compute, rt)
    check_divisor(be, name, b, compute)
    out = be.new_tensor(st, broadcast_shape(a, b), rt, t.device)
    return run(st, q, body, out, (a, b), (compute, compute), compute, rt)


def binary_(be, name, body, to_bool, a, b, compute):
    st, q = be.state_queue(a.device)
    power = _power_by_constant(name, a, b, compute)
    if power is not None:   # x.pow_(3) as x ** 3 (the same bits)
        return run(st, q, power, a, (a,), (compute,), compute, compute)
    check_divisor(be, name, b, compute)
    return run(st, q, body, a, (a, no_overlap(a, b)), (compute, compute), compute,
               D.bool_ if to_bool else compute)


def _add_sub(be, plain, scaled, a, b, alpha, compute, out):
    t = _first_tensor(a, b)
    st, q = be.state_queue(t.device)
    params = ()
    body = plain
    if not (alpha.__class__ is int and alpha == 1):
        if isinstance(b, Tensor):
            body, params = scaled, ((alpha, compute),)
        else:
            b = b * alpha  # as the CPU does: the scalar product in Python precision
    if out is None:
        out = be.new_tensor(st, broadcast_shape(a, b), compute, t.device)
    else:
        b = no_overlap(out, b)
    return run(st, q, body, out, (a, b), (compute, compute), compute, compute, params=params)


def add_sub(be, plain, scaled, a, b, alpha, compute):
    return _add_sub(be, plain, scaled, a, b, alpha, compute, None)


def add_sub_(be, plain, scaled, a, b, alpha, compute):
    return _add_sub(be, plain, scaled, a, b, alpha, compute, a)


def div(be, a, b, mode, compute, out=None):
    t = _first_tensor(a, b)
    st, q = be.state_queue(t.device)
    if mode is not None:
        check_divisor(be, "floor_divide", b, compute)
    if out is None:
        out = be.new_tensor(st, broadcast_shape(a, b), compute, t.device)
    else:
        b = no_overlap(out, b)
    return run(st, q, MB.DIV[mode], out, (a, b), (compute, compute), compute, compute)


def div_(be, a, b, mode, compute):
    return div(be, a, b, mode, compute, a)


# -- where / clamp ------------------------------------------------------------------------------
def where(be, cond, a, b, compute):
    st, q = be.state_queue(cond.device)
    out = be.new_tensor(st, broadcast_shape(cond, a, b), compute, cond.device)
    return run(st, q, MB.WHERE, out, (cond, a, b), (D.bool_, compute, compute), compute,
               compute)


def clamp(be, x, lo, hi, compute, out=None):
    st, q = be.state_queue(x.device)
    body = MB.CLAMP[(lo is not None, hi is not None)]
    inputs = tuple(v for v in (x, lo, hi) if v is not None)
    if out is None:
        out = be.new_tensor(st, broadcast_shape(*inputs), compute, x.device)
    else:
        inputs = (x,) + tuple(no_overlap(out, v) for v in inputs[1:])
    return run(st, q, body, out, inputs, (compute,) * len(inputs), compute, compute)


def clamp_(be, x, lo, hi, compute):
    return clamp(be, x, lo, hi, compute, x)


TABLE = {
    "round": round_kernel, "round_": round_inplace, "nan_to_num": nan_to_num,
    "nan_to_num_": nan_to_num_, "gelu": gelu, "softplus": softplus, "leaky_relu": leaky_relu,
    "elu": elu, "hardtanh": hardtanh, "div": div, "div_": div_, "where": where, "clamp": clamp,
    "clamp_": clamp_,
}


def register(backend):
    """The table, then one kernel per row of ``math_unary.UNARY`` / ``math_binary.BINARY``."""
    for name, body in MU.UNARY.items():
        predicate = name in MU.PREDICATES
        bind_with(backend, name, unary, body, predicate, name == "abs")
        if not predicate:
            bind_with(backend, name + "_", unary_, body, name in ("floor", "ceil", "trunc"))
    for name, body in MB.BINARY.items():
        to_bool = name in MB.TO_BOOL
        bind_with(backend, name, binary, name, body, to_bool)
        bind_with(backend, name + "_", binary_, name, body, to_bool)
    bind_with(backend, "add", add_sub, MB.ADD, MB.ADD_ALPHA)
    bind_with(backend, "add_", add_sub_, MB.ADD, MB.ADD_ALPHA)
    bind_with(backend, "sub", add_sub, MB.SUB, MB.SUB_ALPHA)
    bind_with(backend, "sub_", add_sub_, MB.SUB, MB.SUB_ALPHA)
    bind(backend, TABLE)
