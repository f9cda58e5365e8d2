"""Fusion: chains of pointwise nodes become one generated loop per backend.

``fuse(graph)`` walks the captured nodes in order and grows *groups*: a pointwise node (one whose
op has a ``pointwise`` facet and whose operands have the types a loop handles) joins the open
groups of its operands that have its output shape and device. A group closes when anything outside it reads
one of its values, or when any node writes a tensor in place — so a fused loop, placed where its
last member was, reads only values made before it and never runs across a mutation.

Each group of two or more nodes becomes a ``PointwiseKernel`` (inputs, statements, outputs),
handed to the device's backend: ``Backend.compile_pointwise(kernel)`` returns a callable, or
None when the backend has no lowering (then the nodes stay as they were and replay op by op).
The CPU backend compiles C with the system C compiler (``ember_cpu/fusion.py``); the OpenCL
backend builds an OpenCL C kernel (``ember_opencl/fusion.py``)."""
from __future__ import annotations

import copy

from dataclasses import dataclass

from .. import _dtype
from ..ops._lowering import CAST, CONDITION, PREDICATE, SAME
from ..ops.nn import norm as _norm
from .graph import Graph, Node, Ref, _refs, rebuild
from .pointwise import C_TYPES, Dialect


@dataclass(frozen=True)
class Local:
    """An operand inside a fused loop: ``("in", k)`` the k-th input, ``("t", j)`` statement j."""
    kind: str
    index: int


@dataclass(frozen=True)
class Statement:
    op: object               # the Op whose ``pointwise`` rule computes it
    args: tuple              # Locals where tensors were, Python values elsewhere
    compute: object          # the dtype its literals and arithmetic use
    dtype: object            # the dtype of the value it makes


@dataclass(frozen=True)
class PointwiseKernel:
    """One fused loop: read ``input_dtypes`` tensors broadcast to the output shape, compute
    ``statements`` element by element, write the statements listed in ``outputs``."""
    input_dtypes: tuple
    statements: tuple
    outputs: tuple           # statement indices
    ops: tuple               # the fused op names, for printing
    #: None, or (op, dims, keepdim): the single output is that reduction ("sum", "mean",
    #: "amax", "amin") of the statement in ``outputs`` over ``dims`` of the loop's shape
    reduction: tuple = None

    @property
    def output_dtypes(self):
        return tuple(self.statements[j].dtype for j in self.outputs)


    def render(self, dialect_for, var):
        """The loop body as C-family statements: ``dialect_for(dtype)`` gives the backend's
        ``Dialect`` for a compute dtype; ``var(local)`` names an operand."""
        lines = []
        for j, st in enumerate(self.statements):
            d = dialect_for(st.compute)
            d._var = var
            expr = st.op.pointwise(d, *st.args)
            lines.append(f"{C_TYPES[st.dtype]} t{j} = ({C_TYPES[st.dtype]})({expr});")
        return lines

    @property
    def key(self):
        return (self.input_dtypes, self.statements, self.outputs, self.reduction)


class FusedOp:
    """The graph node that runs a group: called with the group's inputs, returns its outputs
    (a tuple when there are several)."""

    def __init__(self, kernel, runner):
        self.kernel = kernel
        self.runner = runner
        self.name = "fused[" + ",".join(kernel.ops) + "]"

    def __call__(self, *inputs):
        outs = self.runner(inputs)
        return outs[0] if len(outs) == 1 else tuple(outs)


class _Group:
    __slots__ = ("members", "shape", "device", "open", "reduce")

    def __init__(self, member, shape, device):
        self.members = [member]
        self.shape, self.device, self.open = shape, device, True
        self.reduce = None       # a reduction node ending the group (its only output)


REDUCTIONS = ("sum", "mean", "amax", "amin")


def _reduction(node, meta_of):
    """Whether ``node`` reduces one float value over dims (a group may end with it)."""
    if getattr(node.op, "name", None) not in REDUCTIONS or node.kwargs:
        return False
    args = node.args
    if len(args) < 3 or not isinstance(args[0], Ref) or args[0].item is not None or \
            not isinstance(args[1], (list, tuple)) or not isinstance(args[2], bool):
        return False
    m = meta_of(args[0])
    if m is None or m[1] not in (_dtype.float32, _dtype.float64) or not m[0]:
        return False
    if len(args) > 3 and args[3] is not None and args[3] is not m[1]:
        return False
    return isinstance(node.meta, tuple) and node.meta[1] is m[1]


