"""The one kernel template: an elementwise loop over a strided, broadcast output.

Every op of the backend that touches each output element once (unary, binary, ternary ops,
conversions, copies, factories) is a *body*: C statements that compute ``r`` from the inputs
``x0, x1, ...`` (already converted to their load dtypes), the parameters ``p0, p1, ...`` and the
output's linear index ``i``. ``run`` wraps a body in the index math and launches it.

An op with a ``pointwise`` facet (its expression for one element, written beside its define in
``ember.ops``) gets its body from that rule (``rule_body``), rendered by ``Dialect`` — the same
rendering ``fusion.py`` gives the statements of a fused kernel, so eager and fused kernels
compute one expression. Operands are ``X[j]`` (input j) and the numbers a rule would write as
literals can be ``P[k]`` (parameter k), so one kernel serves every value. Bodies stay
hand-written where the rule does not say what the eager kernel must do: complex, integer
division and powers, and where the CPU reference rounds differently from the rule (those are
listed in ``math_unary``/``math_binary``).

Index math: the output shape and each tensor operand's offset and strides (broadcast dims get
stride 0) are collapsed -- size-1 dims dropped, dims that are contiguous for every operand merged
-- and passed in a small int64 *metadata buffer*, so a new shape reuses the compiled kernel. A
kernel is compiled once per (body, dtypes, operand kinds, collapsed rank) and kept in memory;
ember's verified on-disk binary cache (``binaries``) makes later processes skip the compiler too. Metadata buffers
are cached per layout (shapes, strides, offsets) as well.
"""
from __future__ import annotations

import logging
import time
import warnings
from typing import NamedTuple

import numpy as np

from ember.compiler.pointwise import Dialect as _CDialect
from ember.kit import gpu_common
from ember.runtime import dtypes as D, get_op
from ember import Tensor
from ember.runtime import data_of, layout_of

from . import binaries, cltypes

log = logging.getLogger("ember.kernels")

MAX_META = 4096  # cached layouts per device before the cache is dropped and refilled
UNIT = -1        # the "rank" of a layout whose operands are all contiguous and 1-D
ERR_ZERO_DIV = 1
ERRORS = {ERR_ZERO_DIV: "ZeroDivisionError"}


class Body:
    """An elementwise computation. ``code(ctx)`` returns C statements assigning ``r``;
    ``prelude(ctx)`` optional helper functions. ``ctx`` is a ``Ctx``. ``name`` must identify
    the code for every ctx (it is part of the kernel cache key). A body with ``store=False``
    writes no output: it only inspects its inputs (and may set ``*ERR``).

    ``kinds`` are the compute-dtype categories the code is valid for ("f"loat, "i"nt,
    "b"ool, "c"omplex: code for complex ``CT`` reads ``ctx.is_complex`` and uses the helpers of
    ``complex_prelude``). Bodies put in one ``group`` are compiled together: the first time
    one of them is needed for a signature (dtypes, operand kinds, rank), its siblings valid
    for that compute dtype are built in the same program, which costs about as much as
    building one (compiler start-up dominates) and spares a build each when the program uses
    them later."""

    __slots__ = ("name", "code", "prelude", "store", "kinds", "group", "any_output")

    def __init__(self, name, code, prelude=None, store=True, kinds="fib", any_output=False):
        self.name = name
        self.code = code if callable(code) else (lambda ctx, c=code: c)
        self.prelude = prelude
        self.store = store
        self.kinds = kinds
        self.group = ()
        # conversions: build the kernel for every output dtype of the device at once
        self.any_output = any_output

    def accepts(self, ct) -> bool:
        return _KIND_LETTER.get(ct.category, "") in self.kinds


_KIND_LETTER = {D.BOOL: "b", D.INTEGRAL: "i", D.FLOATING: "f", D.COMPLEX: "c"}


class KernelKey(NamedTuple):
    """What a compiled elementwise kernel is specialised for (its cache key)."""
    body: str            # the Body's name
    out_dtype: object    # the output tensor's dtype
    operands: tuple      # per input: its dtype, or None for a Python scalar
    loads: tuple         # per input: the dtype it is converted to when read (x{j})
    compute: object      # CT: the dtype the body computes in
    result: object       # the dtype of r (converted to out_dtype when stored)
    params: tuple        # dtypes of the extra arguments p{k}
    rank: int            # collapsed rank, or UNIT for unit-stride contiguous operands
    check: bool          # the body may flag a device-side error


