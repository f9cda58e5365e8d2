"""How each ember op is written in ONNX: one row per op (PyTorch's symbolic_opset files' role).

A row is ``rule(b, c, *args)``: ``b`` the ``Builder`` (``b.op(type, inputs, **attrs)`` adds a
node, ``b.const``/``b.ints`` an initializer), ``c`` the node's context (``c.shape(i)`` the
captured shape of tensor argument i, ``c.out_dtype``, ``c.scalar(v)``), and the node's schema
arguments with tensors replaced by ONNX value names. It returns the output name, or a list for
ops with several outputs (None where an output has no ONNX counterpart: a batch norm's saved
statistics; reading one raises)."""
from __future__ import annotations

import math

import numpy as np

from .errors import OnnxExporterError, UnsupportedOperatorError

INT64_MAX = np.iinfo(np.int64).max


class Context:
    def __init__(self, b, graph, node, inputs, dyn_sizes, probe=None, index=None):
        self.b, self.graph, self.node, self.inputs = b, graph, node, inputs
        self.dyn_sizes = dyn_sizes
        self.probe = probe           # (graph, inputs) captured at other dynamic sizes, or None
        self.index = index
        meta = node.meta
        first = meta[0] if isinstance(meta, list) else meta
        self.out_shape = first[0] if first else None
        self.out_dtype = first[1] if first else None

    def meta(self, pos):
        from ..compiler.graph import Ref
        ref = self.node.args[pos]
        if not isinstance(ref, Ref):
            return None
        if ref.kind == "input":
            t = self.inputs[ref.index]
            return tuple(t.shape), t.dtype, self.graph.input_layouts[ref.index]
        if ref.kind == "const":
            c = self.graph.constants[ref.index]
            return tuple(c.shape), c.dtype, (c._stride, c._offset)
        n = self.graph.nodes[ref.index]
        m, lay = n.meta, getattr(n, "layout", None)
        if ref.item is not None:
            m, lay = m[ref.item], lay[ref.item] if lay else None
        return m[0], m[1], lay

    def shape(self, pos):
        return self.meta(pos)[0]

    def dynamic_dims(self, pos):
        """The dimensions of tensor argument ``pos`` whose size follows a dynamic axis (they
        differ between the two captures)."""
        from ..compiler.graph import Ref
        ref = self.node.args[pos]
        if self.probe is None or not isinstance(ref, Ref) or ref.kind == "const":
            return set()
        graph_b, inputs_b = self.probe
        if ref.kind == "input":
            other = tuple(inputs_b[ref.index].shape)
        else:
            m = graph_b.nodes[ref.index].meta
            other = (m[ref.item] if ref.item is not None else m)[0]
        return {d for d, (x, y) in enumerate(zip(self.shape(pos), other)) if x != y}

    def concrete(self, v):
        """A ``SymInt`` at the example sizes (ints pass through)."""
        from ..compiler.dynamic import SymInt
        return v.value(self.inputs) if isinstance(v, SymInt) else v

    def sym(self, v):
        """A ``SymInt`` as a 1-element int64 ONNX value: ``k * Shape(input)[dim] + c``."""
        b = self.b
        name = self.input_name(v.tensor)
        dim = b.op("Gather", [b.op("Shape", [name]), b.ints([v.dim])], axis=0)
        if v.k != 1:
            dim = b.op("Mul", [dim, b.ints([v.k])])
        if v.c:
            dim = b.op("Add", [dim, b.ints([v.c])])
        return dim

    def input_name(self, index):
        return self.b.input_names[index]

    def scalar(self, value, dtype=None):
        dtype = dtype or self.out_dtype
        return self.b.const(np.asarray(value, dtype=np.dtype(dtype.np)), "scalar")

    def operand(self, x, dtype=None):
        return x if isinstance(x, str) else self.scalar(x, dtype)

    def shape_tensor(self, target):
        """A reshape/full target as an ONNX int64 tensor: entries that are a dynamic input
        dimension (or a multiple of one, a flatten) are read from the input's runtime
        ``Shape``; the rest stay constants."""
        from ..compiler.dynamic import SymInt
        if any(isinstance(t, SymInt) for t in target):
            return self._symbolic_shape(target)
        target = [int(t) for t in target]
        if not self.dyn_sizes or -1 in target and sum(
                1 for t in target if t in self.dyn_sizes) == 0:
            return self.b.ints(target)
        exact = any(t in self.dyn_sizes for t in target)
        parts, static = [], []
        for t in target:
            # a dimension equal to a dynamic size is that size; only when none is, one
            # multiple of it is a flattened dynamic dimension
            src = self._dynamic_source(t, multiples=not exact)
            if src is not None and not exact:
                exact = True
            if src is None:
                static.append(t)
                continue
            if static:
                parts.append(self.b.ints(static))
                static = []
            parts.append(src)
        if static:
            parts.append(self.b.ints(static))
        if len(parts) == 1:
            return parts[0]
        return self.b.op("Concat", parts, axis=0)

    def _symbolic_shape(self, target):
        from ..compiler.dynamic import SymInt
        parts, static = [], []
        for t in target:
            if isinstance(t, SymInt):
                if static:
                    parts.append(self.b.ints(static))
                    static = []
                parts.append(self.sym(t))
            else:
                static.append(int(t))
        if static:
            parts.append(self.b.ints(static))
        return parts[0] if len(parts) == 1 else self.b.op("Concat", parts, axis=0)

    def _dynamic_source(self, t, multiples):
        b = self.b
        if t <= 0:
            return None
        for size, (name, axis) in self.dyn_sizes.items():
            if t == size or (multiples and size > 1 and t % size == 0):
                dim = b.op("Gather", [b.op("Shape", [name]), b.ints([axis])], axis=0)
                if t != size:
                    dim = b.op("Mul", [dim, b.ints([t // size])])
                return dim
        return None


def _binary(op_type):
    def rule(b, c, x, y, *rest):
        return b.op(op_type, [c.operand(x), c.operand(y)])
    return rule


def _unary(op_type):
    return lambda b, c, x, *rest: b.op(op_type, [x])


def _add(b, c, x, y, alpha=1, *rest):
    y = c.operand(y)
    if alpha != 1:
        y = b.op("Mul", [y, c.scalar(alpha)])
    return b.op("Add", [c.operand(x), y])


def _sub(b, c, x, y, alpha=1, *rest):
    y = c.operand(y)
    if alpha != 1:
        y = b.op("Mul", [y, c.scalar(alpha)])
    return b.op("Sub", [c.operand(x), y])


def _div(b, c, x, y, mode=None, *rest):
    q = b.op("Div", [c.operand(x), c.operand(y)])
    if mode == "floor" and c.out_dtype.is_floating_point:
        return b.op("Floor", [q])
    if mode == "trunc" and c.out_dtype.is_floating_point:
        return b.op("Where", [b.op("Less", [q, c.scalar(0)]), b.op("Ceil", [q]),
                              b.op("Floor", [q])])
    return q


def _compare(op_type, negate=False):
    def rule(b, c, x, y, *rest):
        dt = c.meta(0)[1]
        r = b.op(op_type, [c.operand(x, dt), c.operand(y, dt)])
        return b.op("Not", [r]) if negate else r
    return rule


def _gelu(b, c, x, approximate="none", *rest):
    if approximate == "tanh":
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Mul", [b.op("Add", [x, b.op("Mul", [cube, c.scalar(0.044715)])]),
                             c.scalar(math.sqrt(2 / math.pi))])
        t = b.op("Add", [b.op("Tanh", [inner]), c.scalar(1.0)])
    else:
        t = b.op("Add", [b.op("Erf", [b.op("Mul", [x, c.scalar(math.sqrt(0.5))])]),
                         c.scalar(1.0)])
    return b.op("Mul", [b.op("Mul", [x, t]), c.scalar(0.5)])


def _clamp(b, c, x, lo=None, hi=None, *rest):
    if (lo is not None and isinstance(lo, str)) or (hi is not None and isinstance(hi, str)):
        y = x
        if lo is not None:
            y = b.op("Max", [y, lo])
        if hi is not None:
            y = b.op("Min", [y, hi])
        return y
    return b.op("Clip", [x, c.scalar(lo) if lo is not None else None,
                         c.scalar(hi) if hi is not None else None])


def _softplus(b, c, x, beta=1.0, threshold=20.0, *rest):
    if beta != 1.0:
        scaled = b.op("Mul", [x, c.scalar(beta)])
        return b.op("Div", [b.op("Softplus", [scaled]), c.scalar(beta)])
    return b.op("Softplus", [x])


def _cast(b, c, x, dtype, *rest):
    from . import onnx_dtype
    return b.op("Cast", [x], to=onnx_dtype(dtype))


def _reduce(op_type):
    def rule(b, c, x, dims, keepdim=False, *rest):
        axes = [int(d) for d in dims] if dims else list(range(len(c.shape(0))))
        if op_type == "ReduceSum" or b.opset >= 18:
            return b.op(op_type, [x, b.ints(axes)], keepdims=int(keepdim))
        return b.op(op_type, [x], axes=axes, keepdims=int(keepdim))
    return rule


def _view(b, c, x, size, *rest):
    return b.op("Reshape", [x, c.shape_tensor(size)])


def _as_strided(b, c, x, size, stride, offset=0, *rest):
    """Only as_strided that merely adds or drops size-1 dimensions (how views like unsqueeze
    and squeeze are recorded) has an ONNX form: a Reshape."""
    shape, _, layout = c.meta(0)
    if layout is not None:
        in_stride, in_offset = layout

        def core(sz, st):
            return [(c.concrete(n), c.concrete(s)) for n, s in zip(sz, st)
                    if c.concrete(n) != 1]
        if c.concrete(offset) == in_offset and core(size, stride) == core(shape, in_stride):
            return b.op("Reshape", [x, c.shape_tensor(size)])
    raise UnsupportedOperatorError("as_strided", b.opset, detail=(
        f"a general strided view ({list(shape)} -> size {list(size)}, stride {list(stride)}) "
        f"has no ONNX equivalent"))


def _expand(b, c, x, size, *rest):
    from ..compiler.dynamic import SymInt
    if any(isinstance(s, SymInt) for s in size):
        return b.op("Expand", [x, c.shape_tensor([1 if s == -1 else s for s in size])])
    shape = [1 if (s == -1 or s in c.dyn_sizes) else s for s in size]
    return b.op("Expand", [x, b.ints(shape)])


def _slice(b, c, x, dim, start=None, end=None, step=1, *rest):
    # bounds that are multiples of a dynamic size (a time-major sequence cut per step) follow
    # it at run time
    from ..compiler.dynamic import SymInt
    full = c.shape(0)[dim]
    start = 0 if start is None else start
    if end is None or (not isinstance(end, SymInt) and end >= full and
                       dim not in c.dynamic_dims(0)):
        end = INT64_MAX

    def bound(v):
        if isinstance(v, SymInt):
            return c.sym(v)
        if v in (0, INT64_MAX):
            return b.ints([v])
        return c.shape_tensor([v]) if v > 0 else b.ints([v])
    return b.op("Slice", [x, bound(start), bound(end), b.ints([dim]), b.ints([step])])


def _select(b, c, x, dim, index, *rest):
    from ..compiler.dynamic import SymInt
    if isinstance(index, SymInt):
        index = b.op("Squeeze", [c.sym(index), b.ints([0])])
        return b.op("Gather", [x, index], axis=dim)
    return b.op("Gather", [x, b.const(np.asarray(index, dtype=np.int64), "index")], axis=dim)


def _addmm(b, c, bias, m1, m2, beta=1, alpha=1, *rest):
    return b.op("Gemm", [m1, m2, bias], alpha=float(alpha), beta=float(beta))


def _convolution(b, c, x, w, bias, stride, padding, dilation, transposed, output_padding,
                 groups, *rest):
    if isinstance(padding, str):
        raise UnsupportedOperatorError("convolution", b.opset, detail=f"padding={padding!r}")
    attrs = dict(strides=list(stride), pads=list(padding) * 2, dilations=list(dilation),
                 group=int(groups), kernel_shape=list(c.shape(1)[2:]))
    inputs = [x, w] + ([bias] if bias is not None else [])
    if transposed:
        return b.op("ConvTranspose", inputs, output_padding=list(output_padding), **attrs)
    return b.op("Conv", inputs, **attrs)


def _batch_norm(b, c, x, w, bias, mean, var, training, momentum, eps, *rest):
    if training:
        raise OnnxExporterError("ember.onnx.export: batch norm in training mode (export runs "
                                "the model in eval mode; call model.eval())")
    channels = c.shape(0)[1]
    dt = np.dtype(c.meta(0)[1].np)
    w = w if w is not None else b.const(np.ones(channels, dt))
    bias = bias if bias is not None else b.const(np.zeros(channels, dt))
    if mean is None:
        raise OnnxExporterError("ember.onnx.export: batch norm without running statistics "
                                "(track_running_stats=False) normalises by batch statistics")
    return [b.op("BatchNormalization", [x, w, bias, mean, var], epsilon=float(eps)), None, None]


def _layer_norm(b, c, x, shape, w, bias, eps, *rest):
    dt = np.dtype(c.meta(0)[1].np)
    w = w if w is not None else b.const(np.ones(shape, dt))
    inputs = [x, w] + ([bias] if bias is not None else [])
    return [b.op("LayerNormalization", inputs, axis=-len(shape), epsilon=float(eps)), None,
            None]


def _max_pool(b, c, x, kernel, stride, padding, dilation, ceil_mode, *rest):
    y = b.op("MaxPool", [x], kernel_shape=list(kernel), strides=list(stride or kernel),
             pads=list(padding) * 2, dilations=list(dilation), ceil_mode=int(ceil_mode))
    return [y, None]


def _avg_pool(b, c, x, kernel, stride, padding, ceil_mode, count_include_pad,
              divisor_override=None, *rest):
    if divisor_override is not None:
        raise UnsupportedOperatorError("avg_pool2d", b.opset, detail="divisor_override")
    return b.op("AveragePool", [x], kernel_shape=list(kernel), strides=list(stride or kernel),
                pads=list(padding) * 2, ceil_mode=int(ceil_mode),
                count_include_pad=int(count_include_pad))


def _adaptive_avg_pool(b, c, x, output_size, *rest):
    spatial = c.shape(0)[2:]
    if all(o == 1 for o in output_size):
        return b.op("GlobalAveragePool", [x])
    if all(i % o == 0 for i, o in zip(spatial, output_size)):
        kernel = [i // o for i, o in zip(spatial, output_size)]
        return b.op("AveragePool", [x], kernel_shape=kernel, strides=kernel)
    raise UnsupportedOperatorError("adaptive_avg_pool2d", b.opset, detail=(
        f"input size {list(spatial)} is not a multiple of output size {list(output_size)}"))


def _full(b, c, size, value, dtype, device=None, *rest):
    shape = c.shape_tensor(size)
    if shape in b.initializers and not c.probe:
        return b.const(np.full(list(size), value, dtype=np.dtype(dtype.np)), "full")
    from onnx import numpy_helper
    fill = numpy_helper.from_array(np.asarray([value], dtype=np.dtype(dtype.np)))
    return b.op("ConstantOfShape", [shape], value=fill)


def _attention(b, c, q, k, v, mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False, *rest):
    qs, ks = c.shape(0), c.shape(1)
    if enable_gqa and qs[-3] != ks[-3]:
        raise UnsupportedOperatorError("scaled_dot_product_attention", b.opset,
                                       detail="grouped-query attention (enable_gqa)")
    rank = len(ks)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else scale
    scores = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=perm)]),
                          c.scalar(scale, c.meta(0)[1])])
    dt = np.dtype(c.meta(0)[1].np)
    if is_causal:
        L, S = qs[-2], ks[-2]
        if (len(qs) - 2) in c.dynamic_dims(0) or (len(ks) - 2) in c.dynamic_dims(1):
            # a dynamic sequence length: the lower triangle made at run time (Trilu)
            size = b.op("Concat", [b.op("Gather", [b.op("Shape", [q]), b.ints([-2])], axis=0),
                                   b.op("Gather", [b.op("Shape", [k]), b.ints([-2])], axis=0)],
                        axis=0)
            from onnx import numpy_helper
            ones = b.op("ConstantOfShape", [size],
                        value=numpy_helper.from_array(np.asarray([1], np.int64)))
            keep = b.op("Cast", [b.op("Trilu", [ones], upper=0)], to=9)   # bool
            zero, neg = b.const(np.asarray(0, dt)), b.const(np.asarray(-np.inf, dt))
            scores = b.op("Add", [scores, b.op("Where", [keep, zero, neg])])
        else:
            causal = np.where(np.tril(np.ones((L, S), bool)), 0, -np.inf).astype(dt)
            scores = b.op("Add", [scores, b.const(causal, "causal_mask")])
    if mask is not None:
        if c.meta(3)[1].is_floating_point:
            scores = b.op("Add", [scores, mask])
        else:
            scores = b.op("Where", [mask, scores, b.const(np.asarray(-np.inf, dt))])
    weights = b.op("Softmax", [scores], axis=-1)
    return b.op("MatMul", [weights, v]), weights


