"""Multi-tensor kernels: ``_foreach_*`` and the fused optimizer steps in one launch per list
chunk, and the fused activation backward ops on the elementwise template.

OpenCL 1.2 has no pointers in buffers, so a launch takes up to ``CHUNK`` tensors per list as
separate buffer arguments, and an int64 metadata buffer with the running element counts and the
storage offsets of each tensor. A work-item finds its tensor by walking those counts and
selects the buffers with a chain of ternaries. A parameter group of up to ``CHUNK`` tensors
(per dtype) is therefore one launch per op; larger groups take ceil(n / CHUNK). Tensors must be
contiguous (optimizer state always is); a list that is not runs the op's composite.

Each op is a *body* over ``v0, v1, ...`` (one element of list 0, 1, ...) that assigns the new
values of the lists it writes; scalars arrive as ``s0, s1, ...`` in the compute type. The
arithmetic and its order follow the array kit (``ember.kit.foreach``) and the composites.
"""
from __future__ import annotations

import numpy as np

from ember.kit.binding import bind, bind_with
from ember.runtime import data_of, get_op, offset_of, shape_of
from ember.runtime import dtypes as D

from . import cltypes
from . import progs
from .codegen import X, Body, remember, rule_body, run

CHUNK = 16

# name: (lists read, lists written (indices), scalar count, body)
_LERP = ("if (s0 < (CT)0.5) { v0 = v0 + (v1 - v0) * s0; } "
         "else { v0 = v0 - v1; v0 = v0 * ((CT)1 - s0); v0 = v0 + v1; }")
BODIES = {
    "add_": (2, (0,), 1, "v0 = v0 + v1 * s0;"),
    "add_one": (2, (0,), 0, "v0 = v0 + v1;"),
    "add_scalar_": (1, (0,), 1, "v0 = v0 + s0;"),
    "mul_": (1, (0,), 1, "v0 = v0 * s0;"),
    "div_": (1, (0,), 1, "v0 = v0 / s0;"),
    "mul_list_": (2, (0,), 0, "v0 = v0 * v1;"),
    "div_list_": (2, (0,), 0, "v0 = v0 / v1;"),
    "lerp_": (2, (0,), 1, _LERP),
    "addcmul_": (3, (0,), 1, "v0 = v0 + v1 * v2 * s0;"),
    "addcdiv_": (3, (0,), 1, "v0 = v0 + (v1 / v2) * s0;"),
    "maximum_": (2, (0,), 0, "v0 = (v0 != v0 || v0 >= v1) ? v0 : v1;"),
    "sqrt": (2, (0,), 0, "v0 = sqrt(v1);"),
    # p, g, buf; s: wd, momentum, -lr, 1 - dampening, nesterov, maximize, first
    "sgd": (3, (0, 2), 7,
            "CT d = s5 != (CT)0 ? -v1 : v1; if (s0 != (CT)0) d = d + v0 * s0; "
            "if (s1 != (CT)0) { if (s6 != (CT)0) v2 = d; "
            "else { v2 = v2 * s1; v2 = v2 + d * s3; } "
            "d = s4 != (CT)0 ? d + v2 * s1 : v2; } v0 = v0 + d * s2;"),
    # p, g, m, v, vmax; s: 1 - beta1, beta2, 1 - beta2, wd, eps, -(lr / bc1), bc2sqrt,
    # 1 - lr * wd, decoupled, maximize, amsgrad (host-computed in double, as the CPU does)
    "adam": (5, (0, 2, 3, 4), 11,
             "CT d = s9 != (CT)0 ? -v1 : v1; "
             "if (s3 != (CT)0) { if (s8 != (CT)0) v0 = v0 * s7; else d = d + v0 * s3; } "
             "if (s0 < (CT)0.5) { v2 = v2 + (d - v2) * s0; } "
             "else { v2 = v2 - d; v2 = v2 * ((CT)1 - s0); v2 = v2 + d; } "
             "v3 = v3 * s1; v3 = v3 + d * d * s2; "
             "CT den; if (s10 != (CT)0) { v4 = (v4 != v4 || v4 >= v3) ? v4 : v3; "
             "den = sqrt(v4); } else den = sqrt(v3); den = den / s6; den = den + s4; "
             "v0 = v0 + (v2 / den) * s5;"),
}


