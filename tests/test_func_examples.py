"""The seed use cases of ember.func (examples/func_examples.py), each against the computation it
replaces: per-sample gradients against one backward pass per example, an ensemble against each
model, a network's Jacobian and Hessian against finite differences, and a batched MAML inner
loop against a loop over tasks. The script itself runs too."""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "examples", "func_examples.py")


def _module():
    spec = importlib.util.spec_from_file_location("func_examples", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_per_sample_gradients_equal_64_backward_passes():
    assert _module().per_sample_gradients(sizes=(784, 256, 10), batch=64) < 1e-6


def test_ensemble_of_five_mlps():
    assert _module().ensemble(n_models=5) < 1e-6


def test_jacobian_and_hessian_against_finite_differences():
    jac_err, hess_err = _module().jacobian_and_hessian()
    assert jac_err < 1e-7 and hess_err < 1e-6


def test_batched_maml_inner_loop():
    before, after, err = _module().maml()
    assert err < 1e-5
    assert after < before


def test_example_script_runs():
    out = subprocess.run([sys.executable, PATH], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert "per-sample gradients" in out and "MAML" in out
