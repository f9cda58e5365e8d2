"""The backend registry through the real entry-point path, in subprocesses.

Each test writes a tiny distribution (``*.dist-info`` with ``entry_points.txt``) and its module
into a temporary directory, puts it on PYTHONPATH, and imports ember in a fresh interpreter.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest


def make_dist(root, name, entry_points, modules):
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[ember.backends]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    for mod, source in modules.items():
        (root / f"{mod}.py").write_text(textwrap.dedent(source))


def run(code, path, **env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    full_env.update(PYTHONPATH=str(path), **env)
    out = subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(code)],
                         capture_output=True, text=True, env=full_env, timeout=120)
    return out


TOY = '''
import numpy as np
from ember.kit import ArrayBackend
from ember.kit.copy import register as register_copies
from ember.kit.factories import register as register_factories
from ember.runtime import hookimpl

class Toy(ArrayBackend):
    name = "toy"
    cpu_fallback = True
    special = None

    def __init__(self):
        super().__init__()
        register_copies(self)
        register_factories(self)

@hookimpl
def ember_register_backends(registry):
    registry.add(Toy())
'''

BROKEN = "raise ImportError('libfoo.so: cannot open shared object file')\n"

UNAVAILABLE = '''
from ember.runtime import Backend, hookimpl

class NoDevice(Backend):
    name = "nodev"
    def is_available(self):
        return False
    def unavailable_reason(self):
        return "no nodev device found (driver 0 devices)"

@hookimpl
def ember_register_backends(registry):
    registry.add(NoDevice())
'''


@pytest.fixture
def plugins(tmp_path):
    make_dist(tmp_path, "ember_toy", {"toy": "toy_mod"}, {"toy_mod": TOY})
    make_dist(tmp_path, "ember_broken", {"broken": "broken_mod"}, {"broken_mod": BROKEN})
    make_dist(tmp_path, "ember_nodev", {"nodev": "nodev_mod"}, {"nodev_mod": UNAVAILABLE})
    return tmp_path


def test_import_is_lazy(plugins):
    out = run('''
        import sys, json
        import ember
        before = {m: m in sys.modules for m in ("cupy", "pyopencl", "ember_cpu", "toy_mod",
                                                 "broken_mod")}
        ember.ones(2)
        after = "ember_cpu" in sys.modules
        print(json.dumps([before, after, sorted(ember._registry.names())]))
    ''', plugins)
    assert out.returncode == 0, out.stderr
    before, after, names = json.loads(out.stdout.strip().splitlines()[-1])
    assert before == {"cupy": False, "pyopencl": False, "ember_cpu": False, "toy_mod": False,
                      "broken_mod": False}
    assert after is True
    assert {"cpu", "toy", "broken", "nodev"} <= set(names)


def test_third_party_backend_through_entry_point(plugins):
    out = run('''
        import warnings, json
        import ember
        x = ember.arange(4.0).to("toy")
        y = (x * 2 + 1).cpu()                 # mul/add run on the CPU fallback
        print(json.dumps([str(x.device), x.is_toy, hasattr(ember.Tensor, "toy"),
                          ember.toy.is_available(), ember.toy.device_count(), y.tolist(),
                          str(ember.zeros(2, device="toy").device)]))
    ''', plugins)
    assert out.returncode == 0, out.stderr
    device, is_toy, has_method, available, count, values, zeros_dev = json.loads(
        out.stdout.strip().splitlines()[-1])
    assert (device, is_toy, has_method, available, count) == ("toy:0", True, True, True, 1)
    assert values == [1.0, 3.0, 5.0, 7.0]
    assert zeros_dev == "toy:0"
    assert "op 'mul' has no kernel for backend 'toy'" in out.stderr  # the one-time warning


def test_broken_plugin_is_a_warning_and_an_unavailable_backend(plugins):
    out = run('''
        import json
        import ember
        err = None
        try:
            ember.ones(2, device="broken")
        except RuntimeError as e:
            err = str(e)
        print(json.dumps([ember.broken.is_available(), ember.broken.unavailable_reason(),
                          str(ember.device("broken:0")), err]))
    ''', plugins)
    assert out.returncode == 0, out.stderr
    available, reason, parsed, err = json.loads(out.stdout.strip().splitlines()[-1])
    assert available is False
    assert "libfoo.so" in reason and "broken_mod" in reason
    assert parsed == "broken:0"
    assert "backend 'broken' is unavailable" in err and "libfoo.so" in err
    assert "RuntimeWarning" in out.stderr and "backend 'broken' is unavailable" in out.stderr


def test_device_init_failure_reports_reason(plugins):
    out = run('''
        import json
        import ember
        try:
            ember.ones(1, device="nodev")
            err = None
        except RuntimeError as e:
            err = str(e)
        print(json.dumps([ember.nodev.is_available(), ember.nodev.device_count(), err]))
    ''', plugins)
    assert out.returncode == 0, out.stderr
    available, count, err = json.loads(out.stdout.strip().splitlines()[-1])
    assert (available, count) == (False, 0)
    assert "no nodev device found" in err


def test_ember_backends_restricts_orders_and_raises(plugins):
    ok = run('''
        import ember
        print(ember._registry.names())
        ember.ones(1, device="toy")
    ''', plugins, EMBER_BACKENDS="toy")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip().splitlines()[-1] == "['cpu', 'toy']"
    bad = run("import ember", plugins, EMBER_BACKENDS="toy,broken")
    assert bad.returncode != 0
    assert "backend 'broken'" in bad.stderr and "libfoo.so" in bad.stderr
    missing = run("import ember", plugins, EMBER_BACKENDS="nosuch")
    assert missing.returncode != 0 and "EMBER_BACKENDS names nosuch" in missing.stderr


def test_disable_plugin_autoload_reads_no_entry_points(plugins):
    out = run('''
        import ember
        print(ember._registry.names(), ember.ones(2).tolist())
        try:
            ember.device("toy")
        except RuntimeError as e:
            print("refused:", e)
    ''', plugins, EMBER_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "['cpu'] [1.0, 1.0]"
    assert lines[1].startswith("refused: Expected one of cpu, ")  # then PyTorch's types
    assert lines[1].endswith("device type at start of device string: toy")


def test_backend_order_does_not_depend_on_install_order(tmp_path):
    # "aaa" sorts before "cpu" and is on PYTHONPATH, so its distribution is listed before
    # ember's own: the registry still puts the reference and the built-in backends first and
    # the plug-ins by name, so the current accelerator never depends on site-packages order
    make_dist(tmp_path, "aaa_first", {"zzz": "toy_mod", "aaa": "toy_mod"}, {"toy_mod": TOY})
    out = run("import ember; print(ember._registry.names())", tmp_path)
    assert out.returncode == 0, out.stderr
    names = eval(out.stdout.strip().splitlines()[-1])
    builtin = [n for n in names if n in ("cpu", "cuda", "opencl")]
    assert names[0] == "cpu" and names[:len(builtin)] == builtin, names
    rest = names[len(builtin):]
    assert rest == sorted(rest) and {"aaa", "zzz"} <= set(rest), names
