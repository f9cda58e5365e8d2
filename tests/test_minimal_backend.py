"""examples/minimal_backend: the backend template, as its author gets it.

pip-installed into a fresh venv (from a copy, ``--no-build-isolation``, like the plug-ins'
tests), driven through its entry point, and run through the whole conformance suite, which
must report no failure.
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

TEMPLATE = Path(__file__).resolve().parents[1] / "examples" / "minimal_backend"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv that sees the project's packages, with ember-minimal pip-installed."""
    root = tmp_path_factory.mktemp("minimal")
    env_dir = root / "venv"
    # --without-pip: the venv's bundled setuptools would shadow the project's
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"], check=True,
                          capture_output=True, text=True).stdout.strip()
    # ember, numpy & co. come from the project venv (a .pth line that starts with import runs)
    Path(site, "_ember_project.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    src = root / "minimal_backend"  # build from a copy: the build leaves files next to sources
    shutil.copytree(TEMPLATE, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                 "__pycache__"))
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    r = subprocess.run(pip + ["install", "--no-deps", "--no-build-isolation", "--no-index",
                              str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return {"python": str(python), "pip": pip}


def run(venv, code, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    full.update(env)
    return subprocess.run([venv["python"], "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full, timeout=600)


def test_installed_template_works_through_its_entry_point(venv):
    out = run(venv, """
        import json, warnings
        import numpy as np
        import ember
        assert "ember_minimal" not in __import__("sys").modules      # imported on first use
        x = ember.tensor(np.arange(6.0).reshape(2, 3), device="minimal")
        with warnings.catch_warnings():
            warnings.simplefilter("error")                             # native kernels only
            y = ((x * 2 + 1) @ x.t()).sum(1)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            z = x.exp()                                                # the CPU fallback
        print(json.dumps([str(x.device), ember.minimal.is_available(), y.cpu().tolist(),
                          z.device.type, [str(w.category.__name__) for w in seen]]))
    """)
    assert out.returncode == 0, out.stdout + out.stderr
    device, available, y, z_device, warned = json.loads(out.stdout.strip().splitlines()[-1])
    a = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    expected = [sum(sum((2 * a[i][k] + 1) * a[j][k] for k in range(3)) for j in range(2))
                for i in range(2)]
    assert (device, available, y, z_device) == ("minimal:0", True, expected, "minimal")
    assert warned == ["CPUFallbackWarning"]


def test_installed_template_passes_the_conformance_suite(venv, tmp_path):
    report = tmp_path / "minimal.json"
    out = run(venv, f"""
        import sys
        from ember_conformance.cli import main
        sys.exit(main(["--backend", "minimal", "--json", {str(report)!r}]))
    """, COLUMNS="200")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    summary = json.loads(report.read_text())["summary"]
    cells = summary.get("cells", summary)  # op x dtype cells (older runners: flat counts)
    assert cells.get("fail", 0) == 0 and cells.get("pass", 0) > 0, summary
    assert "op entries" in out.stdout
