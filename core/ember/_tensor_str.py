"""PyTorch-style tensor printing (``tensor([1., 2.], device='opencl:0')``).

The rules are PyTorch's ``_tensor_str``: one formatter per tensor decides between integer-valued
("1."), fixed ("1.2500") and scientific ("1.2500e+08") notation from the nonzero finite values;
long tensors are summarized with edge items; suffixes name a non-default dtype and device.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _dtype
from ._defaults import get_default_device


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    if profile == "default":
        PRINT_OPTS.__init__()
    elif profile == "short":
        PRINT_OPTS.__init__(precision=2, threshold=1000, edgeitems=2, linewidth=80)
    elif profile == "full":
        PRINT_OPTS.__init__(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    """One width and notation for all elements. As in PyTorch, only the nonzero finite values
    choose them; nan and inf are printed as they come."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        absval = np.abs(finite)
        lo, hi = float(absval.min()), float(absval.max())
        p = PRINT_OPTS.precision
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
                         if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode)
        if self.sci_mode:
            widths = [len(f"{v:.{p}e}") for v in finite.tolist()]
        elif self.int_mode:
            widths = [len(f"{v:.0f}") + 1 for v in finite.tolist()]  # + 1 for the "."
        else:
            widths = [len(f"{v:.{p}f}") for v in finite.tolist()]
        self.max_width = max(self.max_width, *widths)

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if math.isfinite(value):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = str(value)
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a: np.ndarray):
    """The values a summarized print shows (they alone choose the format)."""
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:e], a[-e:]]) if a.shape[0] > 2 * e else a
    if not e:
        return a[(slice(0, 0),) * a.ndim]
    if a.shape[0] > 2 * e:
        parts = [_summarized(a[i]) for i in list(range(e)) + list(range(a.shape[0] - e,
                                                                        a.shape[0]))]
    else:
        parts = [_summarized(x) for x in a]
    return np.stack(parts)


def _vector_str(a, indent, summarize, fmt1, fmt2):
    element_length = fmt1.width() + 2
    if fmt2 is not None:
        element_length += fmt2.width() + 1
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))

    def val(v):
        if fmt2 is None:
            return fmt1.format(v)
        real = fmt1.format(v.real)
        imag = (fmt2.format(v.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag

    e = PRINT_OPTS.edgeitems
    values = a.tolist()
    if summarize and not e:
        data = ["..."]
    elif summarize and len(values) > 2 * e:
        data = [val(v) for v in values[:e]] + [" ..."] + [val(v) for v in values[-e:]]
    else:
        data = [val(v) for v in values]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt1, fmt2):
    if a.ndim == 0:
        v = a.item()
        if fmt2 is None:
            return fmt1.format(v)
        real = fmt1.format(v.real)
        imag = (fmt2.format(v.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt1, fmt2)
    e = PRINT_OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * e:
        slices = ([_tensor_str(a[i], indent + 1, summarize, fmt1, fmt2) for i in range(e)] +
                  ["..."] +
                  [_tensor_str(a[i], indent + 1, summarize, fmt1, fmt2) for i in range(n - e, n)])
    else:
        slices = [_tensor_str(a[i], indent + 1, summarize, fmt1, fmt2) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text, suffixes, indent):
    out = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_line_len + len(s) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
        else:
            out.append(", " + s)
            last_line_len += len(s) + 2
    out.append(")")
    return "".join(out)


def _values_str(t, indent):
    a = t._host()
    if t.dtype in (_dtype.float16, _dtype.bfloat16):
        a = a.astype(np.float32)
    summarize = a.size > PRINT_OPTS.threshold
    view = _summarized(a) if summarize else a
    if t.dtype.is_complex:
        fmt1 = _Formatter(view.real, True)
        fmt2 = _Formatter(view.imag, True)
    else:
        fmt1 = _Formatter(view, t.dtype.is_floating_point)
        fmt2 = None
    return _tensor_str(a, indent, summarize, fmt1, fmt2)


def tensor_repr(t, prefix=None, tensor_contents=None) -> str:
    from ._tensor import Tensor  # cycle: ember._tensor
    if prefix is None:
        prefix = "tensor(" if type(t) is Tensor else f"{type(t).__name__}("
    indent = len(prefix)
    suffixes = []
    default_float = _dtype.get_default_dtype()
    has_default_dtype = t.dtype in (default_float, _dtype._default_complex(), _dtype.int64,
                                    _dtype.bool_)
    if t.device is not get_default_device():
        suffixes.append(f"device='{t.device}'")
    if t.device.type == "meta" or t.numel() == 0:
        if t.numel() == 0 and t.ndim != 1 or t.device.type == "meta":
            suffixes.append(f"size={tuple(t._shape)}")
        if t.dtype is not default_float:
            suffixes.append(f"dtype=ember.{t.dtype.name}")
        body = "..." if t.device.type == "meta" else "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t._shape)}")
        if not has_default_dtype:
            suffixes.append(f"dtype=ember.{t.dtype.name}")
        body = _values_str(t, indent)
    if tensor_contents is not None:
        body = tensor_contents
    gf = t.grad_fn
    if gf is not None:
        suffixes.append(f"grad_fn=<{type(gf).__name__ if not hasattr(gf, 'name') else gf.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