# -- bodies from an op's pointwise rule -------------------------------------------------------------
class Operand:
    """A rule's operand or number as a kernel variable: ``x{j}`` (input j: a tensor element or a
    scalar argument) or ``p{k}`` (parameter k)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


X = tuple(Operand(f"x{j}") for j in range(4))
P = tuple(Operand(f"p{k}") for k in range(4))


class Dialect(_CDialect):
    """OpenCL C spelling of pointwise rules, for fused kernels and for bodies made from rules:
    math functions are overloaded by type (``exp`` of a float is the float exp), literals of
    types other than float and double are cast to the compute type (``((char)1)``), and an
    ``Operand`` where a rule writes a number is that kernel variable."""

    def __init__(self, dtype, render_var=lambda operand: operand.name):
        super().__init__(dtype, render_var)

    def lit(self, value):
        if isinstance(value, Operand):
            return value.name
        if self.dtype is D.float32 or self.dtype is D.float64:
            return super().lit(value)
        return cltypes.lit(value, self.dtype)


def rule_body(name, op_name, *args, covers="f", kinds=None, otherwise=None, prelude=None):
    """A ``Body`` computing ``r`` by ``op_name``'s pointwise rule over ``args`` (``X``/``P``
    operands, Python values for the rule's other arguments; the compute dtype follows) for
    the dtype kinds in ``covers``; ``otherwise(ctx)`` is hand-written code for the rest of
    ``kinds`` (default: ``covers``)."""
    def code(ctx):
        if otherwise is not None and _KIND_LETTER.get(ctx.ct.category, "") not in covers:
            return otherwise(ctx)
        expr = get_op(op_name).pointwise(Dialect(ctx.ct), *args, ctx.ct)
        if expr is None:
            raise TypeError(f"opencl: the pointwise rule of '{op_name}' declines {args}")
        return f"r = {expr};"
    return Body(name, code, prelude, kinds=kinds or covers)


def group(*bodies):
    """Make ``bodies`` compile together (see ``Body``)."""
    members = tuple(bodies)
    for b in members:
        b.group = members
    return members


class Ctx:
    """What a body's code may depend on: the compute dtype ``ct`` (C name ``c``) and the
    device's widest float ``wide`` (float64 where supported: special functions of float32
    are evaluated there, like scipy does)."""

    def __init__(self, ct, wide):
        self.ct = ct
        self.c = cltypes.CTYPE.get(ct, "float")
        self.wide = wide
        self.w = cltypes.CTYPE[wide]
        self.is_float = ct.category == D.FLOATING
        self.is_complex = ct.category == D.COMPLEX
        self.is_bool = ct is D.bool_
        self.is_int = ct.category == D.INTEGRAL
        self.signed = ct.is_signed
        self.bits = ct.itemsize * 8

    def lit(self, v, d=None):
        return cltypes.lit(v, self.ct if d is None else d)

    @property
    def u(self):
        """The unsigned C type of the same width (integer compute types)."""
        return cltypes.UNSIGNED[self.c]


# -- layouts ------------------------------------------------------------------------------------
def collapse(shape, layouts):
    """(sizes, [strides per operand]) with size-1 dims dropped and mergeable dims merged;
    ``layouts`` are (shape, stride) of each operand, broadcast to ``shape``."""
    nd = len(shape)
    full = []
    for s, st in layouts:
        pad = nd - len(s)
        full.append([0] * pad + [0 if s[k] == 1 else st[k] for k in range(len(s))])
    sizes, strides = [], [[] for _ in layouts]
    for d in range(nd - 1, -1, -1):
        n = shape[d]
        if n == 1:
            continue
        if sizes and all(f[d] == g[-1] * sizes[-1] for f, g in zip(full, strides)):
            sizes[-1] *= n
            continue
        sizes.append(n)
        for f, g in zip(full, strides):
            g.append(f[d])
    sizes.reverse()
    for g in strides:
        g.reverse()
    return sizes, strides


def remember(state, key, entry):
    """Keep ``entry`` (metadata buffers) for ``key`` in the device's bounded layout cache."""
    if len(state.meta) >= MAX_META:
        state.meta.clear()  # buffers in flight stay alive: OpenCL retains them per command
    state.meta[key] = entry
    return entry


