"""The matrix functions behind ``parametrizations.orthogonal``, written in ember ops (so they
differentiate and run on every backend): the matrix exponential, a product of Householder
reflectors and a linear solve for the Cayley map; initial values (no gradient, once) come from
numpy's QR on the host.

They are real-valued and serve the small matrices of a parametrized layer; ``ember.linalg``
(its own issue) is where general-purpose versions belong.
"""
from __future__ import annotations

import math

import numpy as np

from ..._type_info import finfo
from ...dispatch.grad_mode import no_grad
from ...ops.elementwise.closeness import allclose
from ...ops.factories import eye
from ...ops.factories import from_numpy


def _identity_like(a):
    n = a.shape[-1]
    return eye(n, dtype=a.dtype, device=a.device).expand(*a.shape)


def matrix_exp(a):
    """``exp(a)`` for square matrices (batched): scaling and squaring with a degree-18 Taylor
    polynomial, accurate to the dtype's precision once ``||a / 2^s||_1 <= 1/2``."""
    with no_grad():
        norm = a.abs().sum(-2).amax(-1).max().item() if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    x = a / (2.0 ** s)
    ident = _identity_like(a)
    result = ident
    term = ident
    for k in range(1, 19):
        term = (term @ x) / k
        result = result + term
    for _ in range(s):
        result = result @ result
    return result


def householder_product(a, tau):
    """The first ``a.shape[-1]`` columns of ``H_1 … H_k``, ``H_i = I - tau_i v_i v_i^T`` with
    ``v_i`` the i-th column of ``a`` below the diagonal and 1 on it (LAPACK's orgqr, i.e.
    ``torch.linalg.householder_product``)."""
    m, n = a.shape[-2], a.shape[-1]
    k = tau.shape[-1]
    below = a.tril(-1)
    q = eye(m, n, dtype=a.dtype, device=a.device).expand(*a.shape[:-2], m, n)
    unit = eye(m, dtype=a.dtype, device=a.device)
    for i in reversed(range(k)):
        v = (below[..., :, i] + unit[i]).unsqueeze(-1)            # (..., m, 1)
        q = q - tau[..., i, None, None] * (v @ (v.mT @ q))
    return q


def solve(m, b):
    """``x`` with ``m @ x = b`` by Gauss-Jordan elimination without pivoting. Used for the
    Cayley map, where ``m = I - A/2`` with ``A`` skew-symmetric: its symmetric part is the
    identity, so every pivot is nonzero and elimination is stable."""
    n = m.shape[-1]
    unit = eye(n, dtype=m.dtype, device=m.device)
    for j in range(n):
        pivot_row_m = m[..., j:j + 1, :]
        pivot_row_b = b[..., j:j + 1, :]
        factors = (m[..., :, j:j + 1] / m[..., j:j + 1, j:j + 1]) * (1 - unit[:, j:j + 1])
        m = m - factors * pivot_row_m
        b = b - factors * pivot_row_b
    return b / m.diagonal(dim1=-2, dim2=-1).unsqueeze(-1)


def _host_matrices(a):
    """``a`` as a float64 numpy array of shape (batch, m, n), and how to give results back."""
    arr = a.detach().cpu().numpy().astype(np.float64)
    batch = arr.reshape(-1, *arr.shape[-2:])

    def back(x):
        return from_numpy(np.ascontiguousarray(x.reshape(*arr.shape[:-2], *x.shape[-2:]))) \
            .to(device=a.device, dtype=a.dtype)
    return batch, back


def orthonormalize(a):
    """``Q`` of ``a = QR`` with ``diag(R) >= 0``, for a tall (batch of) matrix ``a`` (PyTorch's
    ``_make_orthogonal``). An initial value, computed once on the host without gradient."""
    batch, back = _host_matrices(a)
    out = np.empty_like(batch)
    for i, m in enumerate(batch):
        q, r = np.linalg.qr(m)
        signs = np.sign(np.diagonal(r))
        signs[signs == 0] = 1
        out[i] = q * signs
    return back(out)


def householder_reflectors(q):
    """PyTorch's right inverse of the householder map: the reflectors of ``q``'s QR
    (LAPACK's geqrf, via numpy's raw QR) with the signs of ``diag(R)`` on the diagonal."""
    batch, back = _host_matrices(q)
    out = np.empty_like(batch)
    for i, m in enumerate(batch):
        h, tau = np.linalg.qr(m, mode="raw")
        a = h.T.copy()
        d = np.sign(np.diagonal(a)).copy()
        d[tau == 0.0] *= -1
        np.fill_diagonal(a, d)
        out[i] = a
    return back(out)


def is_orthogonal(q):
    """``q^T q = I`` up to PyTorch's tolerance (10 n eps)."""
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * finfo(q.dtype).eps
    return allclose(q.mT @ q, eye(k, dtype=q.dtype, device=q.device).expand(
        *q.shape[:-2], k, k), atol=eps)
