"""Reductions, scans and softmax: each op with its meta and derivative beside its ``define``.

* ``sums``      sum, prod, nansum, mean, nanmean, var, std, var_mean, std_mean, count_nonzero
* ``extremes``  amax, amin, max, min, aminmax, argmax, argmin, all, any
* ``norms``     logsumexp, vector_norm, ``renorm`` (the matrix norms and ``torch.norm`` are in
                 ``ember.ops.linalg``)
* ``statistics`` cov, corrcoef, quantile, nanquantile
* ``scans``     cumsum, cumprod, softmax, log_softmax; cummax, cummin, logcumsumexp
* ``_rules``    argument handling, meta functions and formula helpers the family shares

Kernel convention (see ``ember.kit.reduction``): ``dim`` reaches kernels as a sorted tuple of the
axes to reduce, already wrapped; a 0-d input gets ``()`` (PyTorch lets dim 0 and -1 name its one
implicit axis). ``dtype`` is the result dtype the op layer chose; the kernel casts.

* ``sum``/``prod``/``nansum``/``mean``: ``(Tensor self, int[] dim, bool keepdim, dtype dtype)``
* ``var``: ``(Tensor self, int[] dim, float correction, bool keepdim)``, real result dtype
* ``amax``/``amin``: ``(Tensor self, int[] dim, bool keepdim)``; no reduced dim is empty
* ``max_dim``/``min_dim``: ``(Tensor self, int dim, bool keepdim) -> (values, indices)``
* ``argmax``/``argmin``: ``(Tensor self, int? dim, bool keepdim)``; None = the flat index
* ``all``/``any``: ``(Tensor self, int[] dim, bool keepdim, dtype dtype)``, bool or uint8 result
* ``vector_norm``: ``(Tensor self, float ord, int[] dim, bool keepdim)``, real result dtype
* ``cumsum``/``cumprod``/``softmax``/``log_softmax``: ``(Tensor self, int dim, dtype dtype)``

``nanmean``, ``std``, ``var_mean``, ``std_mean``, ``logsumexp``, ``count_nonzero``, ``aminmax``
and the nuclear norm are composites of those.
"""
from . import sums, scans, extremes, norms, statistics  # noqa: F401 - sums and scans import each other
from .extremes import (all, all_op, amax, amax_op, amin, amin_op, aminmax, aminmax_op, any,
                       any_op, argmax, argmax_op, argmin, argmin_op, max, max_dim_op, min,
                       min_dim_op)
from .norms import logsumexp, logsumexp_op, renorm, vector_norm_op
from .statistics import corrcoef, cov, nanquantile, quantile
from .scans import (_log_softmax_backward_data, _softmax_backward_data, cummax, cummin,
                    cumprod, cumprod_op, cumsum, cumsum_op, log_softmax,
                    log_softmax_backward_data_op, log_softmax_op, logcumsumexp, softmax,
                    softmax_backward_data_op, softmax_op)
from .sums import (count_nonzero, count_nonzero_op, mean, mean_op, nanmean, nanmean_op, nansum,
                   nansum_op, prod, prod_op, std, std_mean, std_mean_op, std_op, sum, sum_op, var,
                   var_mean, var_mean_op, var_op)

__all__ = ["sum", "mean", "prod", "nansum", "nanmean", "var", "std", "var_mean", "std_mean",
           "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "all", "any",
           "logsumexp", "count_nonzero", "cumsum", "cumprod", "softmax", "log_softmax",
           "cummax", "cummin", "logcumsumexp", "renorm", "cov", "corrcoef", "quantile",
           "nanquantile", "_softmax_backward_data", "_log_softmax_backward_data"]