def metadata(state, key):
    """(rank, metadata buffer) of the layout ``key`` = ``(shape, layout_of(t) for each
    tensor)``, the tensors broadcast to ``shape``; built once per layout."""
    import pyopencl as cl
    shape, layouts = key[0], key[1:]
    sizes, strides = collapse(shape, [(s, st) for s, st, _ in layouts])
    meta = list(sizes)
    for (_, _, offset), st in zip(layouts, strides):
        meta.append(offset)
        meta.extend(st)
    buf = cl.Buffer(state.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=np.array(meta, dtype=np.int64))
    # every operand contiguous and of the output's shape: rank UNIT, whose kernel indexes with
    # i itself, so the compiler sees unit strides and vectorizes loads and stores
    rank = UNIT if len(sizes) == 1 and all(st[0] == 1 for st in strides) else len(sizes)
    return remember(state, key, (rank, buf))


# -- source -------------------------------------------------------------------------------------
def _ctx(state, ct):
    return Ctx(ct, D.float64 if state.fp64 else ct if ct.category == D.FLOATING else D.float32)


def complex_prelude(fp64):
    """Complex arithmetic on CT = float2/double2 (x: real part, y: imaginary part), RT its real
    type: c_add and c_mul from the C the GPU backends share, then the rest with numpy's
    algorithms (Smith's division, hypot for |z|) so results match the CPU backend."""
    return gpu_common.source("opencl", fp64) + "EMBER_COMPLEX_OPS(c, CT)\n" + _COMPLEX_MATH


_COMPLEX_MATH = """
CT c_div(CT a, CT b) {
  RT ar = fabs(b.x), ai = fabs(b.y);
  if (ar >= ai) {
    if (ar == 0 && ai == 0) return (CT)(a.x / ar, a.y / ar);
    RT rat = b.y / b.x, scl = (RT)1 / (b.x + b.y * rat);
    return (CT)((a.x + a.y * rat) * scl, (a.y - a.x * rat) * scl);
  }
  RT rat = b.x / b.y, scl = (RT)1 / (b.y + b.x * rat);
  return (CT)((a.x * rat + a.y) * scl, (a.y * rat - a.x) * scl);
}
RT c_abs(CT a) { return hypot(a.x, a.y); }
CT c_exp(CT a) {
  if (a.y == 0) return (CT)(exp(a.x), a.y);
  RT e = exp(a.x); return (CT)(e * cos(a.y), e * sin(a.y));
}
CT c_log(CT a) { return (CT)(log(hypot(a.x, a.y)), atan2(a.y, a.x)); }
CT c_sqrt(CT a) {
  if (a.x == 0 && a.y == 0) return (CT)((RT)0, a.y);
  if (isinf(a.y)) return (CT)((RT)INFINITY, a.y);
  RT t = sqrt((fabs(a.x) + hypot(a.x, a.y)) * (RT)0.5);
  if (a.x >= 0) return (CT)(t, a.y / (2 * t));
  return (CT)(fabs(a.y) / (2 * t), copysign(t, a.y));
}
"""


def header(state, key) -> list:
    ctx = _ctx(state, key.compute)
    # no fused a*b+c: numpy rounds every operation, and so must we to match it
    lines = ["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(state.dtypes),
             f"typedef {ctx.c} CT;", f"typedef {ctx.w} W;",
             "#define ERR err" if key.check else "#define ERR ((__global int*)0)"]
    if ctx.is_complex:
        lines += [f"typedef {cltypes.CTYPE[key.compute.to_real()]} RT;",
                  complex_prelude(state.fp64)]
    return lines


