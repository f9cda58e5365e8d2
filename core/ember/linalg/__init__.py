"""``ember.linalg``: ``torch.linalg``'s functions, with its signatures, batching, ``out=`` and
errors (``LinAlgError`` names the failing batch element).

The ops live in the linear algebra family (``ember.ops.linalg``: ``decompositions``,
``solvers``, ``functions``), each with PyTorch's derivative; every backend has kernels for the
primitives (the CPU through LAPACK, OpenCL natively) or runs their composites.
"""
from __future__ import annotations

from ..ops.linalg import decompositions as _dec
from ..ops.linalg import functions as _fn
from ..ops.linalg import solvers as _sol
from ..ops.linalg._rules import LinAlgError
from ..ops.linalg.products import matmul

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
           "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

cholesky, cholesky_ex = _dec.cholesky, _dec.cholesky_ex
eig, eigvals, eigh, eigvalsh = _dec.eig, _dec.eigvals, _dec.eigh, _dec.eigvalsh
householder_product = _dec.householder_product
ldl_factor, ldl_factor_ex = _dec.ldl_factor, _dec.ldl_factor_ex
lu, lu_factor, lu_factor_ex = _dec.lu, _dec.lu_factor, _dec.lu_factor_ex
qr, svd, svdvals = _dec.qr, _dec.svd, _dec.svdvals

inv, inv_ex = _sol.inv, _sol.inv_ex
solve, solve_ex, solve_triangular = _sol.solve, _sol.solve_ex, _sol.solve_triangular
lu_solve, ldl_solve = _sol.lu_solve, _sol.ldl_solve
pinv, lstsq = _sol.pinv, _sol.lstsq

det, slogdet, matrix_exp, matrix_power = _fn.det, _fn.slogdet, _fn.matrix_exp, _fn.matrix_power
cross, vecdot, multi_dot = _fn.cross, _fn.vecdot, _fn.multi_dot
norm, vector_norm, matrix_norm = _fn.norm, _fn.vector_norm, _fn.matrix_norm
cond, matrix_rank = _fn.cond, _fn.matrix_rank
tensorinv, tensorsolve, vander, diagonal = _fn.tensorinv, _fn.tensorsolve, _fn.vander, \
    _fn.diagonal