def _tensor_args(node):
    return [a for a in node.args if isinstance(a, Ref)]


def _operands(rule):
    """How the rule's operand, compute and result dtypes relate (``ops/_lowering.py``)."""
    return getattr(rule, "operands", SAME)


def _pointwise(node, meta_of):
    """Whether ``node`` can be a statement of a fused loop."""
    rule = getattr(node.op, "pointwise", None)
    if rule is None or node.kwargs or not isinstance(node.meta, tuple):
        return False
    shape, dtype, device = node.meta
    if dtype not in C_TYPES:
        return False
    if any(isinstance(a, (list, tuple)) or type(a).__name__ == "SymInt" for a in node.args):
        return False
    compute = node.args[-1] if isinstance(node.args[-1], _dtype.dtype) else dtype
    kind = _operands(rule)
    for pos, a in enumerate(node.args):
        if not isinstance(a, Ref):
            continue
        m = meta_of(a)
        if m is None or m[2] != device:
            return False
        want = _dtype.bool_ if (kind == CONDITION and pos == 0) else compute
        if kind == CAST:
            if m[1] not in C_TYPES or dtype is _dtype.bool_:
                return False
        elif m[1] is not want:
            return False
    if kind == PREDICATE:
        if dtype is not _dtype.bool_ or compute not in (_dtype.float32, _dtype.float64):
            return False
    elif kind != CAST and compute is not dtype:
        return False
    probe = Dialect(compute if compute in (_dtype.float32, _dtype.float64) else dtype,
                    lambda x: "x")
    try:
        return rule(probe, *node.args) is not None
    except (TypeError, ValueError):
        return False


def _meta_lookup(graph, input_meta):
    """``meta_of(ref)``: (shape, dtype, device) of a graph value, None when not a tensor."""
    def meta_of(ref):
        if ref.kind == "input":
            return input_meta[ref.index]
        if ref.kind == "const":
            c = graph.constants[ref.index]
            return (tuple(c.shape), c.dtype, c.device)
        m = graph.nodes[ref.index].meta
        if ref.item is not None:
            return m[ref.item] if isinstance(m, list) else None
        return m if isinstance(m, tuple) else None
    return meta_of


def fuse(graph: Graph, input_meta, lower) -> Graph:
    """A graph whose pointwise chains are ``FusedOp`` nodes. ``input_meta``: (shape, dtype,
    device) of each graph input; ``lower(device, kernel)`` returns the backend's runner or
    None."""
    nodes = graph.nodes
    meta_of = _meta_lookup(graph, input_meta)

    group_of = {}
    groups = []
    for i, node in enumerate(nodes):
        reads = [a for a in _refs(node.args) if a.kind == "node"]
        schema = getattr(node.op, "schema", None)
        if getattr(node.op, "mutates", False) or (schema is not None and
                                                  schema.mutated_positions):
            for g in groups:
                g.open = False
        if _pointwise(node, meta_of):
            shape, _, device = node.meta
            joined = None
            for r in reads:
                g = group_of.get(r.index)
                if g is None or g is joined:
                    continue
                if g.open and g.shape == shape and g.device == device:
                    if joined is None:
                        joined = g
                    else:                      # two open groups meet: one loop
                        joined.members.extend(g.members)
                        for m in g.members:
                            group_of[m] = joined
                        g.members = []
                else:
                    g.open = False
            if joined is None:
                joined = _Group(i, shape, device)
                groups.append(joined)
            else:
                joined.members.append(i)
            group_of[i] = joined
        else:
            first = node.args[0] if node.args else None
            target = group_of.get(first.index) if isinstance(first, Ref) and \
                first.kind == "node" else None
            if target is not None and target.open and _reduction(node, meta_of) and \
                    node.args[0].index in target.members and node.meta[2] == target.device:
                target.members.append(i)          # the group's reduction epilogue
                target.reduce = i
                group_of[i] = target
                target.open = False
                continue
            for r in reads:
                g = group_of.get(r.index)
                if g is not None:
                    g.open = False
    fusible = [g for g in groups if len(g.members) >= 2]
    if not fusible:
        return graph
    return _rewrite(graph, fusible, meta_of, lower)


