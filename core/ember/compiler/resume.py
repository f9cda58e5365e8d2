"""Resuming after a graph break: a function whose capture broke runs as compiled pieces around
the statements that broke.

Capture goes through the dispatcher, not bytecode, so a break can't be resumed mid-frame the
way torch's dynamo does. Instead the function's body is split at the source level: the capture
notes the line of the function's own frame at each break (``Capture.break_lines``), and
``plan`` cuts the body (its ``ast``, from ``inspect.getsource``) into blocks:

* runs of statements without a break → a ``GraphBlock``: a generated function taking the
  locals it reads as keyword arguments and returning the locals it assigns, compiled with
  ``ember.compile`` like any function (its own guards, fusion, compiled backward). A float
  local that changes between calls (a value read on the host) enters as a 0-d tensor after
  its second value, so the piece isn't recompiled per value;
* a statement with a break → an ``EagerBlock`` run as plain Python (a ``print``, an
  ``.item()``), except that an ``if`` evaluates only its test eagerly and splits each branch
  the same way, and a ``with`` enters its context eagerly and splits its body.

The ``Driver`` binds the call's arguments to the parameter names and runs the blocks in
order, passing locals between them in a dict; a ``return`` inside a piece comes back as
``("ret", value)``. Generated pieces keep the original file and line numbers (tracebacks and
break reasons name the user's lines), the original globals and closure cells (``nonlocal`` and
``global`` statements are repeated in each piece), and the first parameter positionally (so
zero-argument ``super()`` works). A piece that breaks again under other state is split again
(it carries its own statements). Not resumable — the whole call runs eagerly, as before:
lambdas, generators and coroutines, functions without source, a break outside the function's
own frame that no statement of it contains, side effects a replay can't redo, and methods that
use private (name-mangled) attributes."""
from __future__ import annotations

import ast
import copy
import inspect
import textwrap
import types

from .. import _dtype
from ..ops.factories import tensor

_UNSPLITTABLE_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | \
    inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


class _Spec:
    """What every generated piece of one function shares."""

    def __init__(self, globals_, cells, filename, local_names, declarations, first, name):
        self.globals, self.cells, self.filename = globals_, cells, filename
        self.local_names = local_names          # the original function's locals
        self.declarations = declarations        # its global/nonlocal statements
        self.first = first                      # its first positional parameter (or None)
        self.name = name


def plan(fn, break_lines, compile_piece):
    """A ``Driver`` running ``fn`` as pieces around ``break_lines`` (None: not resumable).
    ``compile_piece(function)`` returns the compiled form of a generated piece."""
    if not break_lines or any(line is None for line in break_lines):
        return None
    func = getattr(fn, "__func__", fn)
    bound = getattr(fn, "__self__", None) if func is not fn else None
    source = getattr(func, "__ember_source__", None)
    if source is not None:
        body, spec = source
    else:
        parsed = _parse(func)
        if parsed is None:
            return None
        body, spec = parsed
    lines = set(break_lines)
    if not any(_spans(st, lines) for st in body):
        return None
    blocks = _split(body, lines, spec, compile_piece)
    signature = getattr(func, "__ember_signature__", None) or inspect.signature(func)
    return Driver(blocks, signature, bound, spec)


def _parse(func):
    code = getattr(func, "__code__", None)
    if code is None or code.co_flags & _UNSPLITTABLE_FLAGS or func.__name__ == "<lambda>":
        return None
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if "." in func.__qualname__ and _uses_mangled_names(fdef):
        return None
    declarations = [n for n in _walk_scope(fdef.body) if isinstance(n, (ast.Global, ast.Nonlocal))]
    cells = dict(zip(code.co_freevars, func.__closure__ or ()))
    params = inspect.signature(func).parameters
    positional = [p for p in params.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    first = positional[0].name if positional else None
    local_names = set(code.co_varnames) | set(code.co_cellvars)
    spec = _Spec(func.__globals__, cells, code.co_filename, local_names, declarations, first,
                 func.__name__)
    return fdef.body, spec


def _uses_mangled_names(node):
    for n in ast.walk(node):
        name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) \
            else None
        if name and name.startswith("__") and not name.endswith("__"):
            return True
    return False


