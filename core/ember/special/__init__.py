"""``ember.special``: ``torch.special``'s functions under their names.

The ops are the elementwise family's (``ember.ops.elementwise``: ``special.py`` holds the ones
only this namespace has, with their derivatives); every backend has kernels for them. Names
that are other ops under another name (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``,
``psi`` is ``digamma``) call those ops.
"""
from __future__ import annotations

from ..ops import elementwise as _ew
from ..ops import reduction as _red

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv",
           "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e",
           "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
           "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]

_S = _ew.special_api
_U = _ew.unary_api

airy_ai = _S["special_airy_ai"]
bessel_j0 = _S["special_bessel_j0"]
bessel_j1 = _S["special_bessel_j1"]
bessel_y0 = _S["special_bessel_y0"]
bessel_y1 = _S["special_bessel_y1"]
modified_bessel_k0 = _S["special_modified_bessel_k0"]
modified_bessel_k1 = _S["special_modified_bessel_k1"]
scaled_modified_bessel_k0 = _S["special_scaled_modified_bessel_k0"]
scaled_modified_bessel_k1 = _S["special_scaled_modified_bessel_k1"]
entr = _S["special_entr"]
erfcx = _S["special_erfcx"]
i0 = _S["i0"]
i0e = _S["special_i0e"]
i1 = _S["special_i1"]
i1e = _S["special_i1e"]
log_ndtr = _S["special_log_ndtr"]
ndtr = _S["special_ndtr"]
ndtri = _S["special_ndtri"]
sinc = _S["sinc"]
xlog1py = _S["special_xlog1py"]
zeta = _S["special_zeta"]
gammainc = _S["special_gammainc"]
gammaincc = _S["special_gammaincc"]
polygamma = _ew.polygamma
round = _ew.round  # noqa: A001 - torch.special.round

erf, erfc, erfinv = _U["erf"], _U["erfc"], _U["erfinv"]
exp2, expm1, log1p = _U["exp2"], _U["expm1"], _U["log1p"]
expit = _U["sigmoid"]
gammaln = _U["lgamma"]
digamma = psi = _U["digamma"]
xlogy = _ew.binary_api["xlogy"]
logsumexp = _red.logsumexp
modified_bessel_i0, modified_bessel_i1 = i0, i1   # torch.special's other names for them

from ._polynomials import *  # noqa: E402,F401,F403 - orthogonal polynomials, spherical j0
from ._polynomials import __all__ as _polynomials_all  # noqa: E402
__all__ += ["modified_bessel_i0", "modified_bessel_i1", "bessel_y0", "bessel_y1",
            "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
            "scaled_modified_bessel_k1"] + list(_polynomials_all)


logit = _U["logit"]  # torch.special.logit is torch.logit, eps included


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function (``torch.mvlgamma``)."""
    return _ew.mvlgamma(input, p, out=out)


def softmax(input, dim, dtype=None):
    return _red.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _red.log_softmax(input, dim, dtype=dtype)
