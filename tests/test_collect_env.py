"""``python -m ember.utils.collect_env``: a bug report's environment, every section present."""
import subprocess
import sys

import numpy as np

import ember


def test_collect_env_prints_every_section():
    out = subprocess.run([sys.executable, "-m", "ember.utils.collect_env"], capture_output=True,
                         text=True, timeout=120, env={"PATH": "", "OPENBLAS_CORETYPE": "Haswell",
                                                      "EMBER_LOGS": "registry"})
    assert out.returncode == 0, out.stderr
    sections = [ln[:-1] for ln in out.stdout.splitlines() if not ln.startswith(" ")]
    assert sections == ["ember", "Python", "OS", "CPU", "numpy / scipy", "BLAS", "environment",
                        "backends", "backend entry points", "OpenCL", "CUDA", "MPI", "torch",
                        "other"]
    text = out.stdout
    assert f"  {ember.__version__} at " in text and f"numpy {np.__version__}" in text
    assert "  OPENBLAS_CORETYPE=Haswell" in text and "  EMBER_LOGS=registry" in text
    assert "  cpu: available — cpu:0" in text and "  cpu = ember_cpu (ember " in text
    for name in ember._registry.names():   # each backend, with its reason when unavailable
        reason = ember._registry.unavailable_reason(name)
        assert (f"  {name}: unavailable — {reason}" if reason else f"  {name}: available") \
            in text
