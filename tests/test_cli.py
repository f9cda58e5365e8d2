"""The `ember` command."""
import subprocess
import sys

import pytest

from ember import cli
from ember.runtime import Backend
from ember.runtime.registry import registry


def _ember(*args):
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], capture_output=True,
                          text=True, timeout=60, env={"COLUMNS": "200", "PATH": ""})


def test_ember_info_lists_cpu_backend():
    out = _ember("info")
    assert out.returncode == 0, out.stderr
    assert "cpu" in out.stdout and "yes" in out.stdout and "native" in out.stdout


def test_version_flag_prints_the_installed_version():
    import ember
    out = _ember("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"ember {ember.__version__}"


def test_bare_ember_prints_the_help():
    out = _ember()
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: ember")
    assert "info" in out.stdout and "demo" in out.stdout and "--version" in out.stdout


def test_unknown_command_is_an_argparse_error():
    out = _ember("nonsense")
    assert out.returncode == 2 and "invalid choice: 'nonsense'" in out.stderr


class _HalfBackend(Backend):
    """A backend that saw two devices and uses one: what `ember info` must show."""
    name = "halfdev"

    def is_available(self):
        return True

    def device_count(self):
        return 1

    def skipped_devices(self):
        return [("Vendor X: old accelerator", "its compiler is too old")]


@pytest.fixture
def halfdev():
    registry.add(_HalfBackend())
    yield
    registry.remove("halfdev")


def test_info_lists_devices_a_backend_left_out_with_the_reason(halfdev, capsys):
    assert ("halfdev", "Vendor X: old accelerator", "its compiler is too old") in \
        cli._left_out_rows()
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "devices left out" in out and "old accelerator" in out and "too old" in out


def test_info_op_lists_facets_and_kernels_with_their_locations():
    from ember.dispatch.describe import describe
    rows = {facet: (value, where) for facet, value, where in describe("mul")}
    assert rows["schema"][0] == "mul(Tensor self, Tensor other, dtype compute) -> Tensor"
    assert rows["schema"][1].endswith("ops/elementwise/binary.py:" + rows["schema"][1].split(":")[-1])
    assert "MulBackward0" in rows["derivative"][0]
    assert rows["derivative"][1].split(":")[0].endswith("ops/elementwise/binary.py")
    assert rows["kernel: cpu"][1].split(":")[0].endswith("kit/elementwise.py")
    nondiff = {facet: value for facet, value, _ in describe("eq")}
    assert nondiff["derivative"].startswith("not differentiable")
    inplace = {facet: value for facet, value, _ in describe("mul_")}
    assert inplace["functional twin"] == "mul"


def test_info_op_runs_from_the_command_line_and_rejects_unknown_ops():
    out = subprocess.run([sys.executable, "-m", "ember.cli", "info", "--op", "add"],
                         capture_output=True, text=True, env={**__import__("os").environ,
                                                              "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    assert "add(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor" in out.stdout
    assert "AddBackward0" in out.stdout and "kernel: cpu" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "ember.cli", "info", "--op", "mull"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no op named 'mull'" in bad.stderr
