"""What the decompositions and solvers make of NaN and infinity: one rule per op family, applied
before any kernel runs, so every backend gives the same answer and no kernel ever sees a
non-finite matrix (LAPACK and the Jacobi kernels make up finite values for some of them).

* SVD (svd, svdvals and what is built on them: matrix_norm 2 / -2 / 'nuc', cond, pinv,
  matrix_rank, lstsq, nuclear norm): a matrix holding NaN raises PyTorch's ``LinAlgError``
  ("... failed to converge because the input matrix contained non-finite values"), naming the
  public op and the batch element; a matrix holding infinity (no NaN) gives NaN singular values
  and vectors, as PyTorch's singular values are.
* Hermitian eigendecomposition (eigh, eigvalsh): a NaN or infinity in the triangle ``UPLO``
  reads makes that matrix's eigenvalues and eigenvectors NaN (PyTorch's LAPACK returns NaN for
  most such inputs and finite values for some; never finite here). The other triangle is not
  read, as in LAPACK.
* inverse and solve: a matrix holding NaN gives an all-NaN inverse / solution (its info stays
  0, as LAPACK's does).

Where values live on the host (the CPU), each check is one sum read when every matrix is
finite (the common case), and the repair (a where per input and output) runs only when a matrix
is not. On a device (CUDA, OpenCL) a read would wait for the device, so the eigh and solve rules
always run the repair, branch-free on the device (PyTorch's inv_ex/solve_ex do not synchronize
either); SVD reads once, since it must raise for NaN (as PyTorch's svd synchronizes). A
non-finite matrix is replaced by the identity before the kernel runs, so it can neither fail
nor report a singular or non-converging matrix.
"""
from __future__ import annotations

import cmath

from .._util import every_example
from ._rules import LinAlgError, eye_like
from .. import elementwise as _ew


def _triangle(A, uplo):
    return A if uplo is None else A.tril() if uplo == "L" else A.triu()


def _matrices_where(A, test, uplo=None, read=True):
    """A bool tensor of A's batch shape (True: the matrix has an entry ``test`` flags), or None
    when no matrix has one (or there are no values to read). ``read=False`` on a device whose
    values are not on the host: the flags without looking at them (never None)."""
    if A.device.type == "meta" or A.numel() == 0:
        return None
    if not read and not getattr(A._backend(), "values_on_host", False):
        return test(_triangle(A, uplo)).flatten(-2).any(-1)
    # the common case in one reduction: a sum is finite when every term is (it may overflow
    # to infinity: then the exact test below runs and finds nothing)
    if cmath.isfinite(every_example(A).sum().item()):
        return None
    flagged = test(_triangle(A, uplo))
    if not bool(every_example(flagged.any()).any()):
        return None
    return flagged.flatten(-2).any(-1)


def _nonfinite(t):
    return t.isfinite().logical_not()


def _isnan(t):
    return t.isnan()


def _raise_for_nan(api, A):
    has_nan = every_example(A.isnan().flatten(-2).any(-1))
    if not bool(has_nan.any()):
        return
    flat = has_nan.reshape(-1).tolist()
    i = flat.index(True)
    batch = f": (Batch element {i})" if has_nan.ndim else ""
    raise LinAlgError(f"{api}{batch}: The algorithm failed to converge because the input "
                      f"matrix contained non-finite values.")


def _run_masked(A, bad, run, mask):
    """``run`` on A with the ``bad`` matrices replaced by the identity, then the outputs at
    ``mask`` positions set to NaN for those matrices."""
    n, m = A._shape[-2:]
    per_matrix = bad.unsqueeze(-1).unsqueeze(-1)
    out = run(_ew.where(per_matrix, eye_like(n, A, m=m), A))
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    fixed = []
    for k, o in enumerate(outs):
        if k in mask:
            cond = bad.reshape(bad._shape + (1,) * (o.ndim - bad.ndim))
            o = _ew.where(cond, float("nan"), o)
        fixed.append(o)
    return fixed[0] if single else type(out)(fixed) if hasattr(out, "_fields") else \
        tuple(fixed)


def svd(api, A, run, mask=(0, 1, 2)):
    """``run(A)`` (svd_op / svdvals_op and what is computed from them) under the SVD rule."""
    bad = _matrices_where(A, _nonfinite)
    if bad is None:
        return run(A)
    _raise_for_nan(api, A)
    return _run_masked(A, bad, run, mask)


def eigh(A, uplo, run, mask=(0, 1)):
    """``run(A)`` (eigh_op / eigvalsh_op) under the Hermitian rule for triangle ``uplo``."""
    bad = _matrices_where(A, _nonfinite, uplo, read=False)
    if bad is None:
        return run(A)
    return _run_masked(A, bad, run, mask)


def solve(A, run, mask=(0,)):
    """``run(A)`` (inv_ex_op / solve_op) under the inverse rule."""
    bad = _matrices_where(A, _isnan, read=False)
    if bad is None:
        return run(A)
    return _run_masked(A, bad, run, mask)
