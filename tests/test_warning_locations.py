"""ember's warnings name the user's line, as PyTorch's do, whatever path the call took through
ember (binding layer, autocast, the compiled fast path, a module's forward)."""
from __future__ import annotations

import warnings

import pytest

import ember
import ember.nn.functional as F


def _where(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    assert caught, "no warning"
    return [(w.filename, str(w.message)) for w in caught]


CALLS = {
    "functional softmax without dim": lambda x: F.softmax(x),
    "module softmax without dim": lambda x: ember.nn.Softmax()(x),
    "log_softmax under autocast": lambda x: _autocast(lambda: F.log_softmax(x)),
    "deprecated init alias": lambda x: ember.nn.init.normal(ember.empty(2, 2)),
    "size_average": lambda x: F.mse_loss(x, x, size_average=True),
}


def _autocast(fn):
    with ember.autocast("cpu"):
        return fn()


@pytest.mark.parametrize("name", list(CALLS))
def test_warning_names_the_calling_file(name):
    x = ember.randn(3, 4)
    found = _where(lambda: CALLS[name](x))
    assert all(filename == __file__ for filename, _ in found), found


def test_a_hook_called_back_from_ember_is_the_place_named():
    x = ember.randn(3, requires_grad=True)

    def hook(g):
        F.softmax(g)   # warns here, inside a hook ember calls during backward
        return g

    x.register_hook(hook)
    found = _where(lambda: (x * 2).sum().backward())
    assert [f for f, m in found if "Implicit dimension" in m] == [__file__]


def test_a_user_module_whose_name_starts_like_embers_is_the_user_s():
    # only ember's own packages (ember, ember.*, ember_*) are skipped, not "embers_model"
    code = compile("def run(F, x):\n    return F.softmax(x)\n", "embers_model.py", "exec")
    namespace = {"__name__": "embers_model"}
    exec(code, namespace)
    found = _where(lambda: namespace["run"](F, ember.randn(2, 3)))
    assert [f for f, _ in found] == ["embers_model.py"]
