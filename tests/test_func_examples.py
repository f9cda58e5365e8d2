"""The seed use cases of ember.func (examples/func_examples.py), each against the computation it
replaces: per-sample gradients against one backward pass per example, an ensemble against each
model, a network's Jacobian and Hessian against finite differences, and a batched MAML inner
loop against a loop over tasks. The script itself runs too."""
import importlib.util
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "examples", "func_examples.py")


def _module():
    spec = importlib.util.spec_from_file_location("func_examples", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Both sides of each check compute the same sums in different orders: their relative difference
# is bounded by n * eps of the dtype for the longest chain of dot products (Higham's gamma_n),
# whatever BLAS kernels this CPU picks. A wrong batching rule is off by O(1).
EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)


def test_per_sample_gradients_equal_64_backward_passes():
    # forward dots of length 784 and 256, backward of 10
    assert _module().per_sample_gradients(sizes=(784, 256, 10), batch=64) <= \
        (784 + 256 + 10) * EPS32


def test_ensemble_of_five_mlps():
    assert _module().ensemble(n_models=5) <= (8 + 32 + 3) * EPS32


def test_jacobian_and_hessian_against_finite_differences():
    # central differences with step h: rounding n * eps / h (n = 4 + 6) plus truncation ~ h^2
    h = 1e-6
    jac_err, hess_err = _module().jacobian_and_hessian(eps=h)
    bound = 10 * EPS64 / h + h * h
    assert jac_err <= bound and hess_err <= bound


def test_batched_maml_inner_loop():
    before, after, err = _module().maml()
    # dots of length 32 and 10 shots, through 2 inner steps differentiated twice (5 passes)
    assert err <= (32 + 10) * 5 * EPS32
    assert after < before


def test_example_script_runs():
    out = subprocess.run([sys.executable, PATH], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert "per-sample gradients" in out and "MAML" in out
