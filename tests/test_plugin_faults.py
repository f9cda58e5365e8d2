"""Plug-in fault isolation: a broken plug-in never breaks ``import ember``, ``ember info`` or the
other backends. The broken backend is unavailable with one reason, the same everywhere
(``ember.<name>.is_available()``, ``unavailable_reason()``, the error of using it, ``ember info``),
and kernels that return the wrong thing fail naming the backend, the kernel and what was
expected.

The fake plug-ins are real distributions on PYTHONPATH (``*.dist-info`` with entry points),
imported by ``import ember`` in a fresh interpreter.
"""
import json

import numpy as np
import pytest

import ember
from ember.runtime import KernelContractError, registry, set_kernel_checks
from helpers_plugins import PLUGIN_SOURCES, make_dist, run

AVAIL_RAISES = '''
from ember.runtime import Backend, hookimpl

class Exploding(Backend):
    name = "exploding"
    def is_available(self):
        raise RuntimeError("driver exploded while probing")

@hookimpl
def ember_register_backends(registry):
    registry.add(Exploding())
'''

EXITS = "import sys\nsys.exit(3)\n"

REFUSED = '''
from ember.runtime import Backend, hookimpl

class Greedy(Backend):
    name = "greedy"

@hookimpl
def ember_register_backends(registry):
    registry.add(Greedy())

@hookimpl
def ember_register_ops(library):
    library.impl("ember::add", lambda *args: None, "greedy")   # its own device: allowed
    library.impl("ember::add", lambda *args: None, "cpu")      # another backend's: refused
'''

HOOK_RAISES = '''
from ember.runtime import Backend, hookimpl

class Half(Backend):
    name = "halfreg"

class Other(Backend):
    name = "halfreg_other"

@hookimpl
def ember_register_backends(registry):
    registry.add(Half())
    registry.add(Other())
    raise ValueError("firmware table is corrupt")
'''

# a working backend (the minimal template) whose kernels return the wrong things
BAD_KERNELS = '''
import numpy as np
import ember
from ember.runtime import hookimpl
from ember_minimal.backend import MinimalBackend

class BadKernels(MinimalBackend):
    name = "badk"

    def __init__(self):
        super().__init__()
        k = self.kernels
        k.register("neg", lambda x, compute: self.native(x) * -1)                # numpy array
        k.register("mul", lambda a, b, compute: self.new_tensor((1,), compute, a.device))
        k.register("sum", lambda x, dim, keepdim, dtype: self.new_tensor((), ember.float16,
                                                                           x.device))
        k.register("matmul", lambda a, b: ember.zeros(a.shape[0], b.shape[1]))   # on the CPU
        k.register("max_dim", lambda x, dim, keepdim: self.new_tensor((), x.dtype, x.device))

@hookimpl
def ember_register_backends(registry):
    registry.add(BadKernels())
'''

BROKEN = {"exploding": "driver exploded while probing", "exits": "SystemExit: 3",
          "greedy": "may only register kernels for ['greedy'], not 'cpu'",
          "halfreg": "firmware table is corrupt", "halfreg_other": "firmware table is corrupt"}


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    make_dist(root, "ember_exploding", {"exploding": "exploding_mod"},
              {"exploding_mod": AVAIL_RAISES})
    make_dist(root, "ember_exits", {"exits": "exits_mod"}, {"exits_mod": EXITS})
    make_dist(root, "ember_greedy", {"greedy": "greedy_mod"}, {"greedy_mod": REFUSED})
    make_dist(root, "ember_halfreg", {"halfreg": "half_mod"}, {"half_mod": HOOK_RAISES})
    make_dist(root, "ember_badk", {"badk": "badk_mod"}, {"badk_mod": BAD_KERNELS})
    make_dist(root, "ember_minimal_src", {"minimal": "ember_minimal"})
    return root, [PLUGIN_SOURCES["minimal"]]


def _last_json(out):
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_broken_plugins_are_unavailable_with_one_reason(plugins):
    root, extra = plugins
    report = _last_json(run('''
        import json
        import ember
        from ember.runtime import registry
        # "halfreg_other" is only known once "halfreg" has loaded (its plug-in added it): load first
        ember.halfreg.is_available()
        out = {}
        for name in ("exploding", "exits", "greedy", "halfreg", "halfreg_other"):
            mod = getattr(ember, name)
            try:
                ember.ones(1, device=name)
                error = None
            except RuntimeError as e:
                error = str(e)
            out[name] = [mod.is_available(), mod.unavailable_reason(),
                         registry.unavailable_reason(name), error, mod.device_count(),
                         registry.loaded(name) is None]
        cpu_add = ember.runtime.registry.get("cpu").kernels.get("add")
        out["cpu"] = [(ember.ones(2) + 1).tolist(),
                      ember.runtime.checks.kernel_label(cpu_add)]
        out["minimal"] = (ember.ones(2, device="minimal") * 3).cpu().tolist()
        print(json.dumps(out))
    ''', root, extra_paths=extra))
    for name, cause in BROKEN.items():
        available, reason, registry_reason, error, count, gone = report[name]
        assert available is False and count == 0 and gone, (name, report[name])
        assert cause in reason, (name, reason)
        assert reason == registry_reason and reason in error, (name, reason, error)
    assert report["cpu"] == [[2.0, 2.0], "ember.kit.elementwise.add_sub"]  # greedy's never landed
    assert report["minimal"] == [3.0, 3.0]


