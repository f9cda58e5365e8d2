"""``ember.sparse.spdiags``: a sparse COO matrix from its diagonals."""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._layout import sparse_coo
from .._tensor import Tensor
from ..ops._util import _dtype_title
from ..ops.factories import tensor as to_tensor
from ._coo import sparse_coo_tensor

__all__ = ["spdiags"]

def spdiags(diagonals, offsets, shape, layout=None):
    """``torch.sparse.spdiags``: the ``shape`` matrix whose diagonal ``offsets[i]`` (0 the main
    one, > 0 above, < 0 below) holds ``diagonals[i]``: ``diagonals[i, j]`` goes to row
    ``j - offsets[i]``, column ``j``, where that lies inside the matrix (scipy's rule)."""
    if layout is not None and layout is not sparse_coo:
        raise RuntimeError(f"sparse.spdiags: ember builds sparse COO tensors only, got "
                           f"layout={layout} (ember has no CSR/CSC layouts)")
    if not isinstance(diagonals, Tensor) or not isinstance(offsets, Tensor):
        raise TypeError("sparse.spdiags: diagonals and offsets must be tensors")
    if offsets.dim() > 1:
        raise RuntimeError("Offsets must be scalar or vector")
    if diagonals.dim() > 2:
        raise RuntimeError("Diagonals must be vector or matrix")
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    if offsets.dtype is not _dtype.int64:
        raise RuntimeError(f"Offset Tensor must have dtype Long but got "
                           f"{_dtype_title(offsets.dtype)}")
    offs = [int(o) for o in offsets.reshape(-1).tolist()]
    diags = diagonals.reshape(1, -1) if diagonals.dim() < 2 else diagonals
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    if diags.shape[0] != len(offs):
        raise RuntimeError(f"Number of diagonals ({diags.shape[0]}) does not match the number "
                           f"of offsets ({len(offs)})")
    rows, cols = shape
    width = diags.shape[1]
    flat, row_index, col_index = [], [], []
    for i, off in enumerate(offs):
        j = np.arange(max(0, off), min(cols, width, rows + off), dtype=np.int64)
        flat.append(i * width + j)
        row_index.append(j - off)
        col_index.append(j)
    take = to_tensor(np.concatenate(flat), device=diags.device)
    indices = to_tensor(np.stack([np.concatenate(row_index), np.concatenate(col_index)]),
                        device=diags.device)
    values = diags.reshape(-1)[take]   # an indexing op: gradients reach the diagonals
    return sparse_coo_tensor(indices, values, shape)
