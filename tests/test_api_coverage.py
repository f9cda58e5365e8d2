"""bench/api_coverage.py's measure: its snapshot of torch's names is current, and the
non-callable names (``torch values``, ``Tensor values``) are counted, each exclusion rule
matching something and each excluded name carrying a reason."""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import api_coverage  # noqa: E402

with open(api_coverage.SNAPSHOT) as f:
    SNAPSHOT = json.load(f)


def test_snapshot_is_current():
    torch = pytest.importorskip("torch")
    if torch.__version__.split("+")[0] != SNAPSHOT["torch"]:
        pytest.skip("the snapshot is of another torch")
    fresh = json.loads(json.dumps(api_coverage.torch_lists()))
    assert fresh == SNAPSHOT["names"]


def test_values_are_counted_from_the_snapshot():
    report = api_coverage.coverage(SNAPSHOT["names"])
    values = report["torch values"]
    for name in ("pi", "e", "inf", "nan", "newaxis", "default_generator", "float32", "strided",
                 "channels_last", "nn", "linalg"):
        assert name in values["have"], name
    # stdlib modules and dtypes ember lacks are excluded with a reason, not missing
    for name in ("os", "math", "uint16", "float8_e4m3fn", "qint8", "sparse_csr"):
        assert name in values["excluded"], name
    assert all(values["excluded"].values())
    assert "T" in report["Tensor values"]["have"] and "grad" in report["Tensor values"]["have"]


def test_values_and_callables_do_not_overlap():
    names = SNAPSHOT["names"]
    for ns in ("torch", "Tensor"):
        assert not set(names[ns]) & set(names[f"{ns} values"])


def test_every_value_rule_excludes_something():
    names = SNAPSHOT["names"]
    for namespaces, pattern, reason in api_coverage.EXCLUSIONS:
        value_spaces = [ns for ns in namespaces if ns in api_coverage.VALUE_NAMESPACES]
        if not value_spaces:
            continue
        hit = [n for ns in value_spaces for n in names[ns]
               if api_coverage.excluded_reason(ns, n) == reason]
        assert hit, f"rule {pattern!r} ({reason}) excludes nothing"