def _walk_scope(stmts):
    """The nodes of ``stmts`` outside nested functions, lambdas and classes."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                      ast.ClassDef)):
                todo.append(child)


def _spans(node, lines):
    return any(node.lineno <= line <= node.end_lineno for line in lines)


def _split(stmts, lines, spec, compile_piece):
    blocks, run = [], []

    def flush():
        if run:
            blocks.append(GraphBlock(list(run), spec, compile_piece))
            run.clear()
    for st in stmts:
        if not _spans(st, lines):
            run.append(st)
            continue
        flush()
        if isinstance(st, ast.If):
            blocks.append(IfBlock(st, _split(st.body, lines, spec, compile_piece),
                                  _split(st.orelse, lines, spec, compile_piece), spec))
        elif isinstance(st, ast.With) and not _spans_items(st, lines) and \
                all(i.optional_vars is None or isinstance(i.optional_vars, ast.Name)
                    for i in st.items):
            blocks.append(WithBlock(st, _split(st.body, lines, spec, compile_piece), spec))
        else:
            blocks.append(EagerBlock([st], spec))
    flush()
    return blocks


def _spans_items(st, lines):
    return any(_spans(i.context_expr, lines) for i in st.items)


# -- generated pieces ---------------------------------------------------------------------------
def _names(stmts, ctx):
    out = set()
    for st in stmts:
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ctx):
                out.add(n.id)
            elif ctx is ast.Store and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.ClassDef)):
                out.add(n.name)
            elif ctx is ast.Store and isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif ctx is ast.Store and isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
    return out


class _Returns(ast.NodeTransformer):
    """``return v`` → ``return ("ret", v)`` outside nested scopes."""

    def visit_Return(self, node):
        value = node.value or ast.Constant(None)
        return ast.copy_location(ast.Return(ast.Tuple([ast.Constant("ret"), value],
                                                      ast.Load())), node)

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


def _make_function(stmts, spec, label, result="env"):
    """A function ``(first, **env)`` running ``stmts`` with the locals ``env`` holds; it returns
    ("env", the locals it assigned) or ("ret", value). ``result="test"``: ``stmts`` is one
    expression, whose value it returns."""
    reads = (_names(stmts, ast.Load) | _names(stmts, ast.Store)) & spec.local_names
    assigned = sorted(_names(stmts, ast.Store) & spec.local_names)
    first = spec.first
    lineno = stmts[0].lineno
    head = [f"if {n!r} in __env: {n} = __env[{n!r}]" for n in sorted(reads) if n != first]
    decl = [ast.unparse(d) for d in spec.declarations]
    if result == "test":
        tail = ["return __value"]
    else:
        tail = ["__l = locals()",
                f"return ('env', {{__k: __l[__k] for __k in {tuple(assigned)!r} "
                f"if __k in __l}})"]
    params = f"{first}, **__env" if first else "**__env"
    freevars = list(spec.cells)
    source = "\n".join([f"def __ember_factory({', '.join(freevars)}):",
                        f"    def {label}({params}):"] +
                       ["        " + x for x in decl + head + ["pass"]] +
                       ["    return " + label, ""])
    module = ast.parse(source)
    inner = module.body[0].body[0]
    user = [copy.deepcopy(st) for st in stmts]
    body = [_Returns().visit(st) for st in user] if result == "env" else \
        [ast.Assign([ast.Name("__value", ast.Store())], user[0])]
    tail_nodes = ast.parse("\n".join(tail)).body
    inner.body = inner.body[:-1] + body + tail_nodes
    _fix_generated_lines(module, user, lineno)
    ast.fix_missing_locations(module)      # a rewritten ``return`` takes its statement's line
    code = compile(module, spec.filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    piece_code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType))
    closure = tuple(spec.cells[n] for n in piece_code.co_freevars)
    fn = types.FunctionType(piece_code, spec.globals, label, None, closure or None)
    fn.__ember_source__ = (stmts, spec) if result == "env" else None
    fn.__ember_signature__ = inspect.signature(fn)
    return fn


def _fix_generated_lines(module, body, lineno):
    """Generated lines (the argument unpacking, the return) take the piece's first line; the
    user's statements keep theirs."""
    user = set()
    for st in body:
        for n in ast.walk(st):
            user.add(id(n))
    for node in ast.walk(module):
        if id(node) in user:
            continue
        if "lineno" in node._attributes:
            node.lineno = lineno
            node.end_lineno = lineno
            node.col_offset = 0
            node.end_col_offset = 0


