"""Moved beside the ops in ``ember.ops.indexing``; re-exported for the formulas still here."""
from ...ops.indexing import scatter_into_zeros  # noqa: F401
