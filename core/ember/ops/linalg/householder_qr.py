"""``torch.geqrf`` and ``torch.ormqr``: QR in LAPACK's Householder form, and products with the
implicit ``Q``.

``geqrf`` runs LAPACK's algorithm (xgeqr2 with xlarfg's reflectors: ``beta = -sign(re alpha) *
||(alpha, x)||`` (real), ``tau = (beta - alpha) / beta``, ``v = x / (alpha - beta)`` with
``v[0] = 1``; a column already zero below the diagonal with a real ``alpha`` gets ``tau = 0``;
the trailing columns get ``H^H = I - conj(tau) v v^H``) column by column with ember ops over the
batch, so every backend runs it natively and its results equal LAPACK's up to rounding. Like
torch's, it has no derivative. ``ormqr`` builds the full ``Q`` with
``linalg.householder_product`` (reflectors padded with ``tau = 0`` to a square) and multiplies
(``transpose``: by ``Q^H``): differentiable through ``householder_product`` and ``matmul``.
Real and complex dtypes."""
from __future__ import annotations

from ..._tensor import Tensor
from ... import linalg, return_types
from ...dispatch.grad_mode import no_grad
from ..elementwise.selection import where
from ..factories import zeros
from ..shape import cat

__all__ = ["geqrf", "ormqr"]


def _check(op, a, name="input"):
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(a).__name__}")
    if a.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input, got "
                           f"{a.dtype}")


def geqrf(input, *, out=None):
    """``(a, tau)``: R on and above the diagonal of ``a``, the Householder vectors below it."""
    _check("geqrf", input)
    m, n = input.shape[-2:]
    k = min(m, n)
    cplx = input.dtype.is_complex
    with no_grad():
        a = input.detach().clone()
        tau = zeros(*input.shape[:-2], k, dtype=input.dtype, device=input.device)
        for j in range(k):
            alpha = a[..., j, j]
            x = a[..., j + 1:, j]
            re = alpha.real if cplx else alpha
            xnorm = x.abs().pow(2).sum(-1).sqrt() if m - j > 1 else re * 0
            nonzero = (xnorm != 0).logical_or(alpha.imag != 0) if cplx else xnorm != 0
            norm = (alpha.abs().pow(2) + xnorm * xnorm).sqrt()
            beta = where(re >= 0, -norm, norm).to(input.dtype)
            beta = where(nonzero, beta, alpha)
            safe = where(nonzero, alpha - beta, alpha * 0 + 1)
            t = where(nonzero, (beta - alpha) / where(nonzero, beta, beta * 0 + 1), alpha * 0)
            v = x / safe.unsqueeze(-1)
            tau[..., j] = t
            a[..., j + 1:, j] = v
            a[..., j, j] = beta
            if j + 1 < n:
                # apply H^H = I - conj(tau) v v^H (v[0] = 1) to the trailing columns
                block = a[..., j:, j + 1:]
                head = block[..., :1, :]
                vh = v.conj() if cplx else v
                w = head + (vh.unsqueeze(-1) * block[..., 1:, :]).sum(-2, keepdim=True)
                tw = (t.conj() if cplx else t).unsqueeze(-1).unsqueeze(-1) * w
                a[..., j:j + 1, j + 1:] = head - tw
                a[..., j + 1:, j + 1:] = block[..., 1:, :] - v.unsqueeze(-1) * tw
    if out is not None:
        out[0].copy_(a)
        out[1].copy_(tau)
        return out
    return _GEQRF(a, tau)


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """``op(Q) @ other`` (``left``) or ``other @ op(Q)``, ``Q`` from ``geqrf``'s ``(input,
    tau)``, ``op`` the transpose when ``transpose``."""
    _check("ormqr", input)
    _check("ormqr", other, "other")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError(f"ormqr: tau.shape[-1] ({tau.shape[-1]}) must be less than or equal "
                           f"to input.shape[-1] ({input.shape[-1]})")
    size = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != size:
        side = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(f"ormqr: input.shape[-2] ({input.shape[-2]}) must be equal to "
                           f"{side} ({size})")
    k = tau.shape[-1]
    reflectors = input[..., :, :k]
    if size > k:   # pad to a square with identity reflectors (tau = 0)
        pad = zeros(*input.shape[:-2], size, size - k, dtype=input.dtype, device=input.device)
        reflectors = cat([reflectors, pad], -1)
        tau = cat([tau, zeros(*tau.shape[:-1], size - k, dtype=tau.dtype,
                              device=tau.device)], -1)
    q = linalg.householder_product(reflectors, tau)
    if transpose:
        q = q.mH
    result = q.matmul(other) if left else other.matmul(q)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _geqrf_type():
    if not hasattr(return_types, "geqrf"):
        return_types.geqrf = return_types._return_type("geqrf", ["a", "tau"])
    return return_types.geqrf


_GEQRF = _geqrf_type()


def _install():
    Tensor.geqrf = lambda self: geqrf(self)
    Tensor.ormqr = lambda self, input2, input3, left=True, transpose=False: ormqr(
        self, input2, input3, left, transpose)


_install()
