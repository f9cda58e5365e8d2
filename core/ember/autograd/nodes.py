"""Backward nodes built from derivative formulas (CopySlices, for in-place ops on views, is in
``view_history.py``)."""
from __future__ import annotations

from .._dtype import COMPLEX
from .._tensor import Tensor
from ..ops._grad import cast, expandable, sum_to, zeros
from .graph import Node, SavedTensor
from ..ops.conversion import to_device_op
from ..ops.elementwise import add, unary_api


class Spec:
    """A formula bound to an op's schema: which arguments are tensor slots, what is saved."""

    __slots__ = ("op_name", "formula", "arg_names", "slots", "n_out", "diff_out", "save_pos",
                 "save_result", "has_list", "list_out")

    def __init__(self, op, f):
        schema = op.schema
        names = list(schema.arg_names)
        # a ``-> Tensor[]`` op (split, unbind): one node for however many outputs a call makes;
        # n_out 0 says "count them per node" (``len(node._out_meta)``)
        self.list_out = len(schema.returns) == 1 and schema.returns[0].type.startswith("Tensor[")
        n_out = 0 if self.list_out else schema.n_outputs
        self.op_name = op.name
        self.formula = f
        self.arg_names = names
        diff = f.diff
        self.slots = []
        for i, arg in enumerate(schema.arguments):
            if (arg.is_tensor or arg.is_tensor_list) and (diff is None or arg.name in diff):
                self.slots.append((i, arg.is_tensor_list))
        self.has_list = any(is_list for _, is_list in self.slots)
        self.n_out = n_out
        self.diff_out = tuple(f.outputs) if f.outputs is not None else (True,) * max(n_out, 1)
        save = f.save
        pairs = save.items() if isinstance(save, dict) else ((s, None) for s in save)
        self.save_pos = []
        # False, True (every output) or, for "result<k>" entries, the output positions to keep
        # (PyTorch's result1/result2: an in-place write to an output the formula never reads,
        # like ``out += x`` after batch norm, must not fail the saved-version check)
        self.save_result = False
        picked = []
        for name, cond in pairs:
            if name == "result":
                self.save_result = True
                continue
            if name.startswith("result") and name[6:].isdigit():
                k = int(name[6:])
                if k >= n_out:
                    raise ValueError(f"derivative of {op.name}: no output {k} to save in "
                                     f"{op.schema}")
                picked.append(k)
                continue
            if name not in names:
                raise ValueError(f"derivative of {op.name}: no argument {name!r} to save in "
                                 f"{op.schema}")
            self.save_pos.append((names.index(name), None if cond is None else names.index(cond)))
        if picked and not self.save_result:
            self.save_result = tuple(sorted(picked))

    def needs(self, args, edges):
        """Per argument position: does it need a gradient (for lists: any element)."""
        out = [False] * len(self.arg_names)
        k = 0
        for i, is_list in self.slots:
            n = len(args[i]) if is_list else 1
            for e in edges[k:k + n]:
                if e is not None:
                    out[i] = True
                    break
            k += n
        return out

    def saved_args(self, args, needs):
        saved = list(args)
        kept = {i for i, c in self.save_pos if c is None or needs[c]}
        for i, is_list in self.slots:
            if i >= len(saved):
                continue
            a = saved[i]
            if is_list:
                saved[i] = [SavedTensor(x) if i in kept and isinstance(x, Tensor) else None
                            for x in a]
            elif isinstance(a, Tensor):
                saved[i] = SavedTensor(a) if i in kept else None
        for i, _ in self.save_pos:  # saved tensors outside the differentiable slots
            a = saved[i] if i < len(saved) else None
            if i in kept and isinstance(a, Tensor):
                saved[i] = SavedTensor(a)
            elif i in kept and isinstance(a, (list, tuple)) and not isinstance(a, SavedTensor):
                saved[i] = [SavedTensor(x) if isinstance(x, Tensor) else x for x in a]
        return saved

    def saves_self(self, args) -> bool:
        """Would recording this op on ``args`` save argument 0?"""
        for i, cond in self.save_pos:
            if i == 0:
                if cond is None:
                    return True
                c = args[cond] if cond < len(args) else None
                return isinstance(c, Tensor) and c.requires_grad
        return False


def bind(op, f) -> Spec:
    return Spec(op, f)


def node_class(spec, args):
    """The node class (named like PyTorch's) for this formula and these arguments."""
    f = spec.formula
    name = f.node_name(spec.op_name, args)
    cls = f.node_classes.get(name)
    if cls is None:
        scalars = f.scalars.get(name, ())
        hidden = tuple(k for k, (i, _) in enumerate(spec.slots) if spec.arg_names[i] in scalars)
        cls = f.node_classes[name] = type(name, (FormulaNode,),
                                          {"__slots__": (), "_scalar_edges": hidden})
    return cls