def _sdpa(b, c, q, k, v, mask=None, dropout_p=0.0, is_causal=False, scale=None,
          enable_gqa=False, *rest):
    return _attention(b, c, q, k, v, mask, dropout_p, is_causal, scale, enable_gqa)[0]


def _sdpa_fused(b, c, q, k, v, mask, is_causal, scale, *rest):
    """The fused kernel's (output, log-sum-exp): the log-sum-exp has no ONNX counterpart."""
    return [_attention(b, c, q, k, v, mask, 0.0, is_causal, scale)[0], None]


def _sdpa_math(b, c, q, k, v, mask, dropout_p, is_causal, dropout_mask, scale,
               enable_gqa=False, *rest):
    if dropout_mask is not None:
        raise UnsupportedOperatorError("_scaled_dot_product_attention_math", b.opset,
                                       detail="attention dropout in an exported graph")
    out, weights = _attention(b, c, q, k, v, mask, 0.0, is_causal, scale, enable_gqa)
    return [out, weights]


_RESIZE_MODES = {"nearest": "nearest", "linear": "linear", "cubic": "cubic"}


def _upsample(b, c, x, output_size, mode, align_corners=False, scales=None, *rest):
    """``upsample`` as ONNX ``Resize`` with PyTorch's coordinate conventions: ``nearest`` is
    the legacy floor(out * in / out_size) ("asymmetric", "floor"); linear and cubic use
    "align_corners" or "pytorch_half_pixel" (cubic with PyTorch's a = -0.75)."""
    if mode not in _RESIZE_MODES:
        raise UnsupportedOperatorError("upsample", b.opset, detail=f"mode={mode!r}")
    attrs = {"mode": _RESIZE_MODES[mode]}
    if mode == "nearest":
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    else:
        attrs["coordinate_transformation_mode"] = "align_corners" if align_corners else \
            "pytorch_half_pixel"
        if mode == "cubic":
            attrs["cubic_coeff_a"] = -0.75
    if scales and all(s > 0 for s in scales) and not align_corners:
        # the scale factor itself sets the sampling positions (PyTorch uses 1/scale then)
        factors = b.const(np.asarray([1.0, 1.0] + [float(v) for v in scales], np.float32))
        return b.op("Resize", [x, "", factors], **attrs)
    head = b.op("Slice", [b.op("Shape", [x]), b.ints([0]), b.ints([2]), b.ints([0])])
    sizes = b.op("Concat", [head, c.shape_tensor(list(output_size))], axis=0)
    return b.op("Resize", [x, "", "", sizes], **attrs)


