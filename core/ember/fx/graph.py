"""``Graph``: torch.fx's IR — a list of ``Node``s in program order, with the editing API
(create, insert before/after a node, erase, copy) and the Python code it stands for.

``python_code()`` writes the graph as a ``forward`` function, one line per node, the way
torch.fx prints it (``add = x + param;  x = param = None``): operators print as infix
expressions, ``getattr``/``getitem`` as attribute and subscript, functions of ember's public
namespaces by their public name (``ember.relu``), anything else through a global bound in
the generated module's namespace. Each value is set to ``None`` after its last use so
temporaries are freed as early as eagerly."""
from __future__ import annotations

import builtins
import importlib
import inspect
import keyword
import math
import math as math_mod
import operator
import operator as op_mod
import re
import ember

from .node import Node, _format_arg, _target_repr, map_arg
from . import _public

__all__ = ["Graph", "PythonCode"]

_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_snake = re.compile(r"(?<=[a-z])([A-Z])")
_ILLEGAL = set(keyword.kwlist) | set(builtins.__dict__)

# operators printed as expressions (torch.fx's magic methods)
_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
           operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&",
           operator.or_: "|", operator.xor: "^", operator.matmul: "@", operator.eq: "==",
           operator.ne: "!=", operator.lt: "<", operator.gt: ">", operator.le: "<=",
           operator.ge: ">="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


class _Namespace:
    """Unique Python names for nodes (``add``, ``add_1``, ...), never shadowing a builtin or a
    keyword."""

    def __init__(self):
        self._obj_to_name = {}
        self._used = set()
        self._base_count = {}

    def create_name(self, candidate, obj):
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = "_" + candidate
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if candidate in _ILLEGAL:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def release(self, name):
        self._used.discard(name)


def _snake_case(s):
    return _snake.sub(r"_\1", s).lower()


class _NodeList:
    """The graph's nodes in order (iterable, reversible, sized)."""

    def __init__(self, graph, reverse=False):
        self._graph, self._reverse = graph, reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        cur = root._prev if self._reverse else root._next
        while cur is not root:
            nxt = cur._prev if self._reverse else cur._next
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))


class PythonCode:
    """What ``Graph.python_code`` returns: ``src`` and the ``globals`` it runs with."""

    def __init__(self, src, globals_):
        self.src, self.globals = src, globals_


class _InsertPoint:
    def __init__(self, graph, new_insert):
        self.graph = graph
        self.orig, graph._insert = graph._insert, new_insert

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self.graph._insert = self.orig
        return False


