"""examples/compile_and_export.py runs: the compiled step tracks its eager twin, the ONNX model
matches ember (when onnxruntime is installed), the GCN trains on a sparse graph."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

PATH = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "compile_and_export.py")


def test_example_runs_and_checks_itself():
    pytest.importorskip("onnx")
    out = subprocess.run([sys.executable, PATH], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "parameter drift" in out.stdout and "GCN on a 50-node ring" in out.stdout
    loss = float(out.stdout.split("GCN on a 50-node ring")[1].split("loss")[1])
    assert loss < 0.69      # better than chance on two balanced classes
