"""The layering of ``core/ember``, read from the source (``ast``), not from a running process.

Every import counts: module level and inside functions, ``import a.b``, ``from a import b``
(``b`` a module or a name), relative or absolute. Importing ``ember.x.y`` also runs the
``ember.x`` package's ``__init__``, so that package is an edge too (except for the importer's
own packages, which are already being imported). The top ``ember`` package itself is left out:
it imports everything by design.

* the runtime is the floor: no module of ``ember.runtime`` imports the dispatcher, the
  library, the op modules or a concrete backend;
* no import cycle passes through a module of ``ember.runtime`` or ``ember.dispatch``;
* no module-level import cycle anywhere in ``core/ember``, and counting imports inside
  functions too, no cycle of more than two modules;
* the layers keep their order: the op families never import autograd, ``ember.func``, nn,
  the compiler or the ONNX exporter (an op's lowering rules get what they need from the
  objects the compiler and exporter pass them);
  autograd never imports ``ember.func`` (a layer reaches the ones above it only through the
  public ``ember`` namespace at call time, or through ``ops/_primitives`` slots they fill).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "core"
ROOT = CORE / "ember"
BACKEND_MODULES = {"ember_cpu", "ember_opencl", "ember_openreg", "ember_meta"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _resolve_relative(importer: str, level: int, module: str | None) -> str:
    base = importer.split(".")
    if not _is_package(importer):
        base = base[:-1]  # a module's relative imports start from its package
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _import_nodes(tree, top_level_only):
    """The import statements of a module: all of them, or those outside any function."""
    if not top_level_only:
        yield from (n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))
        return
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            stack.append(child)


def imports_of(name: str, top_level_only: bool = False) -> set:
    """Every name ``name`` imports (modules of the tree or not), with ancestor packages."""
    tree = ast.parse(MODULES[name].read_text(), filename=str(MODULES[name]))
    targets = set()
    for node in _import_nodes(tree, top_level_only):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(name, node.level, node.module) if node.level
                    else node.module)
            targets.add(base)
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:  # `from . import x`: x is a module
                    targets.add(f"{base}.{alias.name}")
    out = set()
    for t in targets:
        parts = t.split(".")
        for i in range(1, len(parts) + 1):
            out.add(".".join(parts[:i]))
    return out


def graph(top_level_only: bool = False) -> dict:
    edges = {}
    for name in MODULES:
        own_packages = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        edges[name] = {t for t in imports_of(name, top_level_only)
                       if t in MODULES and t != name and t != "ember" and t not in own_packages}
    return edges


def strongly_connected(edges: dict) -> list:
    """Tarjan's algorithm (iterative): the components with more than one module."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def a_cycle(edges: dict, component: list, through: str) -> list:
    """One concrete cycle inside ``component`` that passes through ``through`` (for messages)."""
    inside = set(component)
    paths = {through: [through]}
    frontier = [through]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & inside):
                if w == through:
                    return paths[v] + [through]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return component


def test_graph_sees_function_level_and_relative_imports():
    # the parser must see what the tests below rely on: a relative `from . import x` of a module,
    # and an import inside a function body
    edges = graph()
    assert "ember.runtime.events" in edges["ember.runtime.kernels"]
    assert "ember.runtime.registry" in edges["ember.dispatch.dispatcher"]  # inside a function
    assert "ember.dispatch" in edges["ember.library"]                       # the package init


@pytest.mark.parametrize("package", ["runtime", "dispatch"])
def test_no_import_cycle_through(package):
    edges = graph()
    prefix = f"ember.{package}"
    bad = []
    for comp in strongly_connected(edges):
        members = [m for m in comp if m == prefix or m.startswith(prefix + ".")]
        if members:
            bad.append(" -> ".join(a_cycle(edges, comp, members[0])))
    assert not bad, f"import cycles through ember.{package}:\n" + "\n".join(bad)


FORBIDDEN_FOR_RUNTIME = ("ember.dispatch", "ember.library", "ember.ops")


def test_runtime_imports_no_dispatch_library_ops_or_backend():
    bad = []
    for name in MODULES:
        if not (name == "ember.runtime" or name.startswith("ember.runtime.")):
            continue
        for t in imports_of(name):
            if any(t == f or t.startswith(f + ".") for f in FORBIDDEN_FOR_RUNTIME) or \
                    t.split(".")[0] in BACKEND_MODULES:
                bad.append(f"{name} imports {t}")
    assert not bad, "the runtime must stay below dispatch, library, ops and backends:\n" + \
        "\n".join(sorted(bad))


