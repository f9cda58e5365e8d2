"""What the transforms' layers read about an op call: its arguments in schema order, and
whether the op is a core composite that runs through the transform itself."""
from __future__ import annotations

from ..dispatch.facets import Derivative


def _positional(op, args, kwargs):
    if not kwargs:
        return tuple(args)
    names = op.schema.arg_names
    out = list(args)
    for name in names[len(args):]:
        if name not in kwargs:
            break
        out.append(kwargs[name])
    return tuple(out)


def _decomposes(op) -> bool:
    """A core composite (written in ember ops) runs on the batched tensors themselves; views
    build their output from the input's strides, so they need rules, and plug-in composites may
    read host data, so they take the fallback."""
    if op.composite is None or "::" in op.name:
        return False
    d = op.derivative
    return not (d.__class__ is Derivative and d.is_view)
