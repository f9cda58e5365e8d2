"""Entries for ``ember.ops.elementwise.ternary``: addcmul, addcdiv, lerp and their in-place
forms (broadcast operands, transposed layouts, scalar and tensor weights)."""
from __future__ import annotations

import ember

from . import FLOATS, INTS
from ._cases import entry, inplace

_T = [("same shape", [((3, 4), "x"), ((3, 4), "l"), ((3, 4), "x")], {}),
      ("broadcast", [((3, 4), "x"), ((4,), "x"), ((3, 1), "x")], {}),
      ("empty", [((0, 4), "x"), ((4,), "x"), ((1, 4), "x")], {})]
_DIV = [("same shape", [((3, 4), "x"), ((3, 4), "l"), ((3, 4), ("f", 0.5, 2.0))], {}),
        ("broadcast", [((3, 4), "x"), ((4,), "x"), ((3, 1), ("f", 0.5, 2.0))], {})]
_LERP_T = [("tensor weight", [((3, 4), "x"), ((3, 4), "l"), ((3, 4), ("f", 0.0, 1.0))], {}),
           ("broadcast weight", [((3, 4), "x"), ((4,), "x"), ((3, 1), ("f", -0.5, 1.5))], {})]
_LERP_S = [("weight 0.25", [((3, 4), "x"), ((3, 4), "l"), ("const", 0.25)], {}),
           ("weight 0.75", [((2, 3), "x"), ((3,), "x"), ("const", 0.75)], {})]

OPS = [
    entry("addcmul", lambda x, a, b: ember.addcmul(x, a, b, value=0.5), *_T,
          covers=("addcmul",), dtypes=FLOATS + INTS[:1]),
    entry("addcmul int value", lambda x, a, b: ember.addcmul(x, a, b, value=3), *_T,
          covers=("addcmul",), dtypes=INTS),
    entry("addcmul_", inplace(lambda x, a, b: x.addcmul_(a, b, value=-2)), *_T[:2],
          covers=("addcmul_",), dtypes=FLOATS + INTS, differentiable=False),
    entry("addcdiv", lambda x, a, b: ember.addcdiv(x, a, b, value=0.5), *_DIV,
          covers=("addcdiv",)),
    entry("addcdiv_", inplace(lambda x, a, b: x.addcdiv_(a, b, value=2)), *_DIV,
          covers=("addcdiv_",), differentiable=False),
    entry("lerp tensor weight", lambda x, e, w: ember.lerp(x, e.expand(x.shape), w), *_LERP_T,
          covers=("lerp",)),
    entry("lerp scalar weight", lambda x, e, w: ember.lerp(x, e.expand(x.shape), w), *_LERP_S,
          covers=("lerp",)),
    entry("lerp_", inplace(lambda x, e, w: x.lerp_(e.expand(x.shape), w)),
          *(_LERP_T + _LERP_S), covers=("lerp_",), differentiable=False),
]
