"""ember's loggers and EMBER_LOGS (TORCH_LOGS's syntax): what each component says, that nothing
logs per op, and that the levels compose like torch's."""
import logging
import os
import subprocess
import sys
import textwrap

import pytest

import ember
from ember import _logging


def _run(code, logs):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    env["EMBER_LOGS"] = logs
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=180, env=env)


def test_parse_follows_torch_logs_syntax():
    assert _logging.parse("+dispatch,recompiles") == {"dispatch": logging.DEBUG,
                                                      "recompiles": logging.INFO}
    assert _logging.parse("-registry") == {"registry": logging.ERROR}
    assert set(_logging.parse("all")) == set(_logging.COMPONENTS)
    with pytest.raises(ValueError, match="unknown log name 'nosuch'.*valid names: all, "
                                         "registry, dispatch"):
        _logging.parse("registry,nosuch")


def test_components_log_once_per_event():
    out = _run("""
        import ember
        for _ in range(3):
            y = ember.ones(2) + 1               # one resolution, then cache hits: one line
        f = ember.compile(lambda x: (x.sin() * 2).cos(), dynamic=False)
        f(ember.ones(8)); f(ember.ones(8)); f(ember.ones(4))
        def g(x):
            return x * 2 if x.sum() > 0 else x
        ember.compile(g)(ember.ones(3))
    """, "registry,+dispatch,+kernels,compile,recompiles,+guards,graph_breaks")
    assert out.returncode == 0, out.stderr
    err = out.stderr
    assert "[ember.registry] INFO: loaded backend 'cpu' from ember_cpu" in err
    assert "[ember.registry] INFO: backend 'cpu' is available" in err
    assert err.count("[ember.dispatch] DEBUG: add: keys cpu -> ") == 1
    assert "[ember.compile] INFO: <lambda>: captured 3 ops (case 1)" in err
    assert ("[ember.compile.recompiles] INFO: <lambda>: recompiling (case 2 of at most 8): "
            "shape of x0 changed: (8,) -> (4,)") in err
    assert "[ember.compile.guards] DEBUG: <lambda>: guards of case 1:\n  x0: shape=(8,)" in err
    assert "[ember.compile.graph_breaks] INFO: g: graph break: " in err
    import shutil
    if shutil.which("gcc") or shutil.which("cc"):   # compiled now, or found from an earlier run
        assert ": compiled with " in err or ": found in the disk cache" in err, err


def test_fallback_and_plugin_failures_are_logged(tmp_path):
    out = _run("""
        import warnings
        import ember
        from ember.runtime import registry
        from ember.kit import ArrayBackend
        from ember.kit.copy import register as copies
        class Toy(ArrayBackend):
            name = "toylog"
            cpu_fallback = True
            special = None
            def __init__(self):
                super().__init__()
                copies(self)
        registry.add(Toy())
        warnings.simplefilter("ignore")
        x = ember.ones(2).to("toylog")
        (x.exp() + x.exp()).exp()
    """, "fallback")
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("[ember.fallback]")]
    assert lines[0] == "[ember.fallback] INFO: op 'exp' runs on the CPU fallback for backend " \
                       "'toylog'"
    assert len([ln for ln in lines if "'exp'" in ln]) == 1


def test_unset_logs_print_nothing_and_propagate_to_the_programs_handlers():
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    quiet = subprocess.run([sys.executable, "-c", "import ember; ember.ones(2) + 1"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""
    configured = subprocess.run(
        [sys.executable, "-c", "import logging; logging.basicConfig(level=logging.INFO); "
         "import ember; ember.ones(2) + 1"], capture_output=True, text=True, timeout=120,
        env=env)
    assert "INFO:ember.registry:loaded backend 'cpu'" in configured.stderr


def test_nothing_logs_on_the_per_op_path(monkeypatch):
    x = ember.ones(4, requires_grad=True)
    for _ in range(2):                    # resolve everything (the second adds into .grad)
        (x * 2 + 1).sum().backward()
    calls = []
    monkeypatch.setattr(logging.Logger, "isEnabledFor",
                        lambda self, level: calls.append(self.name) or False)
    monkeypatch.setattr(logging.Logger, "_log", lambda self, *a, **k: calls.append(self.name))
    for _ in range(20):
        (x * 2 + 1).sum().backward()
    assert calls == []


def test_set_logs_programmatic_form(capsys):
    root = logging.getLogger("ember")
    saved = (root.handlers[:], root.level, root.propagate,
             {n: logging.getLogger(n).level for n in _logging.COMPONENTS.values()})
    try:
        _logging.set_logs(dispatch=logging.DEBUG, recompiles=True)
        assert logging.getLogger("ember.dispatch").isEnabledFor(logging.DEBUG)
        assert logging.getLogger("ember.compile.recompiles").isEnabledFor(logging.INFO)
        assert not logging.getLogger("ember.registry").isEnabledFor(logging.INFO)
        with pytest.raises(ValueError, match="unknown log names"):
            _logging.set_logs(nosuch=True)
    finally:
        handlers, level, propagate, levels = saved
        for h in root.handlers[:]:
            if h not in handlers:
                root.removeHandler(h)
        root.setLevel(level)
        root.propagate = propagate
        for name, lvl in levels.items():
            logging.getLogger(name).setLevel(lvl)
        _logging._handler = None