def test_no_module_level_import_cycle():
    edges = graph(top_level_only=True)
    bad = [" -> ".join(a_cycle(edges, comp, comp[0])) for comp in strongly_connected(edges)]
    assert not bad, "module-level import cycles in core/ember:\n" + "\n".join(bad)


def test_function_level_imports_close_no_cycle_longer_than_two():
    edges = graph()
    bad = [" -> ".join(a_cycle(edges, comp, comp[0])) for comp in strongly_connected(edges)
           if len(comp) > 2]
    assert not bad, "import cycles of more than two modules (imports in functions count):\n" + \
        "\n".join(bad)


def _in(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


#: importer -> what it must never import (the layering: ops < autograd < func < nn and above)
LAYERS = {
    ("ember.ops",): ("ember.autograd", "ember.func", "ember.nn", "ember.compiler",
                     "ember.onnx", "ember.distributed", "ember.optim"),
    ("ember.autograd",): ("ember.func", "ember.nn", "ember.compiler", "ember.profiler"),
    ("ember.dispatch",): ("ember.ops", "ember.autograd", "ember.func", "ember.nn"),
}


#: public addresses that only re-export a higher layer (torch.autograd.profiler is the profiler)
ALIAS_MODULES = {"ember.autograd.profiler"}


def test_layers_import_only_downward():
    edges = graph()
    bad = [f"{a} imports {b}" for a in sorted(edges) if a not in ALIAS_MODULES
           for b in sorted(edges[a])
           for lower, upper in LAYERS.items() if _in(a, lower) and _in(b, upper)]
    assert not bad, "imports that run up the layers:\n" + "\n".join(bad)


def test_every_primitive_slot_is_filled_once_ember_is_imported():
    # the rules layer calls these at run time; an empty slot would be an AttributeError on None
    import ember  # noqa: F401
    from ember.ops import _primitives
    empty = [name for name in _primitives.SLOTS if getattr(_primitives, name) is None]
    assert not empty, f"ops/_primitives slots no family filled: {empty}"


def test_lowering_makers_import_nothing_of_ember():
    # ops/_lowering.py is under every family (they build their rows' lowering columns from it)
    ember_imports = {t for t in imports_of("ember.ops._lowering") if _in(t, ("ember",))}
    assert not ember_imports, f"ember.ops._lowering imports {sorted(ember_imports)}"


#: the function-level imports core/ember may keep (issue #34: under 150, from ~610): an import
#: goes to module level unless it must not, and then says why beside it (see below)
FUNCTION_LEVEL_IMPORT_BUDGET = 69

#: the reasons an import may stay inside a function, as its comment starts: a module-level import
#: would close a cycle ("cycle: <module>"), load more at ``import ember`` or another start-up
#: path (measured: "start-up: ..."), need a package ember does not require ("optional: ..."),
#: run up a layer (autograd -> func, func -> nn: "layering: ..."), or try a module that only
#: some versions of a dependency have ("probe: ...")
IMPORT_REASONS = ("cycle:", "start-up:", "optional:", "layering:", "probe:")


def function_level_imports():
    """(module, line number, source lines) of each import statement inside a function."""
    out = []
    for name, path in sorted(MODULES.items()):
        src = path.read_text()
        lines = src.splitlines()
        seen = set()
        for fn in ast.walk(ast.parse(src)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in seen:
                    seen.add(node.lineno)
                    out.append((name, node, lines))
    return out


def _says_why(node, lines) -> bool:
    """A reason in a comment on the statement, or above it (a group of imports shares one)."""
    if any(f"# {r}" in line for line in lines[node.lineno - 1:node.end_lineno]
           for r in IMPORT_REASONS):
        return True
    i = node.lineno - 2
    while i >= 0:
        text = lines[i].strip()
        if text.startswith("#"):
            if any(text.startswith(f"# {r}") for r in IMPORT_REASONS):
                return True
        elif not text.startswith(("import ", "from ")) and not text.endswith((",", ")")):
            return False
        i -= 1
    return False


def test_function_level_imports_stay_within_budget_and_say_why():
    found = function_level_imports()
    assert len(found) <= FUNCTION_LEVEL_IMPORT_BUDGET, (
        f"{len(found)} imports inside functions (budget {FUNCTION_LEVEL_IMPORT_BUDGET}): import "
        f"at module level, or say why not (one of {IMPORT_REASONS}) and raise the budget")
    silent = [f"{MODULES[name].relative_to(CORE)}:{node.lineno}: {lines[node.lineno - 1].strip()}"
              for name, node, lines in found if not _says_why(node, lines)]
    assert not silent, ("imports inside functions with no reason beside them (one of "
                        f"{IMPORT_REASONS}):\n" + "\n".join(silent))