class FormulaNode(Node):
    __slots__ = ("_spec", "_args", "_metas", "_needs", "_info", "_result", "_out_meta")

    def __init__(self, edges):
        Node.__init__(self, edges)
        self._result = None
        self._out_meta = None

    @property
    def num_outputs(self):
        return self._spec.n_out or len(self._out_meta)

    # -- what formulas read -------------------------------------------------------------------
    def needs(self, i) -> bool:
        return self._needs[i]

    @property
    def needs_input_grad(self):
        return tuple(self._needs)

    def meta(self, i):
        """(shape, dtype, device) of tensor argument ``i`` (its first element for a list)."""
        k = 0
        for j, is_list in self._spec.slots:
            if j == i:
                return self._metas[k]
            k += len(self._args[j]) if is_list else 1
        raise IndexError(f"{self.name()}: argument {i} is not a tensor slot")

    def metas_of(self, i):
        """Per-element metadata of list argument ``i``."""
        k = 0
        for j, is_list in self._spec.slots:
            n = len(self._args[j]) if is_list else 1
            if j == i:
                return self._metas[k:k + n]
            k += n
        raise IndexError(f"{self.name()}: argument {i} is not a tensor slot")

    @property
    def info(self):
        return self._info

    @property
    def result(self):
        r = self._result
        if r is None:
            raise RuntimeError(f"{self.name()}: the result was not saved")
        if isinstance(r, tuple):
            return tuple(None if s is None else s.unpack(self) for s in r)
        return r.unpack(self)

    # -- running ------------------------------------------------------------------------------
    def apply(self, grads):
        spec = self._spec
        if spec.n_out == 1:
            g = grads[0]
        else:
            g = list(grads)
            metas = self._out_meta
            if len(g) < len(metas):   # a list output's gradients stop at the last one used
                g += [None] * (len(metas) - len(g))
            diff = spec.diff_out * len(metas) if spec.list_out else spec.diff_out
            for k, m in enumerate(metas):
                if g[k] is None and m is not None and diff[k]:
                    g[k] = zeros(m[0], _Like(m), m[1])
        args = [a.unpack(self) if a.__class__ is SavedTensor else
                _unpack(a, self) if a.__class__ is list else a for a in self._args]
        res = spec.formula.backward(self, g, *args)
        return self.finish(res)

    def finish(self, res):
        metas = self._metas
        edges = self.next_edges
        slots = self._spec.slots
        n_res = len(res)
        if not self._spec.has_list:
            out = []
            for k, (i, _) in enumerate(slots):
                r = res[i] if i < n_res else None
                if r is None or edges[k] is None:
                    out.append(None)
                else:
                    m = metas[k]
                    out.append(r if r.__class__ is Tensor and r._shape == m[0] and
                               r.dtype is m[1] and r.device is m[2] else validate(r, m, self, k))
            return out
        out = []
        k = 0
        for i, is_list in slots:
            r = res[i] if i < len(res) else None
            if is_list:
                n = len(self._args[i])
                rs = r if r is not None else (None,) * n
                for j in range(n):
                    out.append(validate(rs[j], metas[k], self, k) if edges[k] is not None
                               and rs[j] is not None else None)
                    k += 1
            else:
                out.append(validate(r, metas[k], self, k) if edges[k] is not None and
                           r is not None else None)
                k += 1
        return out

    def release(self):
        for a in self._args:
            if a.__class__ is SavedTensor:
                a.free()
            elif a.__class__ is list:
                for x in a:
                    if isinstance(x, SavedTensor):
                        x.free()
        r = self._result
        if isinstance(r, SavedTensor):
            r.free()
        elif isinstance(r, tuple):
            for s in r:
                if s is not None:
                    s.free()


class _Like:
    """Enough of a tensor (device) for ``zeros(shape, like)``."""

    __slots__ = ("device", "dtype")

    def __init__(self, meta):
        self.dtype = meta[1]
        self.device = meta[2]


def _unpack(a, node):
    if isinstance(a, SavedTensor):
        return a.unpack(node)
    if isinstance(a, list) and a and any(isinstance(x, SavedTensor) for x in a):
        return [x.unpack(node) if isinstance(x, SavedTensor) else x for x in a]
    return a


def validate(g, meta, node, k):
    """Bring a formula's gradient to its input's shape, dtype and device."""
    shape, dtype, device = meta
    if not isinstance(g, Tensor):
        raise TypeError(f"Function {node.name()} returned a {type(g).__name__} as the gradient "
                        f"at index {k}; expected a Tensor or None")
    if g._shape != shape:
        if not expandable(shape, g._shape):
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {k} "
                               f"- got {list(g._shape)} but expected shape compatible with "
                               f"{list(shape)}")
        g = sum_to(g, shape)
    if g.dtype is not dtype:
        if g.dtype.category == COMPLEX and dtype.category != COMPLEX:
            g = _real(g)
        g = cast(g, dtype)
    if g.device is not device:
        g = to_device_op(g, device, False)
    return g


def _real(g):
    # (z + conj z) / 2 stays in ember ops, so it works on every backend
    return add(g, unary_api["conj_physical"](g)) * 0.5
