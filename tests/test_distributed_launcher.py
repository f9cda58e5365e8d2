"""ember-run / python -m ember.distributed.run on real processes: the launcher variables, -m,
exit codes, the console script."""
import os
import shutil
import subprocess
import sys

import pytest

from helpers_dist import requires_mpi, run_job

pytestmark = [pytest.mark.slow, requires_mpi]

_SCRIPT = """
import os, sys
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMP_NUM_THREADS")
print("ENV", __name__, " ".join(os.environ.get(k, "-") for k in keys), sys.argv[1:], flush=True)
if len(sys.argv) > 1 and sys.argv[1] == "exit3" and os.environ["RANK"] == "1":
    sys.exit(3)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "show_env.py"
    path.write_text(_SCRIPT)
    return str(path)


def test_launcher_sets_torchrun_variables(script):
    rc, out, err, _ = run_job(3, script, "a", "--b", timeout=120)
    assert rc == 0, err
    lines = sorted(ln for ln in out.splitlines() if ln.startswith("ENV"))
    assert lines == [f"ENV __main__ {r} 3 {r} 3 1 ['a', '--b']" for r in range(3)]


def test_nonzero_exit_of_one_rank_is_the_jobs_exit_code(script):
    rc, out, err, seconds = run_job(2, script, "exit3", timeout=120)
    assert rc == 3
    assert seconds < 30


def test_module_mode_and_console_script(script, tmp_path):
    pkg = tmp_path / "pkgdemo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text(_SCRIPT)
    exe = shutil.which("ember-run", path=os.path.dirname(sys.executable)) or \
        shutil.which("ember-run")
    assert exe, "the ember-run console script is installed with the package"
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([exe, "-n", "2", "-m", "pkgdemo.main", "x"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert sorted(ln for ln in out.stdout.splitlines() if ln.startswith("ENV")) == \
        [f"ENV __main__ {r} 2 {r} 2 1 ['x']" for r in range(2)]