def test_ember_info_lists_broken_plugins(plugins):
    root, extra = plugins
    out = run("from ember.cli import main; main(['info'])", root, extra_paths=extra)
    assert out.returncode == 0, out.stdout + out.stderr
    # piped: one block per backend, "  key: value" lines under its name
    blocks, current = {}, None
    for line in out.stdout.splitlines()[1:]:
        if line and not line.startswith(" "):
            current = blocks.setdefault(line, {})
        elif current is not None and ":" in line:
            key, _, value = line.strip().partition(":")
            current[key] = value.strip()
    for name, cause in (("exploding", "driver exploded"), ("exits", "SystemExit"),
                        ("greedy", "may only register kernels for"),
                        ("halfreg", "firmware table is corrupt")):
        assert blocks[name]["available"] == "no" and cause in blocks[name]["reason"], \
            (name, out.stdout)
    assert blocks["cpu"]["available"] == "yes", out.stdout


def test_strict_mode_names_the_failure_instead_of_exiting(plugins):
    root, extra = plugins
    out = run("import ember", root, extra_paths=extra, EMBER_BACKENDS="exits")
    assert out.returncode == 1 and "BackendUnavailable" in out.stderr
    assert "backend 'exits'" in out.stderr and "SystemExit: 3" in out.stderr


def test_wrong_kernel_outputs_name_kernel_backend_and_expectation(plugins):
    root, extra = plugins
    errors = _last_json(run('''
        import json
        import ember
        x = ember.ones(2, 3, device="badk")
        out = {}
        for what, call in (("neg", lambda: -x), ("mul", lambda: x * x),
                           ("sum", lambda: x.sum()), ("matmul", lambda: x @ x.t()),
                           ("max_dim", lambda: x.max(dim=1))):
            try:
                call()
                out[what] = None
            except ember.runtime.KernelContractError as e:
                out[what] = str(e)
        out["still works"] = [(x + 1).cpu().tolist(), ember.badk.is_available()]
        print(json.dumps(out))
    ''', root, extra_paths=extra))
    assert "badk kernel for 'neg'" in errors["neg"] and "numpy.ndarray" in errors["neg"]
    assert "expected a Tensor of shape [2, 3], dtype ember.float32 on badk:0" in errors["neg"]
    assert "shape [1] (expected [2, 3])" in errors["mul"]
    assert "dtype ember.float16 (expected ember.float32)" in errors["sum"]
    assert "device cpu (expected badk:0)" in errors["matmul"]
    assert "badk_mod" in errors["matmul"]  # the kernel's module: where to look
    assert "returned a Tensor" in errors["max_dim"] and "2 outputs" in errors["max_dim"]
    assert errors["still works"] == [[[2.0] * 3] * 2, True]


@pytest.fixture
def wrong_cpu_neg():
    """The CPU's `neg` replaced by one that returns the wrong dtype (restored afterwards)."""
    table = registry.get("cpu").kernels
    original = table.get("neg")
    table.register("neg", lambda x, compute: original(x, compute).to(ember.float64))
    yield
    table.register("neg", original)
    set_kernel_checks(False)


def test_builtin_kernels_are_checked_only_in_debug_mode(wrong_cpu_neg):
    x = ember.ones(3)
    assert (-x).dtype is ember.float64           # trusted: no check, no cost
    set_kernel_checks(True)
    with pytest.raises(KernelContractError, match=r"cpu kernel for 'neg' .*dtype "
                                                  r"ember.float64 \(expected ember.float32\)"):
        -x
    set_kernel_checks(False)
    assert (-x).dtype is ember.float64


def test_check_mode_from_the_environment_passes_correct_builtin_kernels(plugins):
    root, extra = plugins
    out = _last_json(run('''
        import json
        import numpy as np
        import ember
        from ember.runtime import KernelContractError, kernel_checks_enabled, registry
        x = ember.tensor(np.arange(12.0).reshape(3, 4))
        y = ((x * 2 + 1).exp().sum(1) @ ember.ones(3, dtype=ember.float64), x.max(dim=0),
             x.sort(1), x.t() @ x, x[1:, ::2].cumsum(0), ember.randn(2, 2))
        table = registry.get("cpu").kernels
        good = table.get("neg")
        table.register("neg", lambda x, compute: good(x[:1], compute))
        try:
            -x
            error = None
        except KernelContractError as e:
            error = str(e)
        print(json.dumps([kernel_checks_enabled(), y[1][0].tolist(), error]))
    ''', root, extra_paths=extra, EMBER_CHECK_KERNELS="1"))
    assert out[0] is True and out[1] == [8.0, 9.0, 10.0, 11.0]
    assert "cpu kernel for 'neg'" in out[2] and "shape [1, 4] (expected [3, 4])" in out[2]


def test_failed_hand_registration_leaves_no_backend(monkeypatch):
    from ember.runtime import Backend, hookimpl

    class Partial(Backend):
        name = "partialdev"

    class Plugin:
        @hookimpl
        def ember_register_backends(self, registry):
            registry.add(Partial())

        @hookimpl
        def ember_register_ops(self, library):
            library.impl("ember::add", lambda *a: None, "cpu")

    plugin = Plugin()
    with pytest.raises(RuntimeError, match="may only register kernels for"):
        registry.register_plugin(plugin, "partial")
    try:
        assert registry.loaded("partialdev") is None
        assert not registry.pm.is_registered(plugin)
        assert "may only register kernels" in registry.unavailable_reason("partialdev")
        assert not ember.partialdev.is_available()
        assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]
        assert np.array_equal(registry.get("cpu").kernels.get("add")(
            ember.ones(1), 1, 1, ember.float32).numpy(), [2.0])
    finally:
        registry.remove("partialdev")
    assert not registry.is_known("partialdev")