class Graph:
    """torch.fx's ``Graph``. Nodes are created at the insertion point (the end by default;
    ``inserting_before``/``inserting_after`` move it)."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._used_names = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owners = 0
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        return _NodeList(self)

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes with this ``op`` (and ``target``), in graph order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- creating nodes -------------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def _target_to_str(self, target):
        if callable(target):
            op = target.__name__
        else:
            op = target
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return _snake_case(op)

    def erase_node(self, to_erase):
        """Removes a node without users from the graph."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n=None):
        """Context manager: new nodes go right before ``n`` (the start of the graph when
        None)."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """Context manager: new nodes go right after ``n`` (the end when None)."""
        if n is None:
            return self.inserting_before(self._root)
        return _InsertPoint(self, n.append)

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of ``node`` (from any graph) in this one, its inputs mapped by
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copies every node of ``g`` into this graph (``val_map``: old node → new, filled);
        returns the copied output's value (or the output node)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            rv, node = out
            g.output(rv, type_expr=node.type)
        return g

    # -- checks and passes ----------------------------------------------------------------------
    def lint(self):
        """Checks the graph is well formed: every input defined before use, names unique,
        targets of the right kind, ``get_attr``/``call_module`` targets present in the owning
        module."""
        seen, names = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node.all_input_nodes:
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       f"has been defined! Please check that Nodes in the "
                                       f"graph are topologically ordered\n{self}")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            seen.add(node)
            if node.op in ("get_attr", "call_module") and self.owning_module is not None:
                obj = self.owning_module
                for atom in node.target.split("."):
                    if not hasattr(obj, atom):
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of "
                                           f"{type(obj).__name__}")
                    obj = getattr(obj, atom)

    def eliminate_dead_code(self, is_impure_node=None):
        """Removes nodes whose values nobody reads (keeping impure ones); True if any."""
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    # -- printing -------------------------------------------------------------------------------
    def __str__(self):
        placeholders = []
        ret = [None]
        lines = [n.format_node(placeholders, ret) for n in self.nodes]
        head = f"graph({', '.join(placeholders)}){ret[0] or ''}:"
        return "\n".join([head] + ["    " + line for line in lines])

    def print_tabular(self):
        """Prints one row per node: opcode, name, target, args, kwargs (with ``tabulate``
        when installed, as torch.fx; otherwise the same columns in its "simple" layout)."""
        rows = [[n.op, n.name, _target_repr(n.target) if n.op == "call_function" else n.target,
                 _format_arg(n.args), _format_arg(n.kwargs)] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        try:
            from tabulate import tabulate  # optional: tabulate
            print(tabulate(rows, headers=headers))
        except ImportError:
            print(_simple_table(rows, headers))

    # -- code -----------------------------------------------------------------------------------
    def python_code(self, root_module="self", *, verbose=False):
        """``PythonCode`` for this graph: a ``forward(self, ...)`` function."""
        return _CodeGen(self, root_module).generate()

    def on_generate_code(self, make_transformer):
        """Accepted for torch.fx compatibility; code transforms are not supported."""
        raise NotImplementedError("Graph.on_generate_code: ember.fx has no codegen transforms")


def _simple_table(rows, headers):
    cells = [headers] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    out = [fmt(headers), "  ".join("-" * w for w in widths)]
    out += [fmt(r) for r in cells[1:]]
    return "\n".join(out)


# -- code generation ----------------------------------------------------------------------------
def _public_name(fn):
    """``ember.relu``-style dotted name of a function reachable from ember's public namespaces
    (or from its own module), else None."""
    hit = _public.lookup(fn)
    if hit is not None:
        return hit
    mod = getattr(fn, "__module__", None)
    name = getattr(fn, "__name__", None)
    if mod in ("math", "operator", "builtins") and name:
        try:
            if getattr(importlib.import_module(mod), name) is fn:
                return name if mod == "builtins" else f"{mod}.{name}"
        except (ImportError, AttributeError):
            return None
    return None


class _CodeGen:
    def __init__(self, graph, root_module):
        self.graph, self.root = graph, root_module
        self.node_names = {n.name for n in graph.nodes}
        self.globals = {"inf": math.inf, "nan": math.nan, "NoneType": type(None)}
        self.names = {}
        self.globals.update(ember=ember, operator=op_mod, math=math_mod,
                            device=ember.device)

    def add_global(self, obj, hint):
        dotted = _public_name(obj) if callable(obj) else None
        if dotted is not None:
            head = dotted.split(".")[0]
            if (head in self.globals or head in builtins.__dict__) and \
                    head not in self.node_names:
                return dotted
        for name, value in self.globals.items():
            if value is obj and name not in self.node_names:
                return name
        base = _illegal_char_regex.sub("_", hint) or "_global"
        name, k = base, 0
        # a global never takes a node's name: the node's assignment would shadow it
        while name in self.globals or name in builtins.__dict__ or name in self.node_names:
            k += 1
            name = f"{base}_{k}"
        self.globals[name] = obj
        return name

    def fmt(self, a):
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                ctor = self.add_global(type(a), type(a).__name__)
                return f"{ctor}({', '.join(self.fmt(x) for x in a)})"
            inner = ", ".join(self.fmt(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.fmt(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.fmt(k)}: {self.fmt(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.fmt(a.start)}, {self.fmt(a.stop)}, {self.fmt(a.step)})"
        if isinstance(a, float):
            if a != a:
                return "nan"
            if a in (math.inf, -math.inf):
                return "inf" if a > 0 else "-inf"
            return repr(a)
        if a is None or isinstance(a, (bool, int, str, bytes, complex)):
            return repr(a)
        if a is Ellipsis:
            return "..."
        if isinstance(a, ember.dtype):
            return f"ember.{a.name}" if getattr(ember, a.name, None) is a else \
                self.add_global(a, "dtype")
        if isinstance(a, ember.device):
            return repr(a)
        if isinstance(a, type):
            return self.add_global(a, a.__name__)
        return self.add_global(a, type(a).__name__.lower())

    def call_args(self, args, kwargs):
        parts = [self.fmt(a) for a in args]
        parts += [f"{k} = {self.fmt(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def generate(self):
        graph = self.graph
        params, body = [], []
        last_use = {}
        for node in graph.nodes:
            for arg in node.all_input_nodes:
                last_use[arg] = node
        freed_at = {}
        for value, user in last_use.items():
            freed_at.setdefault(user, []).append(value)
        for node in graph.nodes:
            line = self.emit(node, params)
            if line is None:
                continue
            dead = [v.name for v in freed_at.get(node, ()) if node.op != "output"]
            if node.op not in ("output",) and not node.users and node.op != "placeholder":
                dead.append(node.name)
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append("    " + line)
        if not any(n.op == "output" for n in graph.nodes):
            body.append("    return None")
        src = f"\n\n\ndef forward({', '.join([self.root] + params)}):\n" + \
            "\n".join(body) + "\n    "
        return PythonCode(src, self.globals)

    def emit(self, node, params):
        op, target, args, kwargs = node.op, node.target, node.args, node.kwargs
        name = node.name
        if op == "placeholder":
            text = target if target.startswith("*") else name
            if args:
                text += f" = {self.fmt(args[0])}"
            params.append(text)
            return None
        if op == "get_attr":
            return f"{name} = {self._attr_path(target)}"
        if op == "call_module":
            return f"{name} = {self._attr_path(target)}({self.call_args(args, kwargs)})"
        if op == "call_method":
            obj, rest = args[0], args[1:]
            return f"{name} = {self.fmt(obj)}.{target}({self.call_args(rest, kwargs)})"
        if op == "output":
            return f"return {self.fmt(args[0])}"
        # call_function
        if not kwargs:
            if target in _BINARY and len(args) == 2:
                return f"{name} = {self.fmt(args[0])} {_BINARY[target]} {self.fmt(args[1])}"
            if target in _UNARY and len(args) == 1:
                return f"{name} = {_UNARY[target]}{self.fmt(args[0])}"
            if target is operator.getitem and len(args) == 2:
                return f"{name} = {self.fmt(args[0])}[{self._index(args[1])}]"
            if target is builtins.getattr and len(args) == 2 and isinstance(args[1], str) and \
                    args[1].isidentifier():
                return f"{name} = {self.fmt(args[0])}.{args[1]}"
        fn = self.add_global(target, getattr(target, "__name__", "fn"))
        return f"{name} = {fn}({self.call_args(args, kwargs)})"

    def _index(self, idx):
        if isinstance(idx, tuple) and idx:
            return ", ".join(self._index(i) for i in idx)
        if isinstance(idx, slice):
            parts = ["" if v is None else self.fmt(v) for v in (idx.start, idx.stop)]
            text = ":".join(parts)
            return text + (f":{self.fmt(idx.step)}" if idx.step is not None else "")
        return self.fmt(idx)

    def _attr_path(self, target):
        out = self.root
        for atom in target.split("."):
            out = f"{out}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) \
                else f'getattr({out}, "{atom}")'
        return out