def _split_gates(b, gates, hidden, n=4):
    return b.op("Split", [gates, b.ints([hidden] * n)], n_out=n, axis=-1)


def _recurrent_input(b, h, w_hh, b_hh):
    """``h @ w_hh^T + b_hh``: the hidden state's contribution to every gate."""
    gh = b.op("MatMul", [h, b.op("Transpose", [w_hh], perm=[1, 0])])
    if b_hh is not None:
        gh = b.op("Add", [gh, b_hh])
    return gh


def _lstm_step(b, c, gx, h, cell, w_hh, b_hh=None, w_hr=None, *rest):
    hidden = c.shape(2)[-1]
    gates = b.op("Add", [gx, _recurrent_input(b, h, w_hh, b_hh)])
    i, f, g, o = _split_gates(b, gates, hidden)
    cy = b.op("Add", [b.op("Mul", [b.op("Sigmoid", [f]), cell]),
                      b.op("Mul", [b.op("Sigmoid", [i]), b.op("Tanh", [g])])])
    hy = b.op("Mul", [b.op("Sigmoid", [o]), b.op("Tanh", [cy])])
    if w_hr is not None:
        hy = b.op("MatMul", [hy, b.op("Transpose", [w_hr], perm=[1, 0])])
    return [hy, cy, None]


