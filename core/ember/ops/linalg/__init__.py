"""Linear algebra ops: each op with its meta and derivative beside its ``define``.

* ``products``      the product primitive ``matmul`` and its special cases (mm, bmm, mv, dot,
                    vdot, outer), ``linalg_svdvals``; trace, kron, inner
* ``fused``         fused multiply-adds: addmm (its own op and derivative), baddbmm, addmv,
                    addbmm, addr
* ``contractions``  tensordot, einsum
* ``decompositions`` LU, Cholesky, QR, eigh/eig, SVD, LDL, Householder product
* ``solvers``       LU solve, solve, triangular solve, inverse, LDL solve, pinv, lstsq
* ``functions``     det, slogdet, matrix_exp and the compositions (norms, cond, cross, ...)
* ``_rules``        argument checks, LinAlgError and formula helpers the family shares

Kernel convention (see ``ember.kit.linalg``):

* ``matmul(Tensor self, Tensor other)`` is the one product primitive: numpy's ``matmul`` rules
  (1-D operands promoted and squeezed, batch dims broadcast), operands of one dtype, result in
  that dtype. ``mm``, ``bmm``, ``mv``, ``dot`` and ``vdot`` validate their stricter contracts
  here and call it.
* ``addmm(Tensor self, Tensor mat1, Tensor mat2, Scalar beta, Scalar alpha)``: ``beta * self +
  alpha * (mat1 @ mat2)`` for matrices of one dtype, ``self`` broadcastable to the result;
  ``self`` is ignored when ``beta`` is 0 (nan and inf included). Optional: a composite of
  ``matmul`` and elementwise ops runs where a backend has no kernel.
* ``einsum(str equation, Tensor[] operands)``: an explicit equation of letters only (ellipses
  already spelled out as letters), operands of one dtype; size-1 dims broadcast.
* ``linalg_svdvals(Tensor A)``: singular values of the trailing matrices, real dtype.
* the decompositions and solvers: see those modules; ``ember.linalg`` is the public namespace.

``baddbmm``, ``addmv``, ``addr``, ``addbmm``, ``outer``, ``vdot``, ``trace`` and ``tensordot`` have
composites: a backend gets them from ``matmul`` and the elementwise ops, and may register fused
kernels (the array kit does for all but ``outer`` and ``tensordot``). All but those two have
torch's formula and node too.
"""
from . import products, fused, contractions  # noqa: F401
from . import solvers, decompositions, functions  # noqa: F401 - solvers first: see imports
from ._rules import cpp_dtype_name, inner_product_check
from .contractions import einsum, einsum_op, tensordot, tensordot_op
from .fused import (addbmm, addmm, addmm_, addmm_op, addmv, addmv_, addmv_op, addr, baddbmm,
                    baddbmm_, baddbmm_op)
from .products import (bmm, dot, ger, inner, kron, matmul, matmul_op, mm, mv, outer, outer_op,
                       records_graph, svdvals_op, trace, vdot, vdot_op)

from ._rules import LinAlgError
from .legacy import (chain_matmul, cholesky, cholesky_inverse, cholesky_solve, cross, det,
                     frobenius_norm, inverse, logdet, lu, lu_solve, lu_unpack, matrix_exp,
                     matrix_power, norm, nuclear_norm, nuclear_norm_op, orgqr, pinverse, qr, slogdet, svd,
                     triangular_solve)

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "addmm", "baddbmm",
           "addmv", "einsum", "tensordot", "det", "logdet", "slogdet", "inverse", "pinverse",
           "matrix_exp", "matrix_power", "cholesky", "cholesky_solve", "cholesky_inverse", "svd",
           "qr", "lu_unpack", "cross", "trace", "kron", "inner", "addbmm", "addr", "chain_matmul", "frobenius_norm",
           "nuclear_norm", "norm", "triangular_solve", "lu", "lu_solve", "orgqr"]
