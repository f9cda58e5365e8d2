"""Device modules without their device behave like torch's CPU build (issue #30, item 6).

``tests/data/torch_device_modules.json`` is what torch 2.13's CPU build does for every public
function of ``torch.cuda``, ``torch.xpu``, ``torch.mps`` and ``torch.mtia``
(``tools/torch_device_modules.py``); ember's module of each device type is called the same way
wherever the device is not there (no GPU here: ``ember.cuda``'s backend is installed but cannot
run, the others are not installed), and must return the same or raise the same type.
"""
from __future__ import annotations

import builtins
import collections
import json
import os
import warnings

import pytest

import ember

with open(os.path.join(os.path.dirname(__file__), "data", "torch_device_modules.json")) as f:
    REFERENCE = json.load(f)

# where torch's CPU build fails by accident rather than by design, ember does what the rest of
# the module does: (what ember does, why)
NOT_TORCHS = {
    **{("cuda", n): (("returns", None), "torch's CPU build calls a torch._C function it was "
                     "built without (AttributeError); there are no statistics to reset")
       for n in ("reset_accumulated_host_memory_stats", "reset_accumulated_memory_stats",
                 "reset_max_memory_allocated", "reset_max_memory_cached",
                 "reset_peak_host_memory_stats", "reset_peak_memory_stats")},
    **{("xpu", n): (("returns", None), "as cuda's (AttributeError on torch._C)")
       for n in ("reset_accumulated_memory_stats", "reset_peak_memory_stats")},
    ("cuda", "memory_snapshot"): (("returns", "$list"), "AttributeError on torch._C in torch; "
                                  "torch.xpu's returns [] without the device, as ember's do"),
    **{("cuda", n): (("raises", "AssertionError"), "AttributeError on torch._C in torch; it "
                     "needs the device, so ember raises as the other such functions do")
       for n in ("set_device", "caching_allocator_delete", "get_allocator_backend")},
    ("cuda", "memory_summary"): (("raises", "AssertionError"), "torch raises KeyError "
                                 "formatting empty statistics; it needs the device"),
    **{(m, n): (("raises", "AssertionError"), "torch fails on its optional nvidia-ml-py / pyzes "
                "package before looking for the device (ModuleNotFoundError / ImportError, or "
                "a string saying the package is missing); ember raises that the device is "
                "missing")
       for m, names in (("cuda", ("clock_rate", "device_memory_used", "memory_usage",
                                  "power_draw", "temperature", "utilization",
                                  "list_gpu_processes")),
                        ("xpu", ("clock_rate", "device_memory_used", "memory_usage",
                                 "power_draw", "temperature", "utilization")))
       for n in names},
}


def _cases():
    for module, table in REFERENCE["modules"].items():
        for name, outcome in table["functions"].items():
            yield pytest.param(module, name, outcome, id=f"{module}.{name}")


def _args(args):
    return [ember.empty(0, dtype=ember.uint8) if a == "$rng_state" else a for a in args]


def _matches(kind, expected, got):
    if kind == "raises":
        return isinstance(got, BaseException) and isinstance(got, getattr(builtins, expected))
    if isinstance(got, BaseException):
        return False
    if expected == "$context_manager":
        return hasattr(got, "__enter__") and hasattr(got, "__exit__")
    if isinstance(expected, str) and expected.startswith("$"):
        kinds = {"$list": list, "$dict": dict, "$OrderedDict": collections.OrderedDict}
        return type(got) is kinds[expected]
    return type(got) is type(expected) and got == expected


@pytest.mark.parametrize("module,name,outcome", list(_cases()))
def test_like_torchs_cpu_build(module, name, outcome):
    mod = getattr(ember, module)
    if mod.is_available():
        pytest.skip(f"ember.{module} has a device here")
    fn = getattr(mod, name)  # every function torch's module has, ember's has
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fn(*_args(outcome["args"]))
    except Exception as e:  # noqa: BLE001 - compared with what torch raised
        got = e
    if (module, name) in NOT_TORCHS:
        (kind, expected), _ = NOT_TORCHS[module, name]
    elif "raises" in outcome:
        kind, expected = "raises", outcome["raises"]
    else:
        kind, expected = "returns", outcome["returns"]
    assert _matches(kind, expected, got), f"torch: {outcome}; ember: {got!r}"
    if kind == "returns" and "empty" in outcome:
        assert (len(got) == 0) == outcome["empty"]


def test_seeding_a_missing_device_is_silent_and_changes_nothing():
    state = ember.get_rng_state()
    ember.cuda.manual_seed_all(0)
    ember.cuda.manual_seed(1)
    ember.xpu.seed_all()
    assert ember.equal(ember.get_rng_state(), state)


def test_unusable_device_errors_are_runtime_and_assertion_errors():
    for module in ("cuda", "xpu"):
        mod = getattr(ember, module)
        if mod.is_available():
            continue
        with pytest.raises(RuntimeError) as e:
            mod.synchronize()
        assert isinstance(e.value, AssertionError)
        assert module in str(e.value)


def test_reference_is_torchs():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the reference is a build without devices")
    from helpers_tools import load_tool
    fresh = json.loads(json.dumps(load_tool("torch_device_modules").record()))
    if fresh["torch"] != REFERENCE["torch"]:
        pytest.skip(f"reference of torch {REFERENCE['torch']}, installed {fresh['torch']}")
    strip = lambda d: {m: {n: {k: v for k, v in o.items() if k != "message"}  # noqa: E731
                           for n, o in t["functions"].items()}
                       for m, t in d["modules"].items()}
    assert strip(fresh) == strip(REFERENCE)
