"""softmax and log_softmax along any dim, fused: one kernel per line reads the line three times
(its max, the sum of exp(x - max), then writes), so nothing but the result touches memory.

Long lines get a work-group each (``wg``: strided loops, tree combines in local memory); many
short lines get a work-item each (``item``). Both kernels of both ops are built in one program
per (input dtype, output dtype, collapsed rank). The math is the CPU kernel's: ``r = x - max``
in the accumulate dtype (float32 for half), then ``exp(r) / sum`` or ``r - log(sum)``; a NaN
max (a NaN in the line) makes the line NaN, as numpy's does.
"""
from __future__ import annotations

from ember.kit.binding import bind_with
from ember.runtime import data_of, shape_of

from . import cltypes
from . import lines as LN


def _body(log, mode, ls, reuse):
    loop = "for (long j = lid; j < N; j += LS)" if mode == "wg" else \
        "for (long j = 0; j < N; ++j)"
    L = ["  AT mx = -INFINITY;",
         f"  {loop} {{ const AT v = LOAD(j); mx = (v > mx || isnan(v)) ? v : mx; }}"]
    if mode == "wg":
        L += ["  sc[lid] = mx; barrier(CLK_LOCAL_MEM_FENCE);",
              "  for (int s = LS / 2; s > 0; s >>= 1) {",
              "    if (lid < s) { const AT a = sc[lid], b = sc[lid + s];",
              "                   sc[lid] = (a > b || isnan(a)) ? a : b; }",
              "    barrier(CLK_LOCAL_MEM_FENCE); }",
              "  mx = sc[0]; barrier(CLK_LOCAL_MEM_FENCE);"]
    if reuse:  # exp once per element (PoCL's exp is the cost): keep it in out, scale later
        L += ["  AT sum = 0;",
              f"  {loop} {{ const AT e = exp(LOAD(j) - mx); sum += e; out[b0 + j * l0] = e; }}"]
    else:
        L += ["  AT sum = 0;", f"  {loop} sum += exp(LOAD(j) - mx);"]
    if mode == "wg":
        L += ["  sc[lid] = sum; barrier(CLK_LOCAL_MEM_FENCE);",
              "  for (int s = LS / 2; s > 0; s >>= 1) {",
              "    if (lid < s) sc[lid] += sc[lid + s];",
              "    barrier(CLK_LOCAL_MEM_FENCE); }",
              "  sum = sc[0];"]
    if log:
        L += ["  const AT ls = log(sum);", f"  {loop} STORE(j, LOAD(j) - mx - ls);"]
    elif reuse:
        L += [f"  {loop} out[b0 + j * l0] /= sum;"]
    else:
        L += [f"  {loop} STORE(j, exp(LOAD(j) - mx) / sum);"]
    return L


def source(state, key):
    in_dt, at, out_dt, kr, ls = key[1:]
    L = [LN.header(state, IT=in_dt, OT=out_dt, AT=at), f"#define LS {ls}",
         f"#define LOAD(j) {cltypes.cvt('in[b1 + (j) * l1]', in_dt, at)}",
         f"#define STORE(j, v) out[b0 + (j) * l0] = {cltypes.cvt('(v)', at, out_dt)}"]
    for log in (False, True):
        for mode in ("wg", "item"):
            name = ("log_softmax_" if log else "softmax_") + mode
            L.append(f"__kernel void {name}(__global OT* out, __global const IT* in, "
                     f"__global const long* meta, const long M, const long N)\n{{")
            if mode == "wg":
                L += ["  __local AT sc[LS];", "  const long m = get_group_id(0);",
                      "  const int lid = get_local_id(0);"]
            else:
                L += ["  const long m = get_global_id(0);", "  if (m >= M) return;"]
            L.append("  " + LN.c_bases(kr, 2))
            L += _body(log, mode, ls, not log and out_dt is at)
            L.append("}")
    return "\n".join(L)


NAMES = ("softmax_wg", "softmax_item", "log_softmax_wg", "log_softmax_item")


def softmax(backend, log, x, dim, dtype):
    st, q = backend.state_queue(x.device)
    out = backend.new_tensor(st, shape_of(x), dtype, x.device)
    if x.numel() == 0:
        return out
    knls, M, N, mbuf, ls = LN.line_program(st, "softmax", x, out, dim, dtype, source, NAMES)
    # a work-group per line once lines are long enough to keep its work-items busy
    wg = N >= 4 * ls or M < st.compute_units
    name = ("log_softmax_" if log else "softmax_") + ("wg" if wg else "item")
    gsize, lsize = LN.launch_sizes(st, M, ls, wg)
    LN.launch(st, q, knls[name], gsize, lsize, data_of(out), data_of(x), mbuf, M, N)
    return out


def register(backend):
    bind_with(backend, "softmax", softmax, False)
    bind_with(backend, "log_softmax", softmax, True)