def source(st, key):
    name, dt, k = key[1:]
    lists, written, nscalar, body = BODIES[name]
    c = cltypes.CTYPE[dt]
    L = [progs.header(st), f"typedef {c} CT;"]
    args = []
    for a in range(lists):
        args += [f"__global {c}* t{a}_{j}" for j in range(k)]
    args += ["__global const long* meta", "const long total"]
    args += [f"const CT s{i}" for i in range(nscalar)]
    L.append(f"__kernel void multi({', '.join(args)}) {{")
    L.append("  const long i = get_global_id(0);\n  if (i >= total) return;")
    # meta: counts[0..k] (running), then per list, per tensor: storage offset
    L.append("  int j = 0;")
    L.append(f"  while (j < {k - 1} && i >= meta[j + 1]) ++j;")
    L.append("  const long e = i - meta[j];")
    for a in range(lists):
        sel = f"t{a}_{k - 1}"
        for j in range(k - 2, -1, -1):
            sel = f"(j == {j} ? t{a}_{j} : {sel})"
        L.append(f"  __global {c}* p{a} = {sel};")
        L.append(f"  const long o{a} = meta[{k + 1} + {a} * {k} + j] + e;")
        L.append(f"  CT v{a} = p{a}[o{a}];")
    L.append("  { " + body + " }")
    for a in written:
        L.append(f"  p{a}[o{a}] = v{a};")
    L.append("}")
    return "\n".join(L)


def _contiguous(ts):
    return all(t.is_contiguous() for t in ts)


def launch(backend, name, lists, scalars):
    """Run body ``name`` over ``lists`` (equal-length lists of contiguous tensors of one dtype
    and device), ``CHUNK`` tensors per launch."""
    first = lists[0]
    if not first:
        return
    st, q = backend.state_queue(first[0].device)
    dt = first[0].dtype
    nlists, _, nscalar, _ = BODIES[name]
    for start in range(0, len(first), CHUNK):
        part = [xs[start:start + CHUNK] for xs in lists]
        k = len(part[0])
        key = ("foreach", name, dt, k)
        knl = progs.program(st, key, lambda: source(st, key),
                            {"multi": [None] * (nlists * k + 1) + [np.int64] +
                             [cltypes.np_type(dt)] * nscalar})["multi"]
        counts = [0]
        for t in part[0]:
            counts.append(counts[-1] + t.numel())
        meta = tuple(counts + [offset_of(t) for xs in part for t in xs])
        mkey = ("foreach-meta",) + meta
        mbuf = st.meta.get(mkey)  # an optimizer's lists repeat every step: upload once
        if mbuf is None:
            mbuf = remember(st, mkey, progs.buffer_of(st, meta))
        total = counts[-1]
        if total == 0:
            continue
        bufs = [data_of(t) for xs in part for t in xs]
        packed = [cltypes.pack_scalar(float(s), dt) for s in scalars]
        progs.launch(st, q, knl, total, *bufs, mbuf, total, *packed)


def _groups(lists):
    """Index groups with one dtype (and all tensors contiguous), else None."""
    by = {}
    for i, t in enumerate(lists[0]):
        by.setdefault(t.dtype, []).append(i)
    return by


def _run(backend, name, lists, scalars, composite):
    flat = [t for xs in lists for t in xs]
    if not flat:
        return
    if not _contiguous(flat) or any(t.dtype not in (D.float32, D.float64, D.float16) or
                                    t.dtype is not lists[0][0].dtype for t in flat):
        return composite()
    launch(backend, name, lists, scalars)


def _composite(op_name):
    """The op's composite (its single-tensor ops): for lists the kernel does not take."""
    return get_op(op_name).composite


# -- the multi-tensor kernels: each runs the op's composite for lists it does not take ----------
def simple(be, body, n_lists, composite, *args):
    """An op whose first ``n_lists`` arguments are tensor lists and the rest scalars."""
    _run(be, body, list(args[:n_lists]), list(args[n_lists:]), lambda: composite(*args))


#: op -> (body, number of tensor lists)
SIMPLE = {
    "_foreach_add_scalar_": ("add_scalar_", 1), "_foreach_mul_": ("mul_", 1),
    "_foreach_div_": ("div_", 1), "_foreach_lerp_": ("lerp_", 2),
    "_foreach_mul_list_": ("mul_list_", 2), "_foreach_div_list_": ("div_list_", 2),
    "_foreach_addcmul_": ("addcmul_", 3), "_foreach_addcdiv_": ("addcdiv_", 3),
    "_foreach_maximum_": ("maximum_", 2),
}


def add_(be, composite, selfs, others, alpha):
    _run(be, "add_one" if alpha == 1 else "add_", [selfs, others],
         [] if alpha == 1 else [alpha], lambda: composite(selfs, others, alpha))


def sqrt(be, selfs):
    st, _ = be.state_queue(selfs[0].device) if selfs else (None, None)
    outs = [be.new_tensor(st, shape_of(t), t.dtype, t.device) for t in selfs]
    _run(be, "sqrt", [outs, selfs], [], lambda: [o.copy_(s.sqrt()) for o, s in zip(outs, selfs)])
    return outs