def _gru_step(b, c, gx, h, w_hh, b_hh=None, *rest):
    hidden = c.shape(1)[-1]
    gh = _recurrent_input(b, h, w_hh, b_hh)
    xr, xz, xn = _split_gates(b, gx, hidden, 3)
    hr, hz, hn = _split_gates(b, gh, hidden, 3)
    r = b.op("Sigmoid", [b.op("Add", [xr, hr])])
    z = b.op("Sigmoid", [b.op("Add", [xz, hz])])
    n = b.op("Tanh", [b.op("Add", [xn, b.op("Mul", [r, hn])])])
    one = c.scalar(1.0, c.meta(1)[1])
    hy = b.op("Add", [b.op("Mul", [b.op("Sub", [one, z]), n]), b.op("Mul", [z, h])])
    return [hy, None]


def _rnn_step(b, c, gx, h, w_hh, b_hh=None, nonlinearity="tanh", *rest):
    pre = b.op("Add", [gx, _recurrent_input(b, h, w_hh, b_hh)])
    return b.op("Tanh" if nonlinearity == "tanh" else "Relu", [pre])


RULES = {
    "add": _add, "sub": _sub, "mul": _binary("Mul"), "div": _div, "pow": _binary("Pow"),
    "maximum": _binary("Max"), "minimum": _binary("Min"),
    "atan2": None,
    "neg": _unary("Neg"), "abs": _unary("Abs"), "exp": _unary("Exp"), "log": _unary("Log"),
    "sqrt": _unary("Sqrt"), "sin": _unary("Sin"), "cos": _unary("Cos"), "tan": _unary("Tan"),
    "tanh": _unary("Tanh"), "sigmoid": _unary("Sigmoid"), "relu": _unary("Relu"),
    "erf": _unary("Erf"), "reciprocal": _unary("Reciprocal"), "floor": _unary("Floor"),
    "ceil": _unary("Ceil"), "sign": _unary("Sign"),
    "rsqrt": lambda b, c, x, *r: b.op("Reciprocal", [b.op("Sqrt", [x])]),
    "square": lambda b, c, x, *r: b.op("Mul", [x, x]),
    "silu": lambda b, c, x, *r: b.op("Mul", [x, b.op("Sigmoid", [x])]),
    "gelu": _gelu,
    "leaky_relu": lambda b, c, x, slope=0.01, *r: b.op("LeakyRelu", [x], alpha=float(slope)),
    "hardtanh": lambda b, c, x, lo=-1.0, hi=1.0, *r: _clamp(b, c, x, lo, hi),
    "clamp": _clamp,
    "softplus": _softplus,
    "where": lambda b, c, cond, x, y, *r: b.op("Where", [cond, c.operand(x), c.operand(y)]),
    "gt": _compare("Greater"), "lt": _compare("Less"), "ge": _compare("GreaterOrEqual"),
    "le": _compare("LessOrEqual"), "eq": _compare("Equal"), "ne": _compare("Equal", True),
    "_to_copy": _cast, "clone": lambda b, c, x, *r: b.op("Identity", [x]),
    "permute": lambda b, c, x, dims, *r: b.op("Transpose", [x], perm=list(dims)),
    "view": _view, "as_strided": _as_strided, "expand": _expand, "slice": _slice,
    "select": _select,
    "cat": lambda b, c, xs, dim, *r: b.op("Concat", list(xs), axis=int(dim)),
    "index_select": lambda b, c, x, dim, idx, *r: b.op("Gather", [x, idx], axis=int(dim)),
    "matmul": _binary("MatMul"), "mm": _binary("MatMul"), "bmm": _binary("MatMul"),
    "addmm": _addmm,
    "sum": _reduce("ReduceSum"), "mean": _reduce("ReduceMean"), "amax": _reduce("ReduceMax"),
    "amin": _reduce("ReduceMin"),
    "softmax": lambda b, c, x, dim, *r: b.op("Softmax", [x], axis=int(dim)),
    "log_softmax": lambda b, c, x, dim, *r: b.op("LogSoftmax", [x], axis=int(dim)),
    "convolution": _convolution,
    "native_batch_norm": _batch_norm, "native_layer_norm": _layer_norm,
    "max_pool2d_with_indices": _max_pool, "avg_pool2d": _avg_pool,
    "_adaptive_avg_pool2d": _adaptive_avg_pool,
    "full": _full,
    "scaled_dot_product_attention": _sdpa,
    "_scaled_dot_product_fused_attention": _sdpa_fused,
    "_scaled_dot_product_attention_math": _sdpa_math,
    "lstm_step": _lstm_step, "gru_step": _gru_step, "rnn_step": _rnn_step,
    "upsample": _upsample,
}
RULES = {k: v for k, v in RULES.items() if v is not None}

