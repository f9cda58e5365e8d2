"""The `ember` command."""
import subprocess
import sys


def test_ember_info_lists_cpu_backend():
    out = subprocess.run([sys.executable, "-m", "ember.cli", "info"], capture_output=True,
                         text=True, timeout=60, env={"COLUMNS": "200", "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert "cpu" in out.stdout and "yes" in out.stdout and "native" in out.stdout
