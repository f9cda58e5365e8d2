"""docs/security.md names a test for each claim: every test it names exists (a renamed or
deleted test must take its claim with it)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_named_in_security_md_exists():
    text = (ROOT / "docs" / "security.md").read_text()
    current, named, missing = None, 0, []
    for m in re.finditer(r"(tests/[\w/]+\.py)?::(\w+)|`(tests/[\w/]+\.py)`", text):
        if m.group(3):
            current = m.group(3)
            continue
        current = m.group(1) or current
        named += 1
        source = (ROOT / current).read_text()
        if not re.search(rf"^def {m.group(2)}\(", source, re.M):
            missing.append(f"{current}::{m.group(2)}")
    assert named > 40 and not missing, missing
