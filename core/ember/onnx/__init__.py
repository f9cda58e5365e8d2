"""``ember.onnx.export``: a model's captured graph written as an ONNX model (through the
``onnx`` package, imported only here).

The program is captured by ``ember.export`` (whole graph, no graph breaks), then each node is
translated by its op's ``onnx`` facet (written beside the op's define in ``ember/ops``; the
translation loop and the ``Context`` rules read are in ``symbolics.py``).
Parameters and buffers become initializers named by their module paths; with
``do_constant_folding`` a node whose inputs are all initializers (a weight's transpose, a bias
sum) is computed once and stored. ``dynamic_axes`` marks input/output dimensions symbolic:
the model is captured a second time with each dynamic input axis at another size, and
``compiler.dynamic.generalize`` turns the ints that follow it (reshape targets, slice bounds,
``full`` sizes) into ``SymInt``s, emitted as arithmetic on the input's runtime ``Shape`` — so an
example size that happens to equal another dimension is not mistaken for it. A model that
can't be captured at another size falls back to matching sizes by value, with a warning.
An op without a translation raises ``errors.UnsupportedOperatorError`` naming it."""
from __future__ import annotations

import io
import os
import warnings

import numpy as np

from . import errors
from .errors import OnnxExporterError, UnsupportedOperatorError
from ..utils._pytree import leaves_of_type
from .._tensor import Tensor
from ..compiler import dynamic
from ..compiler.graph import Ref
from ..export import export as capture
from ..nn.modules.module import Module
from ..ops.shape import cat
from .._warn import user_stacklevel

__all__ = ["export", "errors", "OnnxExporterError", "UnsupportedOperatorError"]

DEFAULT_OPSET = 17


