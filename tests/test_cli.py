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


def test_info_op_lists_the_lowering_facets():
    from ember.dispatch.describe import describe

    def rows(name):
        return {facet: (value, where) for facet, value, where in describe(name)}
    exp = rows("exp")
    assert exp["pointwise"] == ("call('exp')", exp["pointwise"][1])
    assert exp["pointwise"][1].split(":")[0].endswith("ops/_lowering.py")
    assert exp["onnx"][0] == "onnx_unary('Exp')"
    add = rows("add")
    assert add["pointwise"][1].split(":")[0].endswith("ops/elementwise/binary.py")
    assert "folded when its inputs are constants" in add["onnx"][0]
    assert "predicate" in rows("gt")["pointwise"][0]
    assert rows("_foreach_mul_")["applies"][0] == "mul at each index of its lists"
    assert rows("acos")["pointwise"][0].startswith("none: stays op by op")
    assert rows("erfinv")["onnx"][0] == "none: ember.onnx.export refuses it"
    assert rows("mul_")["pointwise"][0] == "none"        # in-place: never fused


def test_info_missing_lowering_lists_what_compile_and_export_cannot_lower(capsys):
    import json
    import ember
    assert cli.main(["info", "--missing-lowering", "--json"]) == 0
    missing = json.loads(capsys.readouterr().out)
    compile_ = {op: fam for fam, ops in missing["compile"].items() for op in ops}
    export = {op: fam for fam, ops in missing["export"].items() for op in ops}
    assert compile_["acos"] == "elementwise.unary" and compile_["atan2"] == "elementwise.binary"
    assert "exp" not in compile_ and "add" not in compile_ and "add_" not in compile_
    assert export["erfinv"] == "elementwise.unary" and export["convolution_backward"] == "nn.conv"
    assert "exp" not in export and "convolution" not in export
    # what it says is what compile does: each listed unary op splits a chain, a facet fuses it
    compile_ops = set(compile_)

    def fused_ops(fn, x):
        compiled = ember.compile(fn)
        compiled(x)
        (entry,) = compiled.cache.values()
        return [n.op.name for n in entry.lowered.nodes]
    x = ember.rand(64) * 0.5 + 0.25
    for name in missing["compile"]["elementwise.unary"]:
        fn = getattr(ember, name, None)
        if fn is None or name in ("bitwise_not", "logical_not") or name.startswith("is"):
            continue
        nodes = fused_ops(lambda x, fn=fn: fn(x * 0.5) + 1.0, x)
        assert name in nodes and not any(n.startswith("fused[") for n in nodes), (name, nodes)
    if __import__("ember_cpu.fusion", fromlist=["compiler"]).compiler() is not None:
        for name in ("exp", "sigmoid"):
            assert name not in compile_ops
            assert fused_ops(lambda x, fn=getattr(ember, name): fn(x * 0.5) + 1.0, x) == \
                [f"fused[mul,{name},add]"]
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError, match="erfinv"):
        ember.onnx.export(lambda x: ember.erfinv(x), (x,), __import__("io").BytesIO())
    # the plain listing: one line per family under each heading
    assert cli.main(["info", "--missing-lowering"]) == 0
    text = capsys.readouterr().out
    assert "compiled graphs run them op by op" in text and "export refuses them" in text
    assert any(line.strip().startswith("elementwise.unary:") and " acos," in line
               for line in text.splitlines())


def test_info_op_runs_from_the_command_line_and_rejects_unknown_ops():
    out = subprocess.run([sys.executable, "-m", "ember.cli", "info", "--op", "add"],
                         capture_output=True, text=True, env={**__import__("os").environ,
                                                              "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    assert "add(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor" in out.stdout
    assert "AddBackward0" in out.stdout and "kernel: cpu" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "ember.cli", "info", "--op", "mull"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no op or public function named 'mull'" in bad.stderr
    assert "did you mean: mul" in bad.stderr          # difflib's near misses


@pytest.mark.parametrize("name, canonical, op", [
    ("F.cross_entropy", "ember.nn.functional.cross_entropy", "nll_loss_forward"),
    ("torch.nn.functional.cross_entropy", "ember.nn.functional.cross_entropy",
     "nll_loss_forward"),
    ("conv2d", "conv2d", "convolution"),
    ("linear", "linear", "addmm"),
    ("Tensor.add_", "ember.Tensor.add_", "add_"),
    ("Tensor.sum", "ember.Tensor.sum", "sum")])
def test_info_op_accepts_public_names_and_lists_the_ops_they_dispatch(name, canonical, op,
                                                                      capsys):
    assert cli.main(["info", "--op", name]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{name} is ") and canonical in out.splitlines()[0]
    assert f"op {op}\n" in out                        # that op's facets follow
    import json
    assert cli.main(["info", "--op", name, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert op in doc["public"]["ops"] and op in doc["ops"]


def test_info_op_suggests_public_names_for_a_typo(capsys):
    assert cli.main(["info", "--op", "F.corss_entropy"]) == 2
    assert "did you mean: cross_entropy" in capsys.readouterr().err


class _HintBackend(Backend):
    """Unavailable, with install advice in square brackets (rich markup's syntax)."""
    name = "hintdev"

    def is_available(self):
        return False

    def unavailable_reason(self):
        return "pyopencl is missing: pip install 'ember[opencl]' and [bold]retry[/bold]"


@pytest.fixture
def hintdev():
    registry.add(_HintBackend())
    yield
    registry.remove("hintdev")


REASON = "pyopencl is missing: pip install 'ember[opencl]' and [bold]retry[/bold]"


def test_info_prints_reasons_literally_in_a_terminal(hintdev, monkeypatch):
    import io

    from rich.console import Console
    buf = io.StringIO()
    monkeypatch.setattr(cli, "_console", lambda: Console(file=buf, force_terminal=True,
                                                         width=400, color_system=None))
    assert cli.main(["info"]) == 0
    assert REASON in buf.getvalue()


def test_info_is_plain_lines_when_piped_and_json_on_request(hintdev, capsys):
    assert cli.main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = lines.index("hintdev")
    assert lines[i + 1:i + 3] == ["  available: no", f"  reason:    {REASON}"]
    assert not any("│" in ln for ln in lines)          # no table borders, no wrapping
    import json
    assert cli.main(["info", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    entry = next(b for b in doc["backends"] if b["name"] == "hintdev")
    assert entry == {"name": "hintdev", "available": False, "reason": REASON, "devices": [],
                     "coverage": None}
    cpu = next(b for b in doc["backends"] if b["name"] == "cpu")
    assert cpu["available"] and cpu["devices"][0]["device"] == "cpu:0"
    assert cpu["coverage"]["native"] > 300


def test_version_does_not_import_ember():
    # core/ on the path: an editable install made before ember_cli existed does not map it
    import os
    core = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")
    out = subprocess.run([sys.executable, "-c", "import sys, ember_cli; ember_cli.main("
                          "['--version']); print('ember' in sys.modules)"],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": core})
    import ember
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [f"ember {ember.__version__}", "False"]


def test_demo_help_documents_every_flag_with_its_default(capsys):
    with pytest.raises(SystemExit):
        cli.main(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag, default in [("--backends", "every available backend"), ("--epochs", "8"),
                          ("--batch-size", "64"), ("--lr", "0.05"), ("--seed", "0")]:
        assert flag in out and f"default: {default}" in out, (flag, out)