#: ops folded at export time when every tensor they read is a parameter or buffer
FOLDABLE = frozenset({"permute", "view", "_to_copy", "add", "sub", "mul", "div", "clone",
                      "as_strided", "expand", "slice", "select", "cat", "neg"})


def translate(b, graph, values, inputs, dyn_sizes, const_arrays, probe=None):
    """Emit every node of ``graph``; ``values`` maps (kind, index, item) to ONNX names.
    ``probe``: the (graph, inputs) of a second capture at other dynamic sizes."""
    b.input_names = [values[("input", i, None)] for i in range(len(inputs))]
    from ..compiler import _call
    from ..compiler.dynamic import has_symbols
    from ..compiler.graph import Ref, rebuild

    folded = {}             # graph key -> ember tensor, for constant folding
    for i, c in enumerate(graph.constants):
        folded[("const", i, None)] = c

    def key(ref):
        return (ref.kind, ref.index, ref.item)

    for i, node in enumerate(graph.nodes):
        name = getattr(node.op, "name", str(node.op))
        refs = [a for a in _flat(node.args) if isinstance(a, Ref)]
        if b.fold and name in FOLDABLE and refs and all(key(r) in folded for r in refs) \
                and not node.kwargs and not has_symbols(node.args):
            def load(a):
                if isinstance(a, Ref):
                    return folded[key(a)]
                if isinstance(a, (list, tuple)):
                    return rebuild(a, [load(x) for x in a])
                return a
            from ..dispatch.grad_mode import no_grad
            with no_grad():
                value = _call(node, load)
            folded[("node", i, None)] = value
            values[("node", i, None)] = b.const(value.detach().cpu().numpy(), f"fold_{name}")
            continue
        rule = RULES.get(name)
        if rule is None:
            raise UnsupportedOperatorError(name, b.opset)

        def resolve(a):
            if isinstance(a, Ref):
                k = key(a)
                if k not in values:
                    raise OnnxExporterError(
                        f"ember.onnx.export: {name} reads output {a.item} of "
                        f"{graph.nodes[a.index].op.name}, which has no ONNX counterpart")
                v = values[k]
                if v is None:
                    raise OnnxExporterError(
                        f"ember.onnx.export: {name} reads output {a.item} of "
                        f"{graph.nodes[a.index].op.name}, which has no ONNX counterpart")
                return v
            if isinstance(a, (list, tuple)):
                return rebuild(a, [resolve(x) for x in a])
            return a
        ctx = Context(b, graph, node, inputs, dyn_sizes, probe, i)
        out = rule(b, ctx, *[resolve(a) for a in node.args])
        if isinstance(out, list):
            for k, o in enumerate(out):
                values[("node", i, k)] = o
        else:
            values[("node", i, None)] = out


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a
