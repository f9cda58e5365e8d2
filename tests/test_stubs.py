"""The generated stubs (``ember/__init__.pyi``, ``ember/_tensor.pyi``) match the live API, so
editors and grep find the names ember makes from op tables."""
import pathlib
import subprocess
import sys

import ember

from helpers_plugins import PLUGIN_MODULES, add_repo_plugin, run


_CHECK = """
import pathlib, sys, ember
from ember import _stubgen
root = pathlib.Path(ember.__file__).parent
stale = [rel for rel, text in _stubgen.generate().items()
         if not (root / rel).exists() or (root / rel).read_text() != text]
print(",".join(stale))
"""


def test_stubs_are_current():
    # a fresh interpreter: other tests attach test backends' methods to Tensor
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert not out, (f"{out} out of date with the live API: run `python -m ember._stubgen` "
                     f"and commit the result")


def test_stubs_do_not_depend_on_the_installed_plug_ins(tmp_path):
    # every bundled plug-in and the minimal backend discovered through entry points: the
    # generated text must be what a bare install generates (ember-meta once dropped is_meta)
    sources = [add_repo_plugin(tmp_path, name) for name in PLUGIN_MODULES]
    out = run(_CHECK + "print(sorted(ember.runtime.registry.names()))", tmp_path,
              extra_paths=sources)
    assert out.returncode == 0, out.stderr
    stale, names = out.stdout.splitlines()[-2:]
    assert all(n in names for n in PLUGIN_MODULES), names
    assert not stale, f"{stale} generated differently with the plug-ins installed"


def test_stubs_name_table_made_functions_and_their_modules():
    text = (pathlib.Path(ember.__file__).parent / "_tensor.pyi").read_text()
    assert "    def exp(self, *, out=...): ...  # ember.ops.elementwise.unary\n" in text
    assert "    def add_(self, other, *, alpha=...): ...  # ember.ops.elementwise.binary\n" in text
    top = (pathlib.Path(ember.__file__).parent / "__init__.pyi").read_text()
    assert "def sin(input, *, out=...): ...  # ember.ops.elementwise.unary\n" in top
    assert "from ._tensor import Tensor as Tensor\n" in top


_MISSING = """
import pathlib, ember
top = (pathlib.Path(ember.__file__).parent / "__init__.pyi").read_text()
print(",".join(n for n in dir(ember) if not n.startswith("_") and f" as {n}\\n" not in top
               and f"def {n}(" not in top and f"\\n{n}: " not in top))
"""


def test_every_public_name_is_in_the_stub():
    out = subprocess.run([sys.executable, "-c", _MISSING], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert not out, f"public names missing from ember/__init__.pyi: {out}"
