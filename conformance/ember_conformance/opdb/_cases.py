"""Sample inputs written as short case tables, for the entries of issue #25's op families.

A case is ``(description, operands, kwargs)``; an operand is

* ``(shape, "x")`` — a float operand of the entry's dtype in [-1.5, 1.5], contiguous;
* ``(shape, "l")`` — the same values laid out transposed (or strided for 1-D);
* ``(shape, ("f", low, high))`` — a float operand in [low, high];
* ``(shape, ("i", low, high))`` — an int64 operand in [low, high];
* ``(shape, "b")`` — a bool operand;
* ``("const", value)`` — a Python value passed as is (a number, a tuple, None);
* ``("fn", build)`` — ``build(device, dtype)`` returns the operand.

Operands are deterministic functions of (case index, position), so the same values exist on
every device.
"""
from __future__ import annotations

from . import FLOATS, OpInfo, SampleInput, make_tensor


def _operand(spec, seed, dtype, dev):
    shape, kind = spec
    if shape == "const":
        return kind
    if shape == "fn":
        return kind(dev, dtype)
    if kind == "b":
        return make_tensor(seed, shape, "bool", dev)
    if isinstance(kind, tuple) and kind[0] == "i":
        return make_tensor(seed, shape, "int64", dev, low=kind[1], high=kind[2])
    if isinstance(kind, tuple) and kind[0] == "f":
        return make_tensor(seed, shape, dtype, dev, low=kind[1], high=kind[2])
    layout = "contiguous"
    if kind == "l":
        layout = "transposed" if len(shape) >= 2 else "strided"
    return make_tensor(seed, shape, dtype, dev, low=-1.5, high=1.5, layout=layout)


def cases(*table, base=0):
    def gen(dtype):
        for i, (desc, operands, kw) in enumerate(table):
            def build(dev, operands=operands, kw=kw, i=i):
                args = tuple(_operand(op, base + 100 * i + j, dtype, dev)
                             for j, op in enumerate(operands))
                return args, dict(kw)
            yield SampleInput(f"{dtype} {desc}", build)
    return gen


def entry(name, fn, *table, covers=(), dtypes=FLOATS, differentiable=True, tolerances=None,
          random=False, grad_dtypes=FLOATS):
    return OpInfo(name, fn, cases(*table), dtypes=dtypes, covers=tuple(covers),
                  differentiable=differentiable, tolerances=dict(tolerances or {}),
                  random=random, grad_dtypes=grad_dtypes)


def inplace(fn_):
    """An in-place entry runs on a fresh copy of its first operand."""
    def run(x, *args, **kwargs):
        y = x.clone()
        out = fn_(y, *args, **kwargs)
        assert out is y, "in-place ops return self"
        return y
    return run