def kernel_source(state, key, body, kname="ew") -> str:
    """The kernel ``kname`` for ``key`` (see ``run``); needs ``header`` and the prelude."""
    _, odt, desc, loads, ct, rt, pdts, rank, check = key
    ctx = _ctx(state, ct)
    tensors = [j for j, d in enumerate(desc) if d is not None]
    scalars = [j for j, d in enumerate(desc) if d is None]
    nt = 1 + len(tensors)
    unit = rank == UNIT
    R = 1 if unit else rank
    args = [f"__global {cltypes.CTYPE[odt]}* out"]
    args += [f"__global const {cltypes.CTYPE[desc[j]]}* in{j}" for j in tensors]
    args += ["__global const long* meta", "const long n"]
    args += [f"const {cltypes.CTYPE[d]} p{k}" for k, d in enumerate(pdts)]
    args += [f"const {cltypes.CTYPE[loads[j]]} x{j}" for j in scalars]
    if check:
        args.append("__global int* err")
    lines = [f"__kernel void {kname}({', '.join(args)})\n{{"]
    for d in range(1, R):
        lines.append(f"  const long n{d} = meta[{d}];")
    for t in range(nt):
        base = R + t * (R + 1)
        lines.append(f"  const long o{t} = meta[{base}];")
        for d in range(R):
            lines.append(f"  const long s{t}_{d} = meta[{base + 1 + d}];")
    lines.append("  const long gs = get_global_size(0);")
    lines.append("  for (long i = get_global_id(0); i < n; i += gs) {")
    if R:
        lines.append("    long q = i, c;" if R > 1 else "    const long q = i;")
    for t in range(nt):
        lines.append(f"    long a{t} = o{t};")
    for d in range(R - 1, 0, -1):
        lines.append(f"    c = q % n{d}; q /= n{d};")
        lines.extend(f"    a{t} += c * s{t}_{d};" for t in range(nt))
    if unit:  # every stride is 1: known at compile time, not loaded
        lines.extend(f"    a{t} += q;" for t in range(nt))
    elif R:
        lines.extend(f"    a{t} += q * s{t}_0;" for t in range(nt))
    for pos, j in enumerate(tensors, start=1):
        lines.append(f"    const {cltypes.CTYPE[loads[j]]} x{j} = "
                     f"{cltypes.cvt(f'in{j}[a{pos}]', desc[j], loads[j])};")
    lines.append(f"    {cltypes.CTYPE[rt]} r;")
    lines.append("    { " + body.code(ctx) + " }")
    # a bool result may hold any nonzero value (true + true); memory holds 0 or 1
    if body.store:
        rv = "(uchar)(r != 0)" if rt is D.bool_ else "r"
        lines.append(f"    out[a0] = {cltypes.cvt(rv, rt, odt)};")
    lines.append("  }\n}")
    return "\n".join(lines)


def source(state, jobs) -> str:
    """One program with a kernel ``k{i}`` per (key, body) job; the keys differ at most in the
    body name and the output dtype, so they share the header."""
    key0 = jobs[0][0]
    ctx = _ctx(state, key0.compute)
    lines = header(state, key0)
    preludes = []
    for _, b in jobs:
        text = b.prelude(ctx) if b.prelude is not None else None
        if text and text not in preludes:  # shared helpers (integer division) appear once
            preludes.append(text)
    lines += preludes
    lines += [kernel_source(state, k, b, f"k{i}") for i, (k, b) in enumerate(jobs)]
    return "\n".join(lines)


def compile_program(state, src, what, options=()):
    """Build ``src`` for the device (every module of the backend compiles through here):
    compiler warnings are PoCL's chatter, a failure names ``what`` and shows the source."""
    import pyopencl as cl
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        try:
            program = binaries.build(state.context, state.device, src, options)
            # once per program and device (callers keep the kernels); ember's binary cache
            # makes a rebuild in a later process fast
            log.info("opencl: built %s for %s in %.0f ms", what, state.device.name,
                     1e3 * (time.perf_counter() - start))
            return program
        except cl.RuntimeError as e:
            raise RuntimeError(f"opencl: building {what} failed:\n{e}\n--- source ---\n"
                               f"{src}") from None


def _compile(state, src):
    import pyopencl as cl
    options = []
    if state.device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
        options.append("-cl-fp32-correctly-rounded-divide-sqrt")  # numpy's float32 x/y, sqrt
    return compile_program(state, src, "an elementwise program", options)