class Builder:
    """Collects ONNX nodes and initializers while the graph is translated."""

    def __init__(self, opset, fold):
        import onnx  # optional: onnx (ember[onnx])
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.fold = fold
        self.nodes = []
        self.initializers = {}       # name -> numpy array
        self._count = 0

    def fresh(self, hint="t"):
        self._count += 1
        return f"{hint}_{self._count}"

    def op(self, op_type, inputs, n_out=1, name_hint=None, **attrs):
        outs = [self.fresh(name_hint or op_type) for _ in range(n_out)]
        self.nodes.append(self.helper.make_node(op_type, [i or "" for i in inputs], outs,
                                                name=self.fresh(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, array, hint="const"):
        name = self.fresh(hint)
        self.initializers[name] = np.asarray(array)
        return name

    def ints(self, values):
        return self.const(np.asarray(list(values), dtype=np.int64), "shape")

    def cast(self, x, dtype):
        """A ``Cast`` of ``x`` to the ember ``dtype``."""
        return self.op("Cast", [x], to=onnx_dtype(dtype))

    def constant_of_shape(self, shape, value, dtype):
        """A ``ConstantOfShape`` node: the int64 value ``shape`` filled with ``value`` of
        numpy ``dtype``."""
        from onnx import numpy_helper  # optional: onnx (ember[onnx])
        fill = numpy_helper.from_array(np.asarray([value], dtype=dtype))
        return self.op("ConstantOfShape", [shape], value=fill)


def export(model, args, f, export_params=True, verbose=False, training=None,
           input_names=None, output_names=None, operator_export_type=None,
           opset_version=None, do_constant_folding=True, dynamic_axes=None,
           keep_initializers_as_inputs=None, custom_opsets=None,
           export_modules_as_functions=False, **unused):
    """``torch.onnx.export``'s signature: trace ``model(*args)`` and write the ONNX model to
    ``f`` (a path or a binary file object). Returns None, as torch's does."""
    from .symbolics import translate  # start-up: ~2 ms, exports only
    # optional: onnx (ember[onnx])
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset < 13:
        raise OnnxExporterError(f"ember.onnx.export supports opset 13 and newer, got {opset}")
    if not isinstance(args, tuple):
        args = (args,)
    was_training = isinstance(model, Module) and model.training
    if isinstance(model, Module) and training is not True:
        model.eval()               # torch exports in eval mode (TrainingMode.EVAL) by default
    dynamic_axes = _normalise_axes(dynamic_axes or {})
    try:
        program = capture(model, args)
        inputs = list(program.example_inputs)
        input_names = list(input_names or [])
        input_names += [f"input_{i}" for i in range(len(input_names), len(inputs))]
        # which ints follow a dynamic axis is learnt from a second capture at other sizes
        # (compiler/dynamic.py), not by matching sizes by value
        general = _generalize(program, model, args, input_names, dynamic_axes, capture)
    finally:
        if was_training:
            model.train()
    graph = program.graph
    probe = None
    if general is not None:
        graph, probe = general

    b = Builder(opset, do_constant_folding)
    values = {}
    dyn_sizes = {}          # (fallback only) an example size of a dynamic axis -> (input, axis)
    for i, (name, t) in enumerate(zip(input_names, inputs)):
        values[("input", i, None)] = name
        if probe is not None:
            continue
        for d in dynamic_axes.get(name, {}):
            size = int(t.shape[d])
            if size in dyn_sizes and dyn_sizes[size][0] != name:
                continue
            dyn_sizes.setdefault(size, (name, d))
            others = [s for j, s in enumerate(t.shape) if j != d and s == size]
            if others or size == 1:
                warnings.warn(f"ember.onnx.export: the model could not be captured at a second "
                              f"size of dynamic axis {d} of {name!r}, so sizes are matched by "
                              f"value, and its example size {size} is also another "
                              f"dimension's (or is 1): shapes computed from it may be misread",
                              UserWarning, stacklevel=user_stacklevel())
    const_arrays = {}
    graph_inputs_extra = []
    for i, (c, cname) in enumerate(zip(graph.constants, program.constant_names)):
        arr = c.detach().cpu().numpy()
        values[("const", i, None)] = cname
        const_arrays[cname] = arr
        if export_params:
            b.initializers[cname] = arr
        else:
            graph_inputs_extra.append((cname, arr))

    translate(b, graph, values, inputs, dyn_sizes, const_arrays if export_params else {},
              probe)

    out_refs = _flat_refs(graph.output)
    output_names = list(output_names or [])
    output_names += [f"output_{i}" for i in range(len(output_names), len(out_refs))]
    final_outputs = []
    for name, ref in zip(output_names, out_refs):
        src = values[(ref.kind, ref.index, ref.item)]
        b.nodes.append(helper.make_node("Identity", [src], [name], name=b.fresh("Identity")))
        meta = _ref_meta(graph, ref, inputs)
        final_outputs.append(_value_info(helper, TensorProto, name, meta,
                                         dynamic_axes.get(name, {})))
    graph_inputs = [_value_info(helper, TensorProto, name, (tuple(t.shape), t.dtype),
                                dynamic_axes.get(name, {}))
                    for name, t in zip(input_names, inputs)]
    for cname, arr in graph_inputs_extra:
        graph_inputs.append(helper.make_tensor_value_info(
            cname, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
    used = {i for n in b.nodes for i in n.input}
    # np.asarray(order="C"), not ascontiguousarray: that makes a 0-d array 1-d, and a folded
    # scalar (a select from a parameter) would change shape
    initializers = [numpy_helper.from_array(np.asarray(a, order="C"), name)
                    for name, a in b.initializers.items() if name in used]
    onnx_graph = helper.make_graph(b.nodes, "ember_graph", graph_inputs, final_outputs,
                                   initializer=initializers)
    proto = helper.make_model(onnx_graph, producer_name="ember",
                              opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = min(proto.ir_version, 8)
    onnx.checker.check_model(proto)
    if verbose:
        print(helper.printable_graph(proto.graph))
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"ember.onnx.export: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    return None


def _generalize(program, model, args, input_names, dynamic_axes, capture):
    """(graph with ``SymInt``s where ints follow a dynamic input axis, the second capture's
    graph) — from capturing the model again with each dynamic axis at another size — or None
    when there are no dynamic input axes or the two captures can't be reconciled."""
    inputs = list(program.example_inputs)
    axes = [(i, d, label) for i, name in enumerate(input_names[:len(inputs)])
            for d, label in dynamic_axes.get(name, {}).items()]
    if not axes:
        return None
    taken = {s for t in inputs for s in t.shape}
    new_size = {}
    for i, d, label in axes:
        if label not in new_size:
            size = int(inputs[i].shape[d])
            new_size[label] = next(n for n in (size + 1, size + 2, size + 3, size - 1)
                                   if n > 1 and n not in taken and n <= 2 * size)
    probe_inputs = []
    for i, t in enumerate(inputs):
        for j, d, label in axes:
            if j != i:
                continue
            n, size = new_size[label], int(t.shape[d])
            t = t.narrow(d, 0, n) if n < size else cat([t, t.narrow(d, 0, n - size)], d)
        probe_inputs.append(t)
    swap = {id(a): b for a, b in zip(inputs, probe_inputs)}

    def replace(x):
        if isinstance(x, Tensor):
            return swap.get(id(x), x)
        if isinstance(x, (list, tuple)):
            return type(x)(replace(v) for v in x)
        if isinstance(x, dict):
            return {k: replace(v) for k, v in x.items()}
        return x
    try:
        other = capture(model, replace(args))
    except Exception:  # noqa: BLE001 - the model doesn't take the other size: value matching
        return None
    result = dynamic.generalize(program.graph, other.graph,
                                [tuple(t.shape) for t in inputs],
                                [tuple(t.shape) for t in other.example_inputs])
    if result is None:
        return None
    graph = result[0]
    graph.input_layouts = program.graph.input_layouts
    graph.input_meta = program.graph.input_meta
    return graph, (other.graph, list(other.example_inputs))


def _normalise_axes(dynamic_axes):
    out = {}
    for name, axes in dynamic_axes.items():
        if isinstance(axes, dict):
            out[name] = {int(k): str(v) for k, v in axes.items()}
        else:
            out[name] = {int(k): f"{name}_dynamic_axes_{k + 1}" for k in axes}
    return out


def _flat_refs(x):
    return leaves_of_type(x, Ref)


def _ref_meta(graph, ref, inputs):
    if ref.kind == "input":
        t = inputs[ref.index]
        return tuple(t.shape), t.dtype
    if ref.kind == "const":
        c = graph.constants[ref.index]
        return tuple(c.shape), c.dtype
    m = graph.nodes[ref.index].meta
    m = m[ref.item] if ref.item is not None else m
    return m[0], m[1]


def _value_info(helper, TensorProto, name, meta, dyn):
    shape, dtype = meta
    dims = [dyn.get(i, s) for i, s in enumerate(shape)]
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), dims)


def onnx_dtype(dtype):
    from onnx import helper  # optional: onnx (ember[onnx])
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np)) if dtype.np is not None else \
        _unsupported_dtype(dtype)


def _unsupported_dtype(dtype):
    raise OnnxExporterError(f"ember.onnx.export: dtype {dtype} has no ONNX equivalent here")
