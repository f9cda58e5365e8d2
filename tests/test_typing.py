"""ember ships ``py.typed`` and its generated stubs: ``mypy examples/`` passes with them (the
project's [tool.mypy] settings), and a type error against the stubs is caught."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[1]


def test_py_typed_is_shipped_with_the_stubs():
    package = Path(ember.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "__init__.pyi").exists() and (package / "_tensor.pyi").exists()
    config = (ROOT / "pyproject.toml").read_text()
    assert 'ember = ["*.pyi", "py.typed"]' in config


def _mypy(*args, cwd=ROOT):
    pytest.importorskip("mypy")
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental",
                           "--cache-dir", "/dev/null", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def test_mypy_passes_on_the_examples():
    out = _mypy("examples/")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout


def test_mypy_uses_the_stubs(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import ember\nember.no_such_function(1)\nx: int = ember.Size\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    config = (tmp_path / "pyproject.toml")
    config.write_text(config.read_text().replace('mypy_path = "core"',
                                                 f'mypy_path = "{ROOT / "core"}"'))
    out = _mypy(bad, cwd=tmp_path)
    assert out.returncode == 1
    assert 'Module has no attribute "no_such_function"' in out.stdout
