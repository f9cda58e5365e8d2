"""Backends use only ember's public API (``ember.runtime`` and the ``torch``-like ``ember.*``).

Read from the source with ``ast``: every ``.py`` under ``plugins/``,
``examples/minimal_backend/`` and the built-in backends ``backends/cpu``, ``backends/opencl``,
``backends/cuda`` (held to the plug-in rules: they register through the same entry point).
Refused:

* importing a private module or name: ``ember._tensor``, ``ember.ops._util``,
  ``from ember import _dtype``, ``from ember.runtime import _anything``;
* a private attribute reached from something imported from ember: ``ember._dtype``,
  ``registry._backends``, ``Tensor._make``, ``ember.runtime.allocator._fmt``;
* the private attributes of tensors and storages on any object (``t._shape``, ``t._storage``,
  ``t._native``…): a tensor's type can't be known statically, and a plug-in has its own public
  ways (``ember.runtime.shape_of``/``strides_of``/``offset_of``/``storage_of``/``data_of`` on
  hot paths, ``t.shape``, ``t.untyped_storage()``, ``ember.runtime.get_native``);
* a private name of another module, inside the package too: ``from .codegen import _meta``,
  ``codegen._MAX_META`` (what modules share is named publicly, so it can be found and kept).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILTIN_BACKENDS = [REPO / "backends" / name for name in ("cpu", "opencl", "cuda")]
CHECKED = [REPO / "plugins", REPO / "examples" / "minimal_backend"] + BUILTIN_BACKENDS
TENSOR_PRIVATE = {"_shape", "_stride", "_offset", "_storage", "_native", "_make", "_ks", "_ag",
                  "_view_base", "_version", "_bump_version", "_backend", "_host", "_impl",
                  "_view_of", "_key"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "ember" and any(_private(p) for p in parts[1:])


def violations(source: str, filename: str = "<source>") -> list:
    """Every use of a private core name in ``source``, as ``file:line: what``."""
    tree = ast.parse(source, filename=filename)
    from_ember = set()   # local names bound to ember modules or objects
    imported = set()     # local names bound by any import (another module, or what it holds)
    found = []

    def flag(node, what):
        found.append(f"{filename}:{node.lineno}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imported.add((alias.asname or alias.name).split(".")[0])
                if alias.name.split(".")[0] == "ember":
                    if _private_module(alias.name):
                        flag(node, f"imports private module {alias.name}")
                    from_ember.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "ember":
            if _private_module(node.module):
                flag(node, f"imports from private module {node.module}")
            for alias in node.names:
                if _private(alias.name):
                    flag(node, f"imports private name {alias.name} from {node.module}")
                from_ember.add(alias.asname or alias.name)
                imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom) and node.level:
            where = "." * node.level + (node.module or "")
            for alias in node.names:
                if _private(alias.name):
                    flag(node, f"imports private name {alias.name} from {where}")
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if node.attr in TENSOR_PRIVATE:
                flag(node, f"reads private tensor/storage attribute .{node.attr}")
            elif isinstance(root, ast.Name) and root.id in from_ember:
                flag(node, f"reads private attribute {ast.unparse(node)} of an ember object")
            elif isinstance(node.value, ast.Name) and node.value.id in imported:
                flag(node, f"reads private attribute {ast.unparse(node)} of another module")
    return found


def _files():
    return sorted(p for root in CHECKED for p in root.rglob("*.py")
                  if "build" not in p.parts and not any(part.endswith(".egg-info")
                                                        for part in p.parts))


def test_there_are_plugins_to_check():
    names = {p.parent.name for p in _files()}
    assert {"ember_openreg", "ember_meta", "ember_minimal", "ember_cpu", "ember_opencl",
            "ember_cuda"} <= names


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(REPO)))
def test_plugin_uses_only_public_core_api(path):
    bad = violations(path.read_text(), str(path.relative_to(REPO)))
    assert not bad, "private core names used:\n" + "\n".join(bad)


@pytest.mark.parametrize("snippet", [
    "from ember._tensor import Tensor",
    "from ember import _dtype",
    "import ember._storage",
    "from ember.ops._util import contiguous_strides",
    "from ember.runtime.allocator import _fmt",
    "from ember.runtime import registry\nregistry._backends['x']",
    "import ember\nember._dtype.float32",
    "from ember import Tensor\nTensor._make(1, 2, 3, 4, 5, 6)",
    "def f(t):\n    return t._shape",
    "def f(t):\n    return t._storage.data",
    "from .codegen import _meta",
    "from . import codegen\ncodegen._MAX_META",
    "from .. import helpers as h\nh._cache.clear()",
])
def test_the_checker_catches(snippet):
    assert violations(snippet), snippet


@pytest.mark.parametrize("snippet", [
    "from ember.runtime import make_tensor, registry\nregistry.get('cpu')",
    "import ember\nember.float32",
    "class W:\n    def __init__(self):\n        self._items = []\n    def f(self):\n"
    "        return self._items",
    "def f(t):\n    return t.shape, t.stride(), t.storage_offset(), t.untyped_storage()",
    "from ember.runtime import data_of, layout_of, shape_of\n"
    "def f(t):\n    return shape_of(t), layout_of(t), data_of(t)",
    "from . import codegen\ncodegen.MAX_META",
    "from .fusion import build\nclass B:\n    def f(self):\n        return self._cache",
])
def test_the_checker_allows(snippet):
    assert not violations(snippet), violations(snippet)