def _detach_shared_reductions(graph, groups):
    """A reduction epilogue is kept only when nothing outside the group reads the group's
    values: the fused kernel then writes just the reduced tensor."""
    readers = {}
    for i, node in enumerate(graph.nodes):
        for r in _refs([node.args, node.kwargs]):
            if r.kind == "node":
                readers.setdefault(r.index, set()).add(i)
    outputs = {r.index for r in _refs(graph.output) if r.kind == "node"}
    for g in groups:
        if g.reduce is None:
            continue
        members = set(g.members)
        shared = any((readers.get(m, set()) - members) or m in outputs
                     for m in g.members if m != g.reduce)
        if shared:
            g.members.remove(g.reduce)
            g.reduce = None


def _kernel_for(graph, group, meta_of, used_outside):
    reduce_at = group.reduce
    members = sorted(m for m in group.members if m != reduce_at)
    index_in_group = {m: j for j, m in enumerate(members)}
    inputs, input_pos = [], {}
    statements = []
    for m in members:
        node = graph.nodes[m]
        args = []
        for a in node.args:
            if isinstance(a, Ref):
                if a.kind == "node" and a.item is None and a.index in index_in_group:
                    args.append(Local("t", index_in_group[a.index]))
                else:
                    if a not in input_pos:
                        input_pos[a] = len(inputs)
                        inputs.append(a)
                    args.append(Local("in", input_pos[a]))
            else:
                args.append(a)
        dtype = node.meta[1]
        compute = node.args[-1] if isinstance(node.args[-1], _dtype.dtype) else dtype
        if _operands(node.op.pointwise) == CAST:
            compute = dtype
        statements.append(Statement(node.op, tuple(args), compute, dtype))
    names = tuple(graph.nodes[m].op.name for m in members)
    if reduce_at is not None:
        node = graph.nodes[reduce_at]
        rank = len(group.shape)
        dims = tuple(sorted({d % rank for d in node.args[1]} if node.args[1] else range(rank)))
        kernel = PointwiseKernel(tuple(meta_of(r)[1] for r in inputs), tuple(statements),
                                 (index_in_group[node.args[0].index],),
                                 names + (node.op.name,), (node.op.name, dims, node.args[2]))
        return kernel, inputs, [reduce_at]
    outputs = tuple(j for j, m in enumerate(members) if m in used_outside)
    kernel = PointwiseKernel(tuple(meta_of(r)[1] for r in inputs), tuple(statements), outputs,
                             names)
    return kernel, inputs, [members[j] for j in outputs]


def _rewrite(graph, groups, meta_of, lower):
    _detach_shared_reductions(graph, groups)
    groups = [g for g in groups if len(g.members) >= 2]
    member_of = {m: g for g in groups for m in g.members}
    used_outside = set()
    for i, node in enumerate(graph.nodes):
        g = member_of.get(i)
        for r in _refs([node.args, node.kwargs]):
            if r.kind == "node" and r.index in member_of and member_of[r.index] is not g:
                used_outside.add(r.index)
    for r in _refs(graph.output):
        if r.kind == "node":
            used_outside.add(r.index)

    placed = {}     # group id -> (kernel, inputs, produced node ids) at its last member
    for g in groups:
        kernel, inputs, produced = _kernel_for(graph, g, meta_of, used_outside)
        runner = lower(g.device, kernel) if produced else None
        if runner is not None:
            placed[max(g.members)] = (kernel, inputs, produced, runner)
        else:
            for m in g.members:       # no lowering on this device: the nodes stay
                member_of.pop(m, None)

    new = Graph(constants=list(graph.constants), n_inputs=graph.n_inputs)
    new.plain = getattr(graph, "plain", False)
    remap = {}      # old node index -> Ref in the new graph

    def move(x):
        if isinstance(x, Ref):
            if x.kind != "node":
                return x
            r = remap[x.index]
            if x.item is None:
                return r
            return Ref("node", r.index, x.item)
        if isinstance(x, (list, tuple)):
            return rebuild(x, [move(v) for v in x])
        if isinstance(x, dict):
            return {k: move(v) for k, v in x.items()}
        return x

    for i, node in enumerate(graph.nodes):
        if i in placed:
            kernel, inputs, produced, runner = placed[i]
            index = len(new.nodes)
            fused = Node(FusedOp(kernel, runner), tuple(move(r) for r in inputs), {})
            fused.meta = [graph.nodes[p].meta for p in produced]
            new.nodes.append(fused)
            single = len(produced) == 1
            for k, p in enumerate(produced):
                remap[p] = Ref("node", index, None if single else k)
            if single:
                fused.meta = fused.meta[0]
            continue
        if i in member_of:
            continue
        index = len(new.nodes)
        moved = node.moved(args=move(node.args), kwargs=move(node.kwargs))
        new.nodes.append(moved)
        remap[i] = Ref("node", index)
    new.output = move(graph.output)
    return new