# -- blocks -------------------------------------------------------------------------------------
class GraphBlock:
    """Statements without a break: one compiled piece."""

    def __init__(self, stmts, spec, compile_piece):
        self.lines = (stmts[0].lineno, stmts[-1].end_lineno)
        self.fn = _make_function(stmts, spec, f"{spec.name}_lines_{self.lines[0]}_"
                                 f"{self.lines[1]}")
        self.compiled = compile_piece(self.fn)
        self.first = spec.first
        self.floats = {}           # local name -> the float it held when first seen
        self.dynamic = set()       # float locals seen with two values: passed as 0-d tensors

    def run(self, env):
        # a float computed eagerly (``scale = t.max().item()``) usually differs every call:
        # after its second value it enters the piece as a 0-d float64 tensor, a graph input,
        # instead of a constant that recompiles (torch's automatic dynamic, for floats)
        passed = env
        for k, v in env.items():
            if type(v) is float:
                if k in self.dynamic:
                    if passed is env:
                        passed = dict(env)
                    passed[k] = _scalar_tensor(v)
                elif self.floats.setdefault(k, v) != v:
                    self.dynamic.add(k)
        return _call(self.compiled, self.first, passed)

    def describe(self):
        return f"graph lines {self.lines[0]}-{self.lines[1]}"


class EagerBlock:
    """A statement that broke: plain Python every call."""

    def __init__(self, stmts, spec):
        self.lines = (stmts[0].lineno, stmts[-1].end_lineno)
        self.fn = _make_function(stmts, spec, f"{spec.name}_eager_{self.lines[0]}")
        self.first = spec.first

    def run(self, env):
        return _call(self.fn, self.first, env)

    def describe(self):
        return f"eager lines {self.lines[0]}-{self.lines[1]}"


class IfBlock:
    """An ``if`` whose test or branches broke: the test eagerly, the branch as pieces."""

    def __init__(self, st, then, orelse, spec):
        self.lines = (st.lineno, st.end_lineno)
        self.test = _make_function([st.test], spec, f"{spec.name}_test_{st.lineno}", "test")
        self.then, self.orelse, self.first = then, orelse, spec.first

    def run(self, env):
        return _run(self.then if _call(self.test, self.first, env) else self.orelse, env)

    def describe(self):
        return f"if (line {self.lines[0]}): then {[b.describe() for b in self.then]} " \
               f"else {[b.describe() for b in self.orelse]}"


class WithBlock:
    """A ``with`` whose body broke: the context entered eagerly, the body as pieces."""

    def __init__(self, st, body, spec):
        self.lines = (st.lineno, st.end_lineno)
        self.contexts = [(_make_function([i.context_expr], spec, f"{spec.name}_with_{st.lineno}",
                                         "test"),
                          i.optional_vars.id if i.optional_vars is not None else None)
                         for i in st.items]
        self.body, self.first = body, spec.first

    def run(self, env, k=0):
        if k == len(self.contexts):
            return _run(self.body, env)
        fn, target = self.contexts[k]
        with _call(fn, self.first, env) as value:
            if target is not None:
                env[target] = value
            return self.run(env, k + 1)

    def describe(self):
        return f"with (line {self.lines[0]}): {[b.describe() for b in self.body]}"


def _scalar_tensor(v):
    return tensor(v, dtype=_dtype.float64)


def _call(fn, first, env):
    # sorted: a compiled piece's graph inputs follow the keyword order
    kwargs = {k: env[k] for k in sorted(env) if k != first}
    if first is not None:
        return fn(env[first], **kwargs) if first in env else fn(**kwargs)
    return fn(**kwargs)


def _run(blocks, env):
    for b in blocks:
        kind, value = b.run(env)
        if kind == "ret":
            return kind, value
        if value:
            env.update(value)
    return "env", None


class Driver:
    """Runs a function's blocks in order with its arguments bound to parameter names."""

    def __init__(self, blocks, signature, bound, spec):
        self.blocks, self.signature, self.bound, self.spec = blocks, signature, bound, spec

    def __call__(self, args, kwargs):
        if self.bound is not None:
            args = (self.bound,) + tuple(args)
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        env = dict(bound.arguments)
        kind, value = _run(self.blocks, env)
        return value if kind == "ret" else None

    def pieces(self):
        """Each block in order, described ("graph lines 3-7", "eager lines 8-8", ...)."""
        return [b.describe() for b in self.blocks]

    def compiled_pieces(self):
        """The compiled functions of the graph blocks, at any depth."""
        out = []

        def visit(blocks):
            for b in blocks:
                if isinstance(b, GraphBlock):
                    out.append(b.compiled)
                elif isinstance(b, IfBlock):
                    visit(b.then)
                    visit(b.orelse)
                elif isinstance(b, WithBlock):
                    visit(b.body)
        visit(self.blocks)
        return out