def fused_sgd(be, composite, params, grads, bufs, wd, momentum, lr, dampening, nesterov,
              maximize, first):
    # without momentum the buffer list is the gradients, written back unchanged
    lists = [params, grads, bufs if momentum != 0 else grads]
    _run(be, "sgd", lists,
         [wd, momentum, -lr, 1 - dampening, float(nesterov), float(maximize), float(first)],
         lambda: composite(params, grads, bufs, wd, momentum, lr, dampening, nesterov,
                           maximize, first))


def fused_adam(be, decoupled, composite, params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps,
               lr, beta1, beta2, wd, eps, amsgrad, maximize):
    args = (params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, lr, beta1, beta2, wd, eps,
            amsgrad, maximize)
    by_step = {}
    for i, s in enumerate(steps):
        by_step.setdefault(s, []).append(i)
    if len(by_step) != 1:  # one launch per step count
        return composite(*args)
    step = steps[0] if steps else 1.0
    bc1 = 1 - beta1 ** step
    bc2 = (1 - beta2 ** step) ** 0.5
    # without amsgrad the last list is the gradients, written back unchanged
    lists = [params, grads, exp_avgs, exp_avg_sqs, max_sqs if amsgrad else grads]
    _run(be, "adam", lists,
         [1 - beta1, beta2, 1 - beta2, wd, eps, -(lr / bc1), bc2, 1 - lr * wd,
          float(decoupled), float(maximize), float(amsgrad)], lambda: composite(*args))


# -- fused activation backward ops on the elementwise template ------------------------------
# tanh_backward is its op's pointwise rule; the rules of the other two differ from the CPU
# reference (threshold_backward of a NaN input keeps the gradient, sigmoid_backward
# multiplies in another order)
THRESHOLD_BACKWARD = Body("threshold_backward", "r = x1 <= p0 ? (CT)0 : x0;", kinds="f")
TANH_BACKWARD = rule_body("tanh_backward", "tanh_backward", X[0], X[1])
SIGMOID_BACKWARD = Body("sigmoid_backward", "r = x0 * x1 * ((CT)1 - x1);", kinds="f")
# gelu's derivative: Phi(x) + x phi(x), or the tanh approximation's
GELU_BACKWARD = Body(
    "gelu_backward",
    "CT z = x1; r = x0 * ((CT)0.5 * ((CT)1 + erf(z * (CT)0.70710678118654752))"
    " + z * exp((CT)-0.5 * z * z) * (CT)0.39894228040143268);", kinds="f")
GELU_TANH_BACKWARD = Body(
    "gelu_backward_tanh",
    "CT z = x1; CT z2 = z * z;"
    " CT t = tanh((CT)0.79788456080286536 * (z + (CT)0.044715 * z2 * z));"
    " r = x0 * ((CT)0.5 * ((CT)1 + t) + (CT)0.5 * z * ((CT)1 - t * t)"
    " * (CT)0.79788456080286536 * ((CT)1 + (CT)0.134145 * z2));", kinds="f")


def binary_backward(be, body, g, y, *param):
    """threshold_backward (its threshold a parameter), tanh_backward, sigmoid_backward."""
    st, q = be.state_queue(g.device)
    out = be.new_tensor(st, shape_of(g), g.dtype, g.device)
    params = ((param[0], g.dtype),) if param else ()
    return run(st, q, body, out, (g, y), (g.dtype, g.dtype), g.dtype, g.dtype, params=params)


def gelu_backward(be, g, x, approximate):
    st, q = be.state_queue(g.device)
    out = be.new_tensor(st, shape_of(g), g.dtype, g.device)
    return run(st, q, GELU_TANH_BACKWARD if approximate == "tanh" else GELU_BACKWARD, out,
               (g, x), (g.dtype, g.dtype), g.dtype, g.dtype)


TABLE = {"_foreach_sqrt": sqrt, "gelu_backward": gelu_backward}


def register(backend):
    for op, (body, n_lists) in SIMPLE.items():
        bind_with(backend, op, simple, body, n_lists, _composite(op))
    bind_with(backend, "_foreach_add_", add_, _composite("_foreach_add_"))
    bind_with(backend, "_fused_sgd_", fused_sgd, _composite("_fused_sgd_"))
    bind_with(backend, "_fused_adam_", fused_adam, False, _composite("_fused_adam_"))
    bind_with(backend, "_fused_adamw_", fused_adam, True, _composite("_fused_adamw_"))
    for op, body in (("threshold_backward", THRESHOLD_BACKWARD),
                     ("tanh_backward", TANH_BACKWARD), ("sigmoid_backward", SIGMOID_BACKWARD)):
        bind_with(backend, op, binary_backward, body)
    bind(backend, TABLE)