# -- ops a backend runs faster inside compiled graphs ----------------------------------------------
#: ops a backend may replace in a compiled graph (``Backend.compile_norm``)
LOWERED_OPS = (_norm.native_layer_norm_op, _norm.native_layer_norm_backward_op)


class LoweredOp:
    """A node whose op the backend runs with its own runner in compiled graphs; the original
    op whenever the runner declines the operands (returns None)."""

    def __init__(self, op, runner):
        self.op, self.runner = op, runner
        self.name = op.name

    def __call__(self, *args):
        out = self.runner(*args)
        return self.op(*args) if out is None else out


def lower_ops(graph, lower_norm):
    """``graph`` with the ops of ``LOWERED_OPS`` replaced by ``LoweredOp`` nodes where
    ``lower_norm(device, name, dtype)`` gives a runner: a copy when any is, so the captured
    graph (which ``fuse`` returns as it is when nothing fuses) keeps its ops for dynamic-shape
    generalization to compare."""
    nodes = list(graph.nodes)
    for i, node in enumerate(nodes):
        if node.op not in LOWERED_OPS or node.kwargs:
            continue
        name = node.op.name
        metas = node.meta if isinstance(node.meta, list) else [node.meta]
        first = next((m for m in metas if m is not None), None)
        if first is None:
            continue
        runner = lower_norm(first[2], name, first[1])
        if runner is not None:
            nodes[i] = node.moved(op=LoweredOp(node.op, runner))
    if all(a is b for a, b in zip(nodes, graph.nodes)):
        return graph
    lowered = copy.copy(graph)
    lowered.nodes = nodes
    return lowered


# -- foreach chains (optimizer updates) ----------------------------------------------------------
# an in-place foreach op joins a run when its ``applies`` facet names the elementwise op it
# applies to each ``self[i]`` (whose ``pointwise`` rule then computes it)


@dataclass(frozen=True)
class ForeachKernel:
    """One loop over every index of a run of in-place foreach ops: ``slots`` are the distinct
    tensor lists the run reads (each a kernel operand per index), ``statements`` compute in
    order, ``writes`` store (slot, statement) back in place."""
    slot_dtypes: tuple
    statements: tuple
    writes: tuple
    ops: tuple

    def render(self, dialect_for, var):
        return PointwiseKernel(self.slot_dtypes, self.statements, (), self.ops).render(
            dialect_for, var)

    @property
    def key(self):
        return ("foreach", self.slot_dtypes, self.statements, self.writes)


class FusedForeachOp:
    """Runs a foreach run as one kernel; the original ops when the tensors don't fit the
    kernel at run time (non-contiguous, mixed shapes)."""
    mutates = True

    def __init__(self, kernel, runner, originals):
        self.kernel, self.runner, self.originals = kernel, runner, originals
        self.name = "fused_foreach[" + ",".join(kernel.ops) + "]"

    def __call__(self, *slots):
        if not self.runner(slots):
            for op, build in self.originals:
                op(*build(slots))
        return None


