"""``bench/gpu_check.sh`` without a GPU: the dry run stops cleanly at "no GPU" (exit 3, a
summary, no traceback) well inside its budget, and the pieces it relies on on a fresh machine
work here -- the by-hand install without setuptools, the GPU tests' own runner without pytest,
``bench_cuda.py`` refusing to run, the demo's offline dataset."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import ember  # noqa: E402

pytestmark = pytest.mark.skipif(ember.cuda.is_available(),
                                reason="a GPU is here: run bench/gpu_check.sh itself")


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                    reason="needs bash and coreutils' timeout")
def test_the_dry_run_stops_cleanly_at_no_gpu(tmp_path):
    out = tmp_path / "results"
    env = dict(os.environ, EMBER_GPU_CHECK_INSTALL="0", PYTHON=sys.executable)
    t = time.monotonic()
    r = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh"), str(out)], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 3, r.stdout + r.stderr
    assert time.monotonic() - t < 200
    summary = (out / "summary.txt").read_text()
    assert "no GPU: " in summary and "stopped: no GPU (exit 3)" in summary
    assert "env" in summary and "probe" in summary
    assert "Traceback" not in (out / "probe.log").read_text()
    assert not (out / "tests.log").exists()        # nothing ran past the probe


def test_the_by_hand_install_writes_what_pip_would(tmp_path):
    import gpu_check_tools
    from importlib.metadata import distributions
    info = gpu_check_tools.manual_install(ROOT, tmp_path)
    pth = (tmp_path / "__editable__ember.pth").read_text().split()
    assert all(Path(p).is_dir() for p in pth) and str(ROOT / "backends" / "cuda") in pth
    dist = next(d for d in distributions(path=[str(tmp_path)]) if d.metadata["Name"] == "ember")
    eps = {(e.group, e.name): e.value for e in dist.entry_points}
    assert eps[("ember.backends", "cuda")] == "ember_cuda"
    assert eps[("console_scripts", "ember-conformance")] == "ember_conformance.cli:main"
    assert info.name.startswith("ember-")


def test_the_gpu_tests_and_the_benchmark_say_no_gpu_without_pytest():
    for script in (ROOT / "tests" / "test_cuda_gpu.py", ROOT / "bench" / "bench_cuda.py"):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT / "bench")))
        assert r.returncode == 3 and r.stdout.startswith("no GPU"), (script, r.stdout, r.stderr)


def test_the_demo_trains_on_synthetic_digits_without_scikit_learn():
    from ember import demo
    images, labels = demo.synthetic_digits(seed=0)
    assert images.shape == (1797, 8, 8) and set(np.unique(labels)) == set(range(10))
    x = (images.astype(np.float32) / 16.0)[:, None]
    data = (x[:1400], labels[:1400].astype(np.int64), x[1400:], labels[1400:].astype(np.int64))
    r = demo.train_on("cpu", data, epochs=3, batch_size=64, lr=0.05, seed=0)
    assert r.error is None and r.test_accuracy > 0.8, r
