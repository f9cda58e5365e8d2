"""Indexing: ``t[...]`` / ``t[...] = v`` and the gather/scatter family, each op with its meta and
derivative beside its define.

* ``advanced``        subscripts (basic indices as views, advanced ones through ``index`` /
                      ``index_put_``), ``index_put`` (the functional twin), ``nonzero``, ``take``
* ``gather_scatter``  gather, scatter, scatter_add, index_select, index_add, index_copy
* ``masked``          masked_fill, masked_select, one_hot

The array-module kernels are in ``ember.kit.indexing``.
"""
from . import advanced, gather_scatter, masked  # noqa: F401 - order: each imports those before
from .advanced import (argwhere, index_op, index_put, index_put_, index_put_op, index_put__op,
                       nonzero, nonzero_op, take)
from .gather_scatter import (gather, gather_op, index_add, index_add_, index_add_op, index_copy,
                             index_copy_, index_select, index_select_op, scatter, scatter_,
                             scatter_add, scatter_add_, scatter_into_zeros, scatter_op)
from .masked import (masked_fill, masked_fill_, masked_fill_op, masked_select, masked_select_op,
                     one_hot)

__all__ = ["gather", "scatter", "scatter_add", "index_select", "index_add", "index_copy",
           "index_put", "masked_fill", "masked_select", "nonzero", "argwhere", "take",
           "one_hot"]
