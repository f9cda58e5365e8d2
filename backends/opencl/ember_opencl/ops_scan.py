"""cumsum and cumprod along any dim.

Many lines: a work-item per line, a sequential loop -- numpy's own summation order, so results
match the CPU bit for bit. Few long lines: a work-group per line walks it in chunks of ``LS``
elements; each chunk is scanned in local memory (Hillis-Steele: log2(LS) steps of "add the
element 2^s to the left") and offset by the carry of the chunks before it. Both kernels of both
ops come from one program per (input dtype, accumulate dtype, output dtype, collapsed rank).
"""
from __future__ import annotations

from ember.kit.binding import bind_with
from ember.runtime import data_of, shape_of

from . import cltypes
from . import lines as LN

OPS = {"cumsum": ("0", "+"), "cumprod": ("1", "*")}


def source(state, key):
    in_dt, at, out_dt, kr, ls = key[1:]
    L = [LN.header(state, IT=in_dt, OT=out_dt, AT=at), f"#define LS {ls}",
         f"#define LOAD(j) {cltypes.cvt('in[b1 + (j) * l1]', in_dt, at)}",
         f"#define STORE(j, v) out[b0 + (j) * l0] = {cltypes.cvt('(v)', at, out_dt)}"]
    args = "(__global OT* out, __global const IT* in, __global const long* meta, " \
           "const long M, const long N)\n{"
    for name, (init, op) in OPS.items():
        L.append(f"__kernel void {name}_item{args}")
        L.append("  const long m = get_global_id(0);\n  if (m >= M) return;")
        L.append("  " + LN.c_bases(kr, 2))
        L.append(f"  AT acc = {init};")
        L.append(f"  for (long j = 0; j < N; ++j) {{ acc = acc {op} LOAD(j); STORE(j, acc); }}")
        L.append("}")
        L.append(f"__kernel void {name}_wg{args}")
        L.append("  __local AT sc[LS];\n  const long m = get_group_id(0);\n"
                 "  const int lid = get_local_id(0);")
        L.append("  " + LN.c_bases(kr, 2))
        L.append(f"  AT carry = {init};")
        L.append("  for (long j0 = 0; j0 < N; j0 += LS) {")
        L.append("    const long j = j0 + lid;")
        L.append(f"    AT v = j < N ? LOAD(j) : (AT){init};")
        L.append("    sc[lid] = v; barrier(CLK_LOCAL_MEM_FENCE);")
        L.append("    for (int s = 1; s < LS; s <<= 1) {")
        L.append(f"      if (lid >= s) v = sc[lid - s] {op} v;")
        L.append("      barrier(CLK_LOCAL_MEM_FENCE);")
        L.append("      sc[lid] = v; barrier(CLK_LOCAL_MEM_FENCE);")
        L.append("    }")
        L.append(f"    if (j < N) STORE(j, carry {op} v);")
        L.append(f"    carry = carry {op} sc[LS - 1];")
        L.append("    barrier(CLK_LOCAL_MEM_FENCE);")
        L.append("  }\n}")
    return "\n".join(L)


NAMES = ("cumsum_item", "cumsum_wg", "cumprod_item", "cumprod_wg")


def scan(backend, name, x, dim, dtype, out=None):
    """``name`` ("cumsum"/"cumprod") of ``x`` along ``dim`` into a fresh tensor of ``dtype``
    (or into ``out``, any layout of ``x``'s shape)."""
    st, q = backend.state_queue(x.device)
    if out is None:
        out = backend.new_tensor(st, shape_of(x), dtype, x.device)
    if x.numel() == 0:
        return out
    knls, M, N, mbuf, ls = LN.line_program(st, "scan", x, out, dim, dtype, source, NAMES)
    wg = M < 4 * st.compute_units and N >= ls
    gsize, lsize = LN.launch_sizes(st, M, ls, wg)
    LN.launch(st, q, knls[f"{name}_{'wg' if wg else 'item'}"], gsize, lsize, data_of(out),
              data_of(x), mbuf, M, N)
    return out


def register(backend):
    for name in OPS:
        bind_with(backend, name, scan, name)
