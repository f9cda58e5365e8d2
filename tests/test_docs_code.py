"""Every ```python block of README.md and docs/*.md runs (or, for excerpts of the repository's
own code, is found verbatim in the file it quotes), so the documentation stays complete and true.

A block runs as a script in a fresh interpreter, in an empty temporary directory. The line
before a block may hold one mark the extractor understands:

    <!-- docs-test: excerpt PATH -->        the block quotes PATH (relative to the repository):
                                            its lines appear there in order (``...`` lines elide,
                                            a trailing ``  # remark`` may annotate a line)
    <!-- docs-test: needs BACKEND: why -->  runs only where that backend is available
    <!-- docs-test: skip: why -->           not run (keep these rare; the reason is required)
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = re.compile(r"<!--\s*docs-test:\s*(excerpt|needs|skip)\b\s*(.*?)\s*-->")


def python_blocks(path: Path):
    """(line number, code, mark, argument) for each ```python block of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i + 1
            j = start
            while lines[j].strip() != "```":
                j += 1
            mark = MARK.search(lines[i - 1]) if i > 0 else None
            # a block inside a list item is indented with it
            blocks.append((start, textwrap.dedent("\n".join(lines[start:j]) + "\n"),
                           mark.group(1) if mark else None, mark.group(2) if mark else ""))
            i = j
        i += 1
    return blocks


CASES = [pytest.param(path, line, code, mark, arg,
                      id=f"{path.relative_to(ROOT)}:{line}")
         for path in DOCS for line, code, mark, arg in python_blocks(path)]


def _normal(line: str) -> str:
    return " ".join(line.split())


def _check_excerpt(code, target):
    source = [_normal(ln) for ln in (ROOT / target).read_text(encoding="utf-8").splitlines()]
    at = 0
    for line in code.splitlines():
        want = _normal(line)
        if not want or want == "...":
            continue
        # a doc's own trailing remark ("# in _build()") may annotate a quoted line
        bare = _normal(line.split("  #")[0]) if "  #" in line else want
        found = [source.index(w, at) for w in dict.fromkeys((want, bare)) if w in source[at:]]
        if not found:
            pytest.fail(f"the excerpt's line {line.strip()!r} is not in {target} (in order): "
                        f"update the documentation from the code")
        at = min(found) + 1


@pytest.mark.parametrize("path, line, code, mark, arg", CASES)
def test_doc_block(path, line, code, mark, arg, tmp_path):
    if mark == "skip":
        assert arg.startswith(":") and len(arg) > 10, "a skip mark needs its reason"
        pytest.skip(arg[1:].strip())
    if mark == "excerpt":
        assert (ROOT / arg).is_file(), f"excerpt mark names a missing file: {arg}"
        _check_excerpt(code, arg)
        return
    if mark == "needs":
        backend, _, why = arg.partition(":")
        assert why.strip(), "a needs mark gives the reason"
        import ember
        if ember._registry.unavailable_reason(backend.strip()) is not None:
            pytest.skip(f"needs {backend.strip()}: {why.strip()}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_RUN")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, env=env)
    assert out.returncode == 0, (f"{path.name}:{line} failed:\n{textwrap.indent(code, '  ')}"
                                 f"\n{out.stderr[-3000:]}")


def test_every_document_is_scanned():
    assert len(CASES) >= 10 and {p.name for p in DOCS} >= {"README.md", "architecture.md",
                                                          "adding-an-op.md",
                                                          "writing-a-backend.md"}
