"""``torch.lobpcg``: a few extreme eigenpairs of a symmetric (generalized) eigenproblem
``A X = B X diag(E)`` by Knyazev's locally optimal block preconditioned conjugate gradient.

Each iteration builds the search space ``S = [X, W, P]`` (the current block, the
preconditioned residuals ``W = iK (A X - B X diag(E))`` and the previous update ``P``), makes
it B-orthonormal through the eigendecomposition of its Gram matrix (directions whose Gram
eigenvalue is negligible are dropped, so a nearly dependent ``P`` can't break the step), and
solves the small projected problem with ``linalg.eigh`` (Rayleigh–Ritz). A pair has converged
when ``||r|| / ((||A|| + |e| ||B||) ||x||) < tol``, torch's relative residual. Written with ember
ops, so every backend runs it and autograd sees through it (torch's lobpcg also supports
autograd for the converged result). ``method`` accepts torch's "basic" and "ortho" (the same
B-orthonormalisation here); ``tracker`` is called with the state after each iteration."""
from __future__ import annotations

from ... import _dtype, linalg
from ..._tensor import Tensor
from ..random import randn
from ..shape import cat

__all__ = ["lobpcg"]


class _State(dict):
    """What ``tracker`` sees: ``iterations``, ``E``, ``X``, ``rerr``, ``converged``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _b_orthonormal(S, B):
    """A basis of span(S), orthonormal in B's inner product."""
    BS = S if B is None else B.matmul(S)
    G = S.mT.matmul(BS)
    G = (G + G.mT) * 0.5
    d, V = linalg.eigh(G)
    keep = d > d.max() * (S.shape[-2] * _eps(S.dtype))
    count = int(keep.sum().item())
    if count == 0:
        raise RuntimeError("lobpcg: the search space collapsed (all directions dependent)")
    d, V = d[-count:], V[:, -count:]        # eigh sorts ascending: the kept ones are last
    return S.matmul(V / d.sqrt().unsqueeze(0))


def _eps(dtype):
    return 2.220446049250313e-16 if dtype is _dtype.float64 else 1.1920928955078125e-07


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """``(E, X)``: the ``k`` largest (``largest=True``, torch's default) or smallest
    eigenvalues of ``A x = e B x`` and their B-orthonormal eigenvectors."""
    if not isinstance(A, Tensor):
        raise TypeError(f"lobpcg(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"lobpcg: A must be a square matrix (ember's lobpcg takes one matrix, "
                         f"not a batch), got shape {list(A.shape)}")
    if not A.dtype.is_floating_point:
        raise ValueError(f"lobpcg: A must be floating point, got {A.dtype}")
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")
    m = A.shape[-1]
    largest = True if largest is None else bool(largest)
    k = (1 if X is None else X.shape[-1]) if k is None else int(k)
    n = (k if X is None else X.shape[-1]) if n is None else int(n)
    if m < 3 * n:
        raise ValueError(f"LPBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    if not 0 < k <= n:
        raise ValueError(f"lobpcg: k (={k}) must be in [1, n (={n})]")
    niter = 1000 if niter is None else int(niter)
    tol = _eps(A.dtype) ** 0.5 if tol is None else float(tol)
    if X is None:
        X = randn(m, n, dtype=A.dtype, device=A.device)
    elif X.shape != (m, n):
        raise ValueError(f"lobpcg: X must have shape ({m}, {n}), got {list(X.shape)}")
    sign = -1.0 if largest else 1.0        # minimise sign * Rayleigh quotient
    Aop = A * sign
    normA = linalg.matrix_norm(A).item()
    normB = 1.0 if B is None else linalg.matrix_norm(B).item()

    def ritz(S, count):
        T = S.mT.matmul(Aop.matmul(S))
        e, C = linalg.eigh((T + T.mT) * 0.5)
        return e[:count], C[:, :count]

    X = _b_orthonormal(X, B)
    E, C = ritz(X, n)
    X = X.matmul(C)
    P = None
    state = _State(iterations=0, E=E * sign, X=X, rerr=None, converged=0)
    for it in range(niter):
        BX = X if B is None else B.matmul(X)
        R = Aop.matmul(X) - BX * E.unsqueeze(0)
        rerr = R.norm(dim=0) / ((normA + E.abs() * normB) * X.norm(dim=0))
        converged = int((rerr[:k] < tol).sum().item())
        state.update(iterations=it, E=E * sign, X=X, rerr=rerr, converged=converged)
        if tracker is not None:
            tracker(state)
        if converged == k:
            break
        W = R if iK is None else iK.matmul(R)
        blocks = [X, W] + ([P] if P is not None else [])
        S = _b_orthonormal(cat(blocks, 1), B)
        E, C = ritz(S, n)
        X_new = S.matmul(C)
        # the new direction: the update minus its component along the old block
        BXo = X if B is None else B.matmul(X)
        P = X_new - X.matmul(BXo.mT.matmul(X_new))
        X = X_new
    E = E * sign
    return E[:k], X[:, :k]

