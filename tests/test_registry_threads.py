"""Thread safety of first use: a fresh process whose first ops on a device come from 4 threads
at once. Before the registry locked lazy loading, 3 of the 4 threads got "unknown device type
'cpu'" (the entry point was taken while the plug-in was still registering).

Every round is a new interpreter (the race only exists before a backend is loaded); the threads
switch as often as the interpreter allows, so the window is hit every time it exists.
"""
import json

import pytest

import ember
from helpers_plugins import add_repo_plugin, make_dist, run

RACE = '''
import json, sys, threading
sys.setswitchinterval(1e-6)
import ember
from ember.runtime import registry

dev = sys.argv[1]
barrier = threading.Barrier(4)
out = [None] * 4

def work(i):
    try:
        barrier.wait()
        x = ember.ones(3, device=dev) + i
        out[i] = x.cpu().tolist() if registry.get(x.device.type).has_data else list(x.shape)
    except BaseException as e:
        out[i] = f"{type(e).__name__}: {e}"

threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(out))
'''

TOY = '''
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

BACKENDS = ["cpu", "opencl", "toy", "openreg", "meta"]


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    root = tmp_path_factory.mktemp("race")
    make_dist(root, "ember_toy", {"toy": "toy_mod"}, {"toy_mod": TOY})
    extra = [add_repo_plugin(root, name) for name in ("openreg", "meta")]
    return root, extra


def _expected(dev):
    return [[3] if dev == "meta" else [1.0 + i] * 3 for i in range(4)]


def _race(plugins, dev, rounds):
    if dev == "opencl" and not ember.opencl.is_available():
        pytest.skip(f"OpenCL unavailable: {ember.opencl.unavailable_reason()}")
    root, extra = plugins
    for r in range(rounds):
        out = run(RACE, root, dev, extra_paths=extra)
        assert out.returncode == 0, out.stderr
        results = json.loads(out.stdout.strip().splitlines()[-1])
        assert results == _expected(dev), f"round {r}: {results}"


@pytest.mark.parametrize("dev", BACKENDS)
def test_first_use_from_four_threads(plugins, dev):
    _race(plugins, dev, rounds=2)


@pytest.mark.slow
@pytest.mark.parametrize("dev", BACKENDS)
def test_first_use_from_four_threads_many_rounds(plugins, dev):
    _race(plugins, dev, rounds=10)
