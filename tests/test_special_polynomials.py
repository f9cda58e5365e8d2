"""torch.special's orthogonal polynomials (per-element degrees, negative degrees, scalars),
spherical_bessel_j0 and the modified Bessel aliases against torch and scipy."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import ember

NAMES = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]
X = np.linspace(-1.2, 1.2, 25)
N = np.array([0, 1, 2, 3, 5, 8, -1, 12, 4, 6, 7, 9, 10, 11, 2, 3, 1, 0, 5, 5, 6, 7, 8, 9, 3])


def test_against_scipy():
    s = ember.special
    cases = {"chebyshev_polynomial_t": sp.eval_chebyt, "chebyshev_polynomial_u": sp.eval_chebyu,
             "hermite_polynomial_h": sp.eval_hermite, "hermite_polynomial_he": sp.eval_hermitenorm,
             "laguerre_polynomial_l": sp.eval_laguerre, "legendre_polynomial_p": sp.eval_legendre}
    n = np.abs(N)
    for name, ref in cases.items():
        got = getattr(s, name)(ember.tensor(X), ember.tensor(n)).numpy()
        np.testing.assert_allclose(got, ref(n, X), rtol=1e-10, atol=1e-10, err_msg=name)
    np.testing.assert_allclose(s.spherical_bessel_j0(ember.tensor(X)).numpy(),
                               sp.spherical_jn(0, X), rtol=1e-12)
    np.testing.assert_allclose(s.modified_bessel_i0(ember.tensor(X)).numpy(), sp.i0(X))


@pytest.mark.parametrize("name", NAMES)
def test_against_torch_with_negative_degrees(name):
    torch = pytest.importorskip("torch")
    got = getattr(ember.special, name)(ember.tensor(X), ember.tensor(N)).numpy()
    want = getattr(torch.special, name)(torch.tensor(X), torch.tensor(N)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    scalar = getattr(ember.special, name)(ember.tensor(X, dtype=ember.float32), 3)
    assert scalar.dtype == ember.float32 and scalar.shape == (25,)


@pytest.mark.parametrize("name, ref", [("bessel_y0", sp.y0), ("bessel_y1", sp.y1),
                                       ("modified_bessel_k0", sp.k0),
                                       ("modified_bessel_k1", sp.k1),
                                       ("scaled_modified_bessel_k0", sp.k0e),
                                       ("scaled_modified_bessel_k1", sp.k1e)])
def test_bessel_y_and_k_against_scipy_and_their_gradients(name, ref):
    x = np.concatenate([np.linspace(0.01, 30, 300), [0.0, -1.0, np.nan]])
    fn = getattr(ember.special, name)
    np.testing.assert_allclose(fn(ember.tensor(x)).numpy(), ref(x), rtol=1e-13)
    try:
        opencl = ember.opencl.is_available()
    except Exception:  # noqa: BLE001
        opencl = False
    if opencl:
        np.testing.assert_allclose(fn(ember.tensor(x, device="opencl")).cpu().numpy(), ref(x),
                                   rtol=1e-12)
    t = ember.tensor([0.7, 1.9, 4.5, 11.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(fn, (t,))