def _foreach_run_kernel(graph, run, meta_of):
    slots, slot_of = [], {}

    def slot(lst):
        key = tuple(lst)
        if key not in slot_of:
            slot_of[key] = len(slots)
            slots.append(key)
        return slot_of[key]

    n = None
    for node in run:
        for a in node.args:
            if isinstance(a, list):
                if not a or not all(isinstance(r, Ref) for r in a):
                    return None
                if n is None:
                    n = len(a)
                elif len(a) != n:
                    return None
    current = {}          # slot -> Local of its latest value
    statements, writes_at = [], {}
    originals = []
    for node in run:
        applied = node.op.applies
        args, layout = [], []
        for a in node.args:
            if isinstance(a, list):
                s = slot(a)
                args.append(current.get(s, Local("in", s)))
                layout.append(("slot", s))
            else:
                args.append(a)
                layout.append(("value", a))
        self_slot = slot(node.args[0])
        statements.append((applied, tuple(args)))
        current[self_slot] = Local("t", len(statements) - 1)
        writes_at[self_slot] = len(statements) - 1

        def build(slot_lists, layout=tuple(layout)):
            return [slot_lists[v] if kind == "slot" else v for kind, v in layout]
        originals.append((node.op, build))
    dtypes = set()
    for key in slots:
        for r in key:
            m = meta_of(r)
            if m is None:
                return None
            dtypes.add(m[1])
    for i in range(n):
        shapes = {meta_of(key[i])[0] for key in slots}
        if len(shapes) != 1:
            return None
    if len(dtypes) != 1 or next(iter(dtypes)) not in (_dtype.float32, _dtype.float64):
        return None
    dt = next(iter(dtypes))
    kernel = ForeachKernel(tuple(dt for _ in slots),
                           tuple(Statement(op, args, dt, dt) for op, args in statements),
                           tuple(sorted(writes_at.items())),
                           tuple(node.op.name for node in run))
    return kernel, [list(k) for k in slots], originals


def fuse_foreach(graph: Graph, input_meta, lower_foreach) -> Graph:
    """Runs of consecutive in-place foreach ops become one ``FusedForeachOp`` node (SGD with
    momentum's mul_/add_/add_ is one pass over the parameters instead of three)."""
    nodes = graph.nodes
    meta_of = _meta_lookup(graph, input_meta)

    runs, current = [], []
    for i, node in enumerate(nodes):
        if getattr(node.op, "applies", None) is not None and not node.kwargs:
            current.append(i)
            continue
        if len(current) >= 2:
            runs.append(current)
        current = []
    if len(current) >= 2:
        runs.append(current)
    if not runs:
        return graph
    replaced = {}
    for run in runs:
        made = _foreach_run_kernel(graph, [nodes[i] for i in run], meta_of)
        if made is None:
            continue
        kernel, slot_lists, originals = made
        device = meta_of(slot_lists[0][0])[2]
        runner = lower_foreach(device, kernel)
        if runner is None:
            continue
        replaced[run[0]] = (Node(FusedForeachOp(kernel, runner, originals),
                                 tuple(slot_lists), {}), run)
    if not replaced:
        return graph
    new = Graph(constants=list(graph.constants), n_inputs=graph.n_inputs)
    new.plain = getattr(graph, "plain", False)
    remap, skip = {}, set()

    def move(x):
        if isinstance(x, Ref):
            if x.kind != "node":
                return x
            r = remap[x.index]
            return r if x.item is None else Ref("node", r.index, x.item)
        if isinstance(x, (list, tuple)):
            return rebuild(x, [move(v) for v in x])
        if isinstance(x, dict):
            return {k: move(v) for k, v in x.items()}
        return x

    for i, node in enumerate(nodes):
        if i in replaced:
            fused, run = replaced[i]
            fused.args = move(fused.args)
            new.nodes.append(fused)
            for j in run:
                remap[j] = Ref("node", len(new.nodes) - 1)
            skip.update(run)
            continue
        if i in skip:
            continue
        moved = node.moved(args=move(node.args), kwargs=move(node.kwargs))
        new.nodes.append(moved)
        remap[i] = Ref("node", len(new.nodes) - 1)
    new.output = move(graph.output)
    return new
