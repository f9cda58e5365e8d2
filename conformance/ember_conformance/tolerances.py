"""Tolerances and comparison: the same rules as ``ember.testing.assert_close``."""
from ember.testing import DEFAULT_TOLERANCES as DEFAULT  # noqa: F401
from ember.testing import compare, tolerance  # noqa: F401
