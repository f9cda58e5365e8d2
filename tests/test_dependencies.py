"""Every runtime dependency pyproject.toml declares is imported by ember (an unused one costs
every user an install: tqdm once was), and the README's extras exist."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# distribution name -> the module it provides, where they differ
MODULE = {"ml-dtypes": "ml_dtypes"}


def _config():
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_runtime_dependency_is_imported():
    deps = [re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in
            _config()["project"]["dependencies"]]
    sources = "\n".join(p.read_text(encoding="utf-8") for root in ("core", "backends")
                        for p in (ROOT / root).rglob("*.py"))
    unused = []
    for dist in deps:
        module = MODULE.get(dist.lower().replace("_", "-"), dist.replace("-", "_"))
        if not re.search(rf"^\s*(import|from)\s+{module}\b", sources, re.M):
            unused.append(dist)
    assert not unused, f"declared but never imported by ember: {unused}"


def test_the_dev_extra_has_the_tools_the_tests_use():
    dev = " ".join(_config()["project"]["optional-dependencies"]["dev"])
    for tool in ("pytest", "mypy", "safetensors", "hypothesis"):
        assert tool in dev, tool
