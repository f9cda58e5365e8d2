"""``ember.runtime`` is the complete, documented public face for backend authors."""
import inspect
import re
from pathlib import Path

import pytest

import ember.runtime

DOC = (Path(__file__).resolve().parents[1] / "docs" / "writing-a-backend.md").read_text()


@pytest.mark.parametrize("name", ember.runtime.__all__)
def test_public_name_has_a_docstring(name):
    obj = getattr(ember.runtime, name)
    doc = inspect.getdoc(obj) if not isinstance(obj, (str, int)) else None
    assert doc and len(doc) > 20, f"ember.runtime.{name} has no docstring"


@pytest.mark.parametrize("name", ember.runtime.__all__)
def test_public_name_is_documented_for_backend_authors(name):
    assert f"`{name}" in DOC or f"**`{name}" in DOC, \
        f"docs/writing-a-backend.md does not document ember.runtime.{name}"


def test_every_public_module_level_name_is_listed():
    # a name imported into ember.runtime is public API: it belongs in __all__ (or is a module
    # of the runtime package itself, reachable as ember.runtime.<module>)
    listed = set(ember.runtime.__all__)
    for name, obj in vars(ember.runtime).items():
        if name.startswith("_") or inspect.ismodule(obj) and name not in listed:
            continue
        assert name in listed, f"ember.runtime.{name} is public but not in __all__"


def test_backend_methods_are_all_documented():
    methods = [n for n, v in vars(ember.runtime.Backend).items()
               if not n.startswith("_") and (callable(v) or isinstance(v, property))]
    missing = [m for m in methods if f"`{m}" not in DOC]
    assert not missing, f"Backend members missing from the doc: {missing}"


def test_doc_is_self_contained():
    assert not re.search(r"https?://", DOC), "docs link outside the repository"
