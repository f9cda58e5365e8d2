"""Re-exports of ``ember.ops._grad`` for the formulas not yet moved beside their ops."""
from ...ops._grad import (cast, conj, expand_to, expandable, keep_where,  # noqa: F401
                          mask_fill_zero, ones, sum_to, unsqueeze_dims, zeros, zeros_like)
from ...ops.factories import full_op  # noqa: F401