def _build(state, key, body):
    import pyopencl as cl
    ct = key.compute
    if not body.accepts(ct):  # e.g. a real-only body asked to compute in complex
        raise TypeError(f"opencl: the '{body.name}' kernel does not compute in {ct}")
    jobs = [(key, body)]
    # complex bodies whose result is real or bool (abs, isnan) are built alone: their siblings
    # would assign a complex value to a real r
    siblings = body.group if ct.category != D.COMPLEX or key.result is ct else ()
    for b in siblings:
        k = key._replace(body=b.name)
        if b is not body and b.accepts(ct) and k not in state.kernels:
            jobs.append((k, b))
    if body.any_output:
        for d in sorted(state.dtypes, key=lambda d: d.name):
            k = key._replace(out_dtype=d)
            if d is not key.out_dtype and k not in state.kernels:
                jobs.append((k, body))
    prg = err = None
    for attempt in ([jobs, jobs[:1]] if len(jobs) > 1 else [jobs]):
        try:
            prg = _compile(state, source(state, attempt))
            jobs = attempt
            break
        except (cl.RuntimeError, RuntimeError) as e:  # a sibling invalid here must not cost
            # the op its kernel
            err = e
    if prg is None:
        raise RuntimeError(f"opencl: building the kernel for '{key.body}' failed:\n{err}\n"
                           f"--- source ---\n{source(state, jobs[:1])}") from None
    desc, loads, pdts, check = key.operands, key.loads, key.params, key.check
    ntens = 1 + sum(d is not None for d in desc)
    arg_types = [None] * ntens + [None, np.int64]
    arg_types += [cltypes.np_type(d) for d in pdts]
    arg_types += [cltypes.np_type(loads[j]) for j, d in enumerate(desc) if d is None]
    if check:
        arg_types.append(None)
    for i, (k, _) in enumerate(jobs):
        knl = getattr(prg, f"k{i}")
        knl.set_scalar_arg_dtypes(arg_types)
        state.kernels[k] = knl
    return state.kernels[key]


# -- launch -------------------------------------------------------------------------------------
_MAX_GLOBAL = 1 << 26


def global_size(state, n):
    """One work-item per element, rounded up to whole work-groups of ``state.local_size``;
    beyond 2**26 elements the kernel's loop strides over the rest (capping lower was 4x slower
    on PoCL, whose vectorizer works across work-items)."""
    ls = state.local_size
    g = (n + ls - 1) // ls * ls
    return g if g < _MAX_GLOBAL else _MAX_GLOBAL


def run(state, queue, body, out, inputs=(), loads=(), ct=None, rt=None, params=(), check=False):
    """Launch ``body`` writing every element of ``out`` (a tensor with any strides).

    ``inputs`` are Tensors (on ``out``'s device, broadcastable to it) or Python scalars; input
    ``j`` is converted to ``loads[j]`` and named ``x{j}`` in the body. ``ct`` is the body's
    compute dtype (``CT`` in C), ``rt`` the dtype of ``r`` (stored converted to ``out.dtype``).
    ``params`` are (value, dtype) kernel arguments ``p{k}``. With ``check`` the kernel may set
    an error code, read back (blocking) and raised here.
    """
    out_layout = layout_of(out)
    shape = out_layout[0]
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return out
    tensors = [out]
    layouts = [shape, out_layout]
    desc = []
    for x in inputs:
        if isinstance(x, Tensor):
            tensors.append(x)
            layouts.append(layout_of(x))
            desc.append(x.dtype)
        else:
            desc.append(None)
    lkey = tuple(layouts)
    ent = state.meta.get(lkey)
    if ent is None:
        ent = metadata(state, lkey)
    rank, mbuf = ent
    ct = ct if ct is not None else out.dtype
    rt = rt if rt is not None else ct
    key = KernelKey(body.name, out.dtype, tuple(desc), tuple(loads), ct, rt,
                    tuple([d for _, d in params]), rank, check)
    knl = state.kernels.get(key)
    if knl is None:
        knl = _build(state, key, body)
    args = [data_of(t) for t in tensors]
    args.append(mbuf)
    args.append(n)
    for v, d in params:
        args.append(cltypes.pack_scalar(v, d))
    for j, x in enumerate(inputs):
        if desc[j] is None:
            args.append(cltypes.pack_scalar(x, loads[j]))
    if check:
        args.append(state.err_buffer)
    with state.launch_lock:  # a kernel object's arguments are shared state: set, then enqueue
        state.last[queue] = knl(queue, (global_size(state, n),), state.local_sizes, *args)
    if check:
        _raise_flagged(state, queue)
    return out


def _raise_flagged(state, queue):
    """Read the error flag the kernel may have set (this blocks on ``queue``)."""
    import pyopencl as cl
    flag = np.zeros(1, np.int32)
    cl.enqueue_copy(queue, flag, state.err_buffer, is_blocking=True)
    if flag[0]:
        cl.enqueue_copy(queue, state.err_buffer, np.zeros(1, np.int32), is_blocking=True)
        raise RuntimeError(ERRORS.get(int(flag[0]), f"opencl kernel error {int(flag[0])}"))
